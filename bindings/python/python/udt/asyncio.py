"""asyncio support: UDT connections as ``asyncio`` streams, without a thread per connection.

Each event loop gets one :class:`udt.Poller` (UDT4's epoll). The poller's readiness
descriptor - readable exactly while one of its sockets is ready - is watched with
``loop.add_reader``, so any number of UDT sockets cost the loop one descriptor, and every
socket operation here is a non-blocking call that never waits::

    import asyncio, udt.asyncio

    async def handle(reader, writer):
        data = await reader.read(65536)
        writer.write(data)
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    async def main():
        server = await udt.asyncio.start_server(handle, "127.0.0.1", 9000)
        reader, writer = await udt.asyncio.open_connection("127.0.0.1", 9000)
        ...

``open_connection`` and ``start_server`` give the standard :class:`asyncio.StreamReader` and
:class:`asyncio.StreamWriter`. The ``sock_*`` coroutines mirror ``loop.sock_*`` for code that
works with :class:`udt.socket` objects directly (message sockets included).

UDT has no half-close, so ``writer.can_write_eof()`` is False. Closing a writer waits (without
blocking the loop) until the peer has acknowledged what was written, at most the socket's
``UDT_LINGER`` time, before the connection is closed: an ``await writer.wait_closed()``
followed by the end of the program loses nothing.
"""

import asyncio as _asyncio
import time as _time
import weakref as _weakref

from . import _udt
from ._errors import error, gaierror, wouldblock

__all__ = [
    "open_connection",
    "start_server",
    "connect",
    "sock_connect",
    "sock_accept",
    "sock_recv",
    "sock_recv_into",
    "sock_sendall",
    "sock_sendmsg",
    "sock_recvmsg",
    "Server",
]

_IN = _udt.UDT_EPOLL_IN
_OUT = _udt.UDT_EPOLL_OUT
_ERR = _udt.UDT_EPOLL_ERR
_DEFAULT_LIMIT = 2**16


class _Registration:
    __slots__ = ("sock", "token", "reader", "writer", "events")

    def __init__(self, sock, token):
        self.sock = sock
        self.token = token
        self.reader = None
        self.writer = None
        self.events = 0


class _Reactor:
    """One per event loop: a :class:`udt.Poller` whose descriptor the loop watches, and the
    callbacks waiting on each socket (``add_reader``/``add_writer``, as the loop offers for
    file descriptors). A socket is registered with the poller only while someone waits on
    it, for just the events they wait for: the poller is level-triggered, and a writable
    socket nobody writes to would keep the descriptor readable."""

    def __init__(self, loop):
        self._loop = loop
        self._poller = _udt.Poller()
        self._next_token = 0
        self._by_sock = {}
        self._by_token = {}
        loop.add_reader(self._poller.fileno(), self._on_ready)

    def _registration(self, sock):
        reg = self._by_sock.get(sock)
        if reg is None:
            reg = _Registration(sock, self._next_token)
            self._next_token += 1
            self._by_sock[sock] = reg
            self._by_token[reg.token] = reg
        return reg

    def _update(self, reg):
        want = (_IN if reg.reader else 0) | (_OUT if reg.writer else 0)
        if want == reg.events:
            return
        try:
            if not want:
                self._poller.unregister(reg.sock, reg.token)
                del self._by_sock[reg.sock]
                del self._by_token[reg.token]
            elif not reg.events:
                self._poller.register(reg.sock, reg.token, want | _ERR)
            else:
                self._poller.modify(reg.token, want | _ERR)
        except error:
            # A closed socket: forget it; its callbacks are not called again.
            self._by_sock.pop(reg.sock, None)
            self._by_token.pop(reg.token, None)
            reg.events = 0
            if want:
                raise
            return
        reg.events = want

    def add_reader(self, sock, callback):
        reg = self._registration(sock)
        reg.reader = callback
        self._update(reg)

    def remove_reader(self, sock):
        reg = self._by_sock.get(sock)
        if reg is not None:
            reg.reader = None
            self._update(reg)

    def add_writer(self, sock, callback):
        reg = self._registration(sock)
        reg.writer = callback
        self._update(reg)

    def remove_writer(self, sock):
        reg = self._by_sock.get(sock)
        if reg is not None:
            reg.writer = None
            self._update(reg)

    def _on_ready(self):
        for token, events in self._poller.wait(0):
            reg = self._by_token.get(token)
            if reg is None:
                continue
            for wanted, cb in ((_IN | _ERR, reg.reader), (_OUT | _ERR, reg.writer)):
                if cb is not None and events & wanted:
                    try:
                        cb()
                    except (SystemExit, KeyboardInterrupt):
                        raise
                    except BaseException as exc:  # noqa: BLE001 - reported like loop callbacks
                        self._loop.call_exception_handler(
                            {"message": "udt.asyncio callback failed", "exception": exc}
                        )

    async def wait(self, sock, write):
        """Waits until ``sock`` is readable (or writable with ``write``) or has ended."""
        fut = self._loop.create_future()

        def ready():
            if not fut.done():
                fut.set_result(None)

        add, remove = (self.add_writer, self.remove_writer) if write else (self.add_reader, self.remove_reader)
        add(sock, ready)
        try:
            await fut
        finally:
            remove(sock)


