"""Type stubs for ``udt``."""

from typing import Optional, Tuple, Union

from . import asyncio as asyncio
from ._errors import (
    addresserror as addresserror,
    connectionlost as connectionlost,
    error as error,
    gaierror as gaierror,
    noserver as noserver,
    refused as refused,
    timeout as timeout,
    wouldblock as wouldblock,
)
from ._udt import *  # noqa: F401,F403
from ._udt import Address, socket

__version__: str

def create_connection(
    address: Tuple[str, int],
    timeout: Optional[float] = ...,
    source_address: Optional[Address] = None,
    *,
    type: int = ...,
) -> socket: ...
def create_server(
    address: Address,
    *,
    family: int = ...,
    type: int = ...,
    backlog: Optional[int] = None,
    reuse_addr: bool = True,
) -> socket: ...
