"""Type stubs for the extension module ``udt._udt`` (re-exported by ``udt``)."""

import os
from typing import IO, Dict, List, Optional, Tuple, Union


ReadableBuffer = Union[bytes, bytearray, memoryview]
WriteableBuffer = Union[bytearray, memoryview]
Address = Union[Tuple[str, int], Tuple[str, int, int, int]]
FileArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]", IO[bytes]]
OptionValue = Union[int, bool, str, None, float, Tuple[int, int]]

AF_INET: int
AF_INET6: int
SOCK_STREAM: int
SOCK_DGRAM: int

UDT_MSS: int
UDT_SNDSYN: int
UDT_RCVSYN: int
UDT_CC: int
UDT_FC: int
UDT_SNDBUF: int
UDT_RCVBUF: int
UDT_LINGER: int
UDP_SNDBUF: int
UDP_RCVBUF: int
UDT_MAXMSG: int
UDT_MSGTTL: int
UDT_RENDEZVOUS: int
UDT_SNDTIMEO: int
UDT_RCVTIMEO: int
UDT_REUSEADDR: int
UDT_MAXBW: int
UDT_STATE: int
UDT_EVENT: int
UDT_SNDDATA: int
UDT_RCVDATA: int

UDT_EPOLL_IN: int
UDT_EPOLL_OUT: int
UDT_EPOLL_ERR: int

INIT: int
OPENED: int
LISTENING: int
CONNECTING: int
CONNECTED: int
BROKEN: int
CLOSING: int
CLOSED: int
NONEXIST: int

def getdefaulttimeout() -> Optional[float]:
    """The timeout new sockets get (``None``: blocking)."""

def setdefaulttimeout(timeout: Optional[float]) -> None:
    """Sets the timeout new and accepted sockets get."""

def congestion_controls() -> List[Tuple[str, str]]:
    """``[(name, description), ...]``: the algorithms ``UDT_CC`` takes by name."""

class PerfMon:
    """A connection's statistics under UDT4's ``CPerfMon`` field names."""

    fields: List[str]
    msTimeStamp: int
    pktSentTotal: int
    pktRecvTotal: int
    pktSndLossTotal: int
    pktRcvLossTotal: int
    pktRetransTotal: int
    pktSentACKTotal: int
    pktRecvACKTotal: int
    pktSentNAKTotal: int
    pktRecvNAKTotal: int
    usSndDurationTotal: int
    pktSent: int
    pktRecv: int
    pktSndLoss: int
    pktRcvLoss: int
    pktRetrans: int
    pktSentACK: int
    pktRecvACK: int
    pktSentNAK: int
    pktRecvNAK: int
    mbpsSendRate: float
    mbpsRecvRate: float
    usSndDuration: int
    usPktSndPeriod: float
    pktFlowWindow: int
    pktCongestionWindow: int
    pktFlightSize: int
    msRTT: float
    mbpsBandwidth: float
    byteAvailSndBuf: int
    byteAvailRcvBuf: int
    def as_dict(self) -> Dict[str, Union[int, float]]:
        """Every field as a dict, in UDT4's order."""

class socket:
    """A UDT socket, made like Python's: ``udt.socket(udt.AF_INET, udt.SOCK_STREAM)``.

    ``SOCK_STREAM`` carries bytes, ``SOCK_DGRAM`` whole messages. Blocking calls release the
    GIL and Ctrl-C interrupts them; errors are :class:`udt.error` and its subclasses.
    """

    def __init__(self, family: int = ..., type: int = ..., proto: int = 0) -> None: ...
    @property
    def family(self) -> int: ...
    @property
    def type(self) -> int: ...
    @property
    def proto(self) -> int: ...
    @property
    def timeout(self) -> Optional[float]: ...
    @property
    def closed(self) -> bool: ...
    def bind(self, address: Address) -> None:
        """Binds to a local UDP address; port 0 picks a free port."""
    def listen(self, backlog: Optional[int] = None) -> None:
        """Accepts connections (the socket must be bound)."""
    def accept(self) -> Tuple["socket", Address]:
        """Waits for a connection; returns ``(socket, address)``."""
    def connect(self, address: Address) -> None:
        """Connects (or meets a rendezvous peer)."""
    def connect_ex(self, address: Address) -> int:
        """As ``connect``; returns 0 or UDT4's error code."""
    def close(self) -> None:
        """Closes; in blocking mode waits for what was sent to be acknowledged (≤ linger)."""
    def getsockname(self) -> Address: ...
    def getpeername(self) -> Address: ...
    def send(self, data: ReadableBuffer, flags: int = 0) -> int:
        """Queues bytes; returns how many were taken."""
    def sendall(self, data: ReadableBuffer, flags: int = 0) -> None:
        """Queues every byte."""
    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        """Up to ``bufsize`` bytes; ``b""`` at the end of the stream."""
    def recv_into(self, buffer: WriteableBuffer, nbytes: int = 0, flags: int = 0) -> int:
        """Receives into ``buffer``; returns the count (0 at the end)."""
    def sendmsg(self, data: ReadableBuffer, ttl_ms: int = -1, in_order: bool = False) -> int:
        """Sends one message (SOCK_DGRAM); returns its length."""
    def recvmsg(self, bufsize: int) -> bytes:
        """The next whole message; ``b""`` once the connection ended."""
    def recvmsg_into(self, buffer: WriteableBuffer) -> int:
        """As ``recvmsg``, into ``buffer``."""
    def sendfile(self, file: FileArg, offset: int = 0, count: Optional[int] = None) -> int:
        """Sends ``count`` bytes of a file (path or file object) from ``offset``."""
    def recvfile(self, file: FileArg, offset: int = 0, count: Optional[int] = None) -> int:
        """Receives exactly ``count`` bytes into a file at ``offset`` (``count`` is required)."""
    def settimeout(self, value: Optional[float]) -> None: ...
    def gettimeout(self) -> Optional[float]: ...
    def setblocking(self, flag: bool) -> None: ...
    def getblocking(self) -> bool: ...
    def setsockopt(self, *args: OptionValue) -> None:
        """``setsockopt(optname, value)`` or ``setsockopt(level, optname, value)``."""
    def getsockopt(self, *args: int) -> OptionValue:
        """``getsockopt(optname)`` or ``getsockopt(level, optname)``."""
    def perfmon(self, clear: bool = False) -> PerfMon:
        """Statistics under UDT4's names."""
    def getsockstate(self) -> int:
        """UDT4's state (``udt.CONNECTED``, ...)."""
    def __enter__(self) -> "socket": ...
    def __exit__(self, *args: object) -> bool: ...

class Poller:
    """UDT4's epoll over UDT sockets, with a readiness descriptor for event loops."""

    def __init__(self) -> None: ...
    def fileno(self) -> int: ...
    def register(self, sock: socket, token: int, events: int = ...) -> None: ...
    def modify(self, token: int, events: int) -> None: ...
    def unregister(self, sock: socket, token: int) -> None: ...
    def wait(self, timeout: Optional[float] = None) -> List[Tuple[int, int]]: ...
    def __len__(self) -> int: ...