_reactors = _weakref.WeakKeyDictionary()


def _reactor(loop=None):
    loop = loop or _asyncio.get_running_loop()
    r = _reactors.get(loop)
    if r is None:
        r = _reactors[loop] = _Reactor(loop)
    return r


# --- loop.sock_* for UDT sockets ---------------------------------------------------------


async def sock_connect(sock, address):
    """Connects ``sock`` (made non-blocking) to ``address``, waiting in the event loop."""
    sock.setblocking(False)
    try:
        sock.connect(address)
        return
    except wouldblock:
        pass
    reactor = _reactor()
    while True:
        if sock._connect_result():
            return
        await reactor.wait(sock, write=True)


async def sock_accept(sock):
    """``(conn, address)`` from listening ``sock``; ``conn`` is non-blocking."""
    sock.setblocking(False)
    reactor = _reactor()
    while True:
        try:
            conn, addr = sock.accept()
        except wouldblock:
            await reactor.wait(sock, write=False)
            continue
        conn.setblocking(False)
        return conn, addr


async def sock_recv(sock, nbytes):
    """Up to ``nbytes`` bytes from ``sock``; ``b""`` at the end of the stream."""
    sock.setblocking(False)
    reactor = _reactor()
    while True:
        try:
            return sock.recv(nbytes)
        except wouldblock:
            await reactor.wait(sock, write=False)


async def sock_recv_into(sock, buf):
    """Receives into ``buf``; returns the count (0 at the end of the stream)."""
    sock.setblocking(False)
    reactor = _reactor()
    while True:
        try:
            return sock.recv_into(buf)
        except wouldblock:
            await reactor.wait(sock, write=False)


async def sock_sendall(sock, data):
    """Queues every byte of ``data`` on ``sock``."""
    sock.setblocking(False)
    reactor = _reactor()
    view = memoryview(data).cast("B")
    while view:
        try:
            n = sock.send(view)
        except wouldblock:
            n = 0
        view = view[n:]
        if view:
            await reactor.wait(sock, write=True)


async def sock_sendmsg(sock, data, ttl_ms=-1, in_order=False):
    """Sends one message on a ``SOCK_DGRAM`` socket; returns its length."""
    sock.setblocking(False)
    reactor = _reactor()
    while True:
        try:
            return sock.sendmsg(data, ttl_ms, in_order)
        except wouldblock:
            await reactor.wait(sock, write=True)


async def sock_recvmsg(sock, bufsize):
    """The next whole message of a ``SOCK_DGRAM`` socket; ``b""`` once the connection ended."""
    sock.setblocking(False)
    reactor = _reactor()
    while True:
        try:
            return sock.recvmsg(bufsize)
        except wouldblock:
            await reactor.wait(sock, write=False)


async def connect(host, port, *, type=_udt.SOCK_STREAM, local_addr=None):
    """A connected non-blocking :class:`udt.socket` to ``host``:``port``, trying each of the
    host's addresses in turn (resolved with ``loop.getaddrinfo``, so the loop never waits)."""
    import socket as _pysocket

    loop = _asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=_pysocket.SOCK_DGRAM)
    except _pysocket.gaierror as e:
        raise gaierror(5003, "cannot resolve %r: %s" % (host, e.strerror)) from e
    last = None
    for fam, _, _, _, sa in infos:
        fam = _udt.AF_INET6 if fam == _pysocket.AF_INET6 else _udt.AF_INET
        sock = _udt.socket(fam, type)
        try:
            if local_addr is not None:
                sock.bind(local_addr)
            await sock_connect(sock, sa)
            return sock
        except error as e:
            last = e
            sock.close()
        except BaseException:
            sock.close()
            raise
    raise last if last is not None else gaierror(5003, "no address for %r" % (host,))


# --- transports and streams --------------------------------------------------------------


