"""udt.asyncio: streams over UDT in one event loop, without a thread per connection."""

import asyncio
import hashlib
import os
import threading

import pytest

import udt
import udt.asyncio as uasyncio


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_echo_server_with_many_clients():
    async def handle(reader, writer):
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.close()
        await writer.wait_closed()

    async def client(port, i):
        reader, writer = await uasyncio.open_connection("127.0.0.1", port)
        assert writer.get_extra_info("peername") == ("127.0.0.1", port)
        assert isinstance(writer.get_extra_info("socket"), udt.socket)
        payload = (b"client %d " % i) * 1000
        writer.write(payload)
        await writer.drain()
        got = await reader.readexactly(len(payload))
        writer.close()
        await writer.wait_closed()
        return got == payload

    async def main():
        threads_before = threading.active_count()
        server = await uasyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            results = await asyncio.gather(*(client(port, i) for i in range(10)))
        assert all(results)
        # UDT's own I/O threads aside (one per UDP port), no thread per connection.
        assert threading.active_count() <= threads_before + 12

    run(main())


def test_large_transfer_through_streams():
    size = 32 * 1024 * 1024
    data = os.urandom(size)
    digest = hashlib.sha256(data).hexdigest()

    async def main():
        done = asyncio.get_running_loop().create_future()

        async def handle(reader, writer):
            h = hashlib.sha256()
            n = 0
            while True:
                chunk = await reader.read(1 << 20)
                if not chunk:
                    break
                h.update(chunk)
                n += len(chunk)
            done.set_result((n, h.hexdigest()))
            writer.close()

        server = await uasyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await uasyncio.open_connection("127.0.0.1", port)
        for i in range(0, size, 1 << 22):
            writer.write(data[i:i + (1 << 22)])
            await writer.drain()
        writer.close()
        await writer.wait_closed()
        n, got = await done
        server.close()
        await server.wait_closed()
        assert n == size and got == digest

    run(main(), timeout=120)


def test_low_level_sock_functions_and_messages():
    async def main():
        listener = udt.socket(udt.AF_INET, udt.SOCK_DGRAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        accept = asyncio.ensure_future(uasyncio.sock_accept(listener))
        client = await uasyncio.connect("127.0.0.1", listener.getsockname()[1], type=udt.SOCK_DGRAM)
        conn, addr = await accept
        assert addr[1] == client.getsockname()[1]
        recv = asyncio.ensure_future(uasyncio.sock_recvmsg(conn, 100_000))
        await asyncio.sleep(0.05)
        assert not recv.done()  # waits in the loop, which keeps running
        await uasyncio.sock_sendmsg(client, b"a" * 50_000)
        assert await recv == b"a" * 50_000
        await uasyncio.sock_sendmsg(client, b"second", -1, True)
        assert await uasyncio.sock_recvmsg(conn, 10) == b"second"
        for s in (client, conn, listener):
            s.close()

        stream_l = udt.create_server(("127.0.0.1", 0))
        accept = asyncio.ensure_future(uasyncio.sock_accept(stream_l))
        s = udt.socket()
        await uasyncio.sock_connect(s, stream_l.getsockname())
        c, _ = await accept
        await uasyncio.sock_sendall(s, b"x" * 3_000_000)
        buf = bytearray(1 << 20)
        n = 0
        while n < 3_000_000:
            n += await uasyncio.sock_recv_into(c, buf)
        await uasyncio.sock_sendall(c, b"pong")
        assert await uasyncio.sock_recv(s, 10) == b"pong"
        for x in (s, c, stream_l):
            x.close()

    run(main())


def test_connection_errors_in_asyncio():
    async def main():
        with pytest.raises(ConnectionRefusedError):
            port = udt.socket()
            port.bind(("127.0.0.1", 0))
            free = port.getsockname()[1]
            port.close()
            await uasyncio.open_connection("127.0.0.1", free)
        with pytest.raises(udt.gaierror):
            await uasyncio.open_connection("no-such-host.invalid", 9000)

    run(main())


def test_peer_close_gives_eof_and_cancellation_is_clean():
    async def main():
        conns = []

        async def handle(reader, writer):
            conns.append(writer)

        server = await uasyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await uasyncio.open_connection("127.0.0.1", port)
        pending = asyncio.ensure_future(reader.read(10))
        await asyncio.sleep(0.05)
        while not conns:
            await asyncio.sleep(0.01)
        conns[0].close()
        assert await pending == b""
        # A cancelled wait leaves nothing registered with the loop's poller.
        listener = udt.create_server(("127.0.0.1", 0))
        accept = asyncio.ensure_future(uasyncio.sock_accept(listener))
        s = await uasyncio.connect("127.0.0.1", listener.getsockname()[1])
        c, _ = await accept
        blocked = asyncio.ensure_future(uasyncio.sock_recv(c, 1))
        await asyncio.sleep(0.05)
        assert not blocked.done()
        reactor = uasyncio._reactor()
        assert c in reactor._by_sock
        blocked.cancel()
        with pytest.raises(asyncio.CancelledError):
            await blocked
        assert c not in reactor._by_sock
        for x in (s, c, listener):
            x.close()
        writer.close()
        server.close()
        await server.wait_closed()

    run(main())
