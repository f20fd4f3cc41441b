"""UDT sockets for Python, with the feel of the ``socket`` module.

UDT is a reliable transport over UDP for bulk data on fast long-distance networks. This
package is a thin layer over the Rust implementation ``udt`` (wire-compatible with UDT4
4.11)::

    import udt

    with udt.create_server(("127.0.0.1", 9000)) as server:
        conn, peer = server.accept()
        with conn:
            data = conn.recv(65536)

    with udt.create_connection(("127.0.0.1", 9000)) as s:
        s.sendall(b"hello over UDT")

``udt.socket(family, type)`` makes a socket: ``SOCK_STREAM`` for a byte stream,
``SOCK_DGRAM`` for UDT's message mode (``sendmsg``/``recvmsg``). Options are UDT4's
(``udt.UDT_MSS``, ``udt.UDT_CC``, ...), errors are :class:`udt.error` (an ``OSError`` with
UDT4's code in ``errno``), and ``udt.asyncio`` has ``open_connection``/``start_server``.
"""

from . import _errors
from ._errors import (
    error,
    timeout,
    refused,
    noserver,
    connectionlost,
    wouldblock,
    gaierror,
    addresserror,
)
from . import _udt
from ._udt import *  # noqa: F401,F403  (socket, PerfMon, Poller, constants)
from ._udt import socket, PerfMon, Poller, getdefaulttimeout, setdefaulttimeout
from ._udt import congestion_controls
from ._udt import AF_INET, AF_INET6, SOCK_STREAM, SOCK_DGRAM

import socket as _pysocket

__version__ = "0.1.0"

_GLOBAL_DEFAULT_TIMEOUT = object()


def create_connection(address, timeout=_GLOBAL_DEFAULT_TIMEOUT, source_address=None, *, type=SOCK_STREAM):
    """Connect to ``address`` (``(host, port)``) and return the connected :class:`socket`.

    The host may be a name: each of its IPv4 and IPv6 addresses is tried in turn, and the
    last error is raised if none answers. ``timeout`` (seconds) bounds each attempt and stays
    the socket's timeout, as in :func:`socket.create_connection`; by default the socket gets
    :func:`getdefaulttimeout`. ``source_address`` binds the local end first. ``type`` may be
    ``SOCK_DGRAM`` for a message connection.
    """
    host, port = address
    try:
        infos = _pysocket.getaddrinfo(host, port, 0, _pysocket.SOCK_DGRAM)
    except _pysocket.gaierror as e:
        raise gaierror(5003, "cannot resolve %r: %s" % (host, e.strerror)) from e
    last = None
    for fam, _, _, _, sa in infos:
        fam = AF_INET6 if fam == _pysocket.AF_INET6 else AF_INET
        sock = socket(fam, type)
        try:
            if timeout is not _GLOBAL_DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            if source_address is not None:
                sock.bind(source_address)
            sock.connect(sa)
            return sock
        except error as e:
            last = e
            sock.close()
        except BaseException:
            sock.close()
            raise
    if last is None:
        raise gaierror(5003, "getaddrinfo returned no address for %r" % (host,))
    raise last


def create_server(address, *, family=AF_INET, type=SOCK_STREAM, backlog=None, reuse_addr=True):
    """Return a :class:`socket` bound to ``address`` and listening, as
    :func:`socket.create_server` does. ``reuse_addr`` is UDT's ``UDT_REUSEADDR`` (on by
    default in UDT): other UDT sockets of this process may share the UDP port."""
    sock = socket(family, type)
    try:
        sock.setsockopt(UDT_REUSEADDR, bool(reuse_addr))  # noqa: F405
        sock.bind(address)
        sock.listen(backlog)
        return sock
    except BaseException:
        sock.close()
        raise


def __getattr__(name):
    # `udt.asyncio` is imported on first use, so `import udt` does not pay for asyncio.
    if name == "asyncio":
        import importlib

        return importlib.import_module(".asyncio", __name__)
    raise AttributeError("module 'udt' has no attribute %r" % (name,))