class _Transport(_asyncio.Transport):
    """An asyncio transport over a connected non-blocking UDT stream socket."""

    max_size = 256 * 1024

    def __init__(self, loop, sock, protocol, waiter=None, server=None):
        super().__init__({})
        self._loop = loop
        self._reactor = _reactor(loop)
        self._sock = sock
        self._protocol = protocol
        self._server = server
        self._buffer = bytearray()
        self._closing = False
        self._reading = True
        self._conn_lost = 0
        self._protocol_paused = False
        self._high = 4 * 2**16
        self._low = 2**16
        self._extra["socket"] = sock
        for key, get in (("sockname", sock.getsockname), ("peername", sock.getpeername)):
            try:
                self._extra[key] = get()
            except error:
                self._extra[key] = None
        sock.setblocking(False)
        if server is not None:
            server._attach()
        loop.call_soon(self._protocol.connection_made, self)
        loop.call_soon(self._start_reading)
        if waiter is not None:
            loop.call_soon(lambda: waiter.done() or waiter.set_result(None))

    def __repr__(self):
        return "<udt.asyncio transport %r>" % (self._sock,)

    # Reading.

    def _start_reading(self):
        if self._reading and not self._closing:
            self._reactor.add_reader(self._sock, self._read_ready)

    def _read_ready(self):
        if self._conn_lost:
            return
        try:
            data = self._sock.recv(self.max_size)
        except wouldblock:
            return
        except error as exc:
            self._fatal_error(exc)
            return
        if data:
            self._protocol.data_received(data)
            return
        self._reactor.remove_reader(self._sock)
        if not self._protocol.eof_received():
            self.close()

    def is_reading(self):
        return self._reading and not self._closing

    def pause_reading(self):
        if self._closing or not self._reading:
            return
        self._reading = False
        self._reactor.remove_reader(self._sock)

    def resume_reading(self):
        if self._closing or self._reading:
            return
        self._reading = True
        self._start_reading()

    # Writing.

    def write(self, data):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("data argument must be a bytes-like object, not %r" % type(data).__name__)
        if not data or self._conn_lost:
            return
        if self._closing:
            raise RuntimeError("write() after close()")
        if not self._buffer:
            try:
                n = self._sock.send(data)
            except wouldblock:
                n = 0
            except error as exc:
                self._fatal_error(exc)
                return
            data = memoryview(data).cast("B")[n:]
            if not data:
                return
            self._reactor.add_writer(self._sock, self._write_ready)
        self._buffer.extend(data)
        self._maybe_pause_protocol()

    def _write_ready(self):
        if self._conn_lost:
            return
        try:
            n = self._sock.send(self._buffer)
        except wouldblock:
            return
        except error as exc:
            self._reactor.remove_writer(self._sock)
            self._buffer.clear()
            self._fatal_error(exc)
            return
        del self._buffer[:n]
        self._maybe_resume_protocol()
        if not self._buffer:
            self._reactor.remove_writer(self._sock)
            if self._closing:
                self._loop.create_task(self._linger_then_lose(None))

    def writelines(self, list_of_data):
        self.write(b"".join(list_of_data))

    def can_write_eof(self):
        # UDT has no half-close.
        return False

    def write_eof(self):
        raise NotImplementedError("UDT connections cannot be half-closed")

    def get_write_buffer_size(self):
        return len(self._buffer)

    def get_write_buffer_limits(self):
        return (self._low, self._high)

    def set_write_buffer_limits(self, high=None, low=None):
        if high is None:
            high = 4 * 2**16 if low is None else 4 * low
        if low is None:
            low = high // 4
        if not high >= low >= 0:
            raise ValueError("high (%r) must be >= low (%r) must be >= 0" % (high, low))
        self._high, self._low = high, low
        self._maybe_pause_protocol()

    def _maybe_pause_protocol(self):
        if len(self._buffer) > self._high and not self._protocol_paused:
            self._protocol_paused = True
            self._protocol.pause_writing()

    def _maybe_resume_protocol(self):
        if self._protocol_paused and len(self._buffer) <= self._low:
            self._protocol_paused = False
            self._protocol.resume_writing()

    # Closing.

    def is_closing(self):
        return self._closing

    def close(self):
        if self._closing:
            return
        self._closing = True
        self._reactor.remove_reader(self._sock)
        if not self._buffer:
            self._conn_lost += 1
            self._loop.create_task(self._linger_then_lose(None))

    def abort(self):
        self._force_close(None)

    def _fatal_error(self, exc):
        self._force_close(exc)

    def _force_close(self, exc):
        if self._conn_lost:
            return
        if self._buffer:
            self._buffer.clear()
            self._reactor.remove_writer(self._sock)
        if not self._closing:
            self._closing = True
            self._reactor.remove_reader(self._sock)
        self._conn_lost += 1
        self._loop.call_soon(self._call_connection_lost, exc)

    async def _linger_then_lose(self, exc):
        """Waits until the peer acknowledged everything sent (UDT_SNDDATA reaches 0), at most
        the linger time, then reports the connection lost and closes the socket."""
        if not self._conn_lost:
            self._conn_lost += 1
        try:
            onoff, seconds = self._sock.getsockopt(_udt.UDT_LINGER)
            deadline = _time.monotonic() + (seconds if onoff else 0)
            nap = 0.001
            while (
                _time.monotonic() < deadline
                and self._sock.getsockstate() == _udt.CONNECTED
                and self._sock.getsockopt(_udt.UDT_SNDDATA) > 0
            ):
                await _asyncio.sleep(nap)
                nap = min(nap * 2, 0.02)
        except error:
            pass
        self._call_connection_lost(exc)

    def _call_connection_lost(self, exc):
        try:
            self._protocol.connection_lost(exc)
        finally:
            self._reactor.remove_reader(self._sock)
            self._reactor.remove_writer(self._sock)
            try:
                self._sock.close()
            except error:
                pass
            if self._server is not None:
                self._server._detach()
                self._server = None


