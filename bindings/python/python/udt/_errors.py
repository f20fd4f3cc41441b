"""The exceptions of the ``udt`` package.

Every one is a :class:`udt.error`, an :class:`OSError` whose ``errno`` is UDT4's error code
(major * 1000 + minor: 1001 no server, 1002 rejected, 2001 connection lost, 5004 closed
socket, 6003 timeout, ...) and whose ``strerror`` says what happened. ``os_errno`` holds the
system's ``errno`` when a system call failed underneath (else ``None``).

The subclasses also derive from the built-in exception Python's ``socket`` module raises in
the same situation, so ``except TimeoutError`` or ``except ConnectionRefusedError`` work as
they do with TCP sockets.
"""

import socket as _socket

__all__ = [
    "error",
    "timeout",
    "refused",
    "noserver",
    "connectionlost",
    "wouldblock",
    "gaierror",
    "addresserror",
]


class error(OSError):
    """A UDT error: ``errno`` is UDT4's error code, ``strerror`` the message."""

    #: The system ``errno`` behind the failure, if a system call failed.
    os_errno = None

    @property
    def code(self):
        """UDT4's error code (the same as ``errno``)."""
        return self.errno


class timeout(error, TimeoutError):
    """A blocking call ran out of time (6003), or a connection was not set up in time."""


class refused(error, ConnectionRefusedError):
    """The peer rejected the connection (1002, ``ECONNREJ``)."""


class noserver(refused, timeout):
    """Nobody answered the connection request within UDT's connect timeout (1001,
    ``ENOSERVER``). Over UDP there is no "connection refused" from the peer's kernel: an
    absent server looks like silence, so this is both a :class:`refused` and a
    :class:`timeout`."""


class connectionlost(error, ConnectionResetError):
    """The connection broke: the peer closed it or stopped answering (2001)."""


class wouldblock(error, BlockingIOError):
    """A non-blocking call would have had to wait (6001 send, 6002 receive/accept/connect)."""


class gaierror(error, _socket.gaierror):
    """A host name could not be resolved to an address of the socket's family (5003)."""


class addresserror(error, TypeError, ValueError, OverflowError):
    """A malformed address: not a ``(host, port)`` tuple, a port outside 0-65535, a
    family that does not match the socket's (5003). Also a ``TypeError``, ``ValueError``
    and ``OverflowError``, the exceptions Python's ``socket`` raises for these mistakes."""


# Shown as `udt.timeout` and so on in tracebacks and help(), where users find them.
for _cls in (error, timeout, refused, noserver, connectionlost, wouldblock, gaierror, addresserror):
    _cls.__module__ = "udt"
del _cls