class Server(_asyncio.AbstractServer):
    """A listening UDT socket serving connections in the event loop, as returned by
    :func:`start_server` (the interface of :class:`asyncio.Server`)."""

    def __init__(self, loop, sock, protocol_factory):
        self._loop = loop
        self._sock = sock
        self._factory = protocol_factory
        self._reactor = _reactor(loop)
        self._serving = False
        self._active = 0
        self._waiters = []
        self._serve_forever_fut = None
        sock.setblocking(False)

    def __repr__(self):
        return "<udt.asyncio.Server %r>" % (self._sock,)

    def _attach(self):
        self._active += 1

    def _detach(self):
        self._active -= 1
        if self._active == 0 and self._sock is None:
            self._wakeup()

    def _wakeup(self):
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    def _accept_ready(self):
        for _ in range(128):
            try:
                conn, _addr = self._sock.accept()
            except wouldblock:
                return
            except error as exc:
                self._loop.call_exception_handler(
                    {"message": "udt.asyncio accept failed", "exception": exc, "socket": self._sock}
                )
                return
            try:
                protocol = self._factory()
            except BaseException:
                conn.close()
                raise
            _Transport(self._loop, conn, protocol, server=self)

    @property
    def sockets(self):
        return () if self._sock is None else (self._sock,)

    def get_loop(self):
        return self._loop

    def is_serving(self):
        return self._serving

    async def start_serving(self):
        if self._serving or self._sock is None:
            return
        self._serving = True
        self._reactor.add_reader(self._sock, self._accept_ready)

    async def serve_forever(self):
        if self._serve_forever_fut is not None:
            raise RuntimeError("server is already being awaited on serve_forever()")
        if self._sock is None:
            raise RuntimeError("server is closed")
        await self.start_serving()
        self._serve_forever_fut = self._loop.create_future()
        try:
            await self._serve_forever_fut
        except _asyncio.CancelledError:
            try:
                self.close()
                await self.wait_closed()
            finally:
                raise
        finally:
            self._serve_forever_fut = None

    def close(self):
        sock, self._sock = self._sock, None
        if sock is None:
            return
        self._serving = False
        self._reactor.remove_reader(sock)
        sock.close()
        if self._serve_forever_fut is not None and not self._serve_forever_fut.done():
            self._serve_forever_fut.cancel()
        if self._active == 0:
            self._wakeup()

    def close_clients(self):
        """Present for the asyncio.Server interface; connections close themselves."""

    async def wait_closed(self):
        """Waits until the server is closed and its connections have ended."""
        if self._sock is None and self._active == 0:
            return
        w = self._loop.create_future()
        self._waiters.append(w)
        await w


async def open_connection(host=None, port=None, *, limit=_DEFAULT_LIMIT, local_addr=None):
    """Connects to ``host``:``port`` over UDT; returns ``(reader, writer)``, an
    :class:`asyncio.StreamReader` and :class:`asyncio.StreamWriter`."""
    loop = _asyncio.get_running_loop()
    sock = await connect(host, port, local_addr=local_addr)
    reader = _asyncio.StreamReader(limit=limit, loop=loop)
    protocol = _asyncio.StreamReaderProtocol(reader, loop=loop)
    waiter = loop.create_future()
    transport = _Transport(loop, sock, protocol, waiter)
    try:
        await waiter
    except BaseException:
        transport.close()
        raise
    writer = _asyncio.StreamWriter(transport, protocol, reader, loop)
    return reader, writer


async def start_server(client_connected_cb, host=None, port=None, *, limit=_DEFAULT_LIMIT,
                       family=_udt.AF_INET, backlog=100, start_serving=True):
    """Listens on ``host``:``port`` over UDT and calls ``client_connected_cb(reader, writer)``
    (a function or a coroutine function) for each connection; returns a :class:`Server`."""
    loop = _asyncio.get_running_loop()
    sock = _udt.socket(family, _udt.SOCK_STREAM)
    try:
        sock.bind((host or "", port or 0))
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise

    def factory():
        reader = _asyncio.StreamReader(limit=limit, loop=loop)
        return _asyncio.StreamReaderProtocol(reader, client_connected_cb, loop=loop)

    server = Server(loop, sock, factory)
    if start_serving:
        await server.start_serving()
    return server
