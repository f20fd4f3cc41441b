"""The socket API: every method of udt.socket, its options and its statistics."""

import hashlib
import os
import threading
import time

import pytest

import udt
from conftest import LIMIT, Thread, connected_pair, pattern


def test_constants_and_construction():
    assert (udt.AF_INET, udt.AF_INET6, udt.SOCK_STREAM, udt.SOCK_DGRAM) == (2, 10, 1, 2)
    # UDT4's option numbers (udt.h).
    assert (udt.UDT_MSS, udt.UDT_SNDSYN, udt.UDT_RCVSYN, udt.UDT_CC, udt.UDT_FC) == (0, 1, 2, 3, 4)
    assert (udt.UDT_SNDBUF, udt.UDT_RCVBUF, udt.UDT_LINGER, udt.UDP_SNDBUF, udt.UDP_RCVBUF) == (5, 6, 7, 8, 9)
    assert (udt.UDT_RENDEZVOUS, udt.UDT_SNDTIMEO, udt.UDT_RCVTIMEO, udt.UDT_REUSEADDR) == (12, 13, 14, 15)
    assert (udt.UDT_MAXBW, udt.UDT_STATE, udt.UDT_EVENT, udt.UDT_SNDDATA, udt.UDT_RCVDATA) == (16, 17, 18, 19, 20)
    s = udt.socket()
    assert (s.family, s.type, s.proto) == (udt.AF_INET, udt.SOCK_STREAM, 0)
    assert s.getsockstate() == udt.INIT
    s.close()
    m = udt.socket(udt.AF_INET6, udt.SOCK_DGRAM)
    assert (m.family, m.type) == (udt.AF_INET6, udt.SOCK_DGRAM)
    m.close()
    with pytest.raises(udt.error) as e:
        udt.socket(12345)
    assert e.value.errno == 5003
    with pytest.raises(udt.error):
        udt.socket(udt.AF_INET, 99)
    with pytest.raises(udt.error):
        udt.socket(udt.AF_INET, udt.SOCK_STREAM, 6)


def test_bind_listen_accept_connect_names(pair):
    client, conn = pair
    assert client.getpeername() == ("127.0.0.1", conn.getsockname()[1])
    assert conn.getpeername()[1] == client.getsockname()[1]
    assert client.getsockstate() == udt.CONNECTED
    assert "CONNECTED" in repr(client).upper()


def test_send_recv_and_end_of_stream(pair):
    client, conn = pair
    assert client.send(b"hello") == 5
    assert client.send(b"") == 0
    client.sendall(memoryview(b"--world--")[2:-2])
    got = b""
    while len(got) < 10:
        got += conn.recv(100)
    assert got == b"helloworld"
    client.close()
    assert conn.recv(10) == b""  # the peer closed: end of stream
    assert conn.recv(10) == b""


def test_recv_into_bytearray_and_memoryview(pair):
    client, conn = pair
    client.sendall(b"abcdefgh")
    buf = bytearray(8)
    view = memoryview(buf)
    n = 0
    while n < 8:
        n += conn.recv_into(view[n:], 8 - n)
    assert bytes(buf) == b"abcdefgh"
    with pytest.raises(ValueError):
        conn.recv_into(bytearray(2), 5)
    with pytest.raises(ValueError):
        conn.recv_into(bytearray(2), -1)
    with pytest.raises(TypeError):
        conn.recv_into(b"read-only bytes")
    with pytest.raises(ValueError):
        conn.recv(-1)
    with pytest.raises(TypeError):
        client.send("a str, not bytes")


def test_large_transfer_byte_for_byte(pair):
    client, conn = pair
    size = 64 * 1024 * 1024 + 12345
    data = os.urandom(size)

    def receive():
        h = hashlib.sha256()
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        total = 0
        while True:
            n = conn.recv_into(buf)
            if n == 0:
                break
            h.update(view[:n])
            total += n
        return total, h.hexdigest()

    t = Thread(receive)
    t.start()
    client.sendall(data)
    client.close()
    total, digest = t.result(timeout=120)
    assert total == size
    assert digest == hashlib.sha256(data).hexdigest()


def test_message_boundaries(msg_pair):
    client, conn = msg_pair
    sizes = [1, 2, 1455, 1456, 1457, 5000, 100_000, 3]
    msgs = [pattern(i * 7, n) for i, n in enumerate(sizes)]
    for m in msgs:
        assert client.sendmsg(m) == len(m)
    for m in msgs:
        assert conn.recvmsg(200_000) == m
    # A message longer than the buffer is cut and its rest discarded (UDT4's recvmsg).
    client.sendmsg(b"x" * 1000)
    client.sendmsg(b"next")
    assert conn.recvmsg(10) == b"x" * 10
    assert conn.recvmsg(100) == b"next"
    buf = bytearray(16)
    client.sendmsg(b"into", 1000, True)
    assert conn.recvmsg_into(buf) == 4 and buf[:4] == b"into"
    # Stream calls on a message socket fail with UDT4's EDGRAMILL, and the reverse.
    with pytest.raises(udt.error) as e:
        client.send(b"x")
    assert e.value.errno == 5010
    client.close()
    assert conn.recvmsg(10) == b""  # the connection ended, every message read


def test_message_calls_on_stream_socket(pair):
    client, conn = pair
    with pytest.raises(udt.error) as e:
        client.sendmsg(b"x")
    assert e.value.errno == 5009


def test_ipv6_loopback():
    client, conn, listener = connected_pair(family=udt.AF_INET6, host="::1")
    try:
        assert client.getpeername()[:2] == ("::1", listener.getsockname()[1])
        assert len(client.getpeername()) == 4
        client.sendall(b"over ipv6")
        assert conn.recv(100) == b"over ipv6"
    finally:
        for s in (client, conn, listener):
            s.close()


def test_context_manager_and_double_close():
    with udt.socket() as s:
        s.bind(("127.0.0.1", 0))
        assert not s.closed
    assert s.closed
    s.close()  # closing again does nothing
    assert s.getsockstate() == udt.CLOSED
    # Subclasses and weak references work, as with socket.socket.
    import weakref

    class Mine(udt.socket):
        pass

    m = Mine(udt.AF_INET, udt.SOCK_DGRAM)
    assert isinstance(m, udt.socket) and m.type == udt.SOCK_DGRAM
    assert weakref.ref(m)() is m
    m.close()


def test_timeouts_and_blocking_modes(pair):
    client, conn = pair
    assert udt.getdefaulttimeout() is None
    conn.settimeout(0.2)
    assert conn.gettimeout() == pytest.approx(0.2)
    assert conn.timeout == pytest.approx(0.2)
    t0 = time.monotonic()
    with pytest.raises(udt.timeout) as e:
        conn.recv(10)
    assert 0.15 < time.monotonic() - t0 < 2.0
    assert e.value.errno == 6003
    assert isinstance(e.value, TimeoutError) and isinstance(e.value, OSError)
    conn.setblocking(False)
    assert conn.gettimeout() == 0.0 and not conn.getblocking()
    with pytest.raises(BlockingIOError) as e:
        conn.recv(10)
    assert isinstance(e.value, udt.wouldblock) and e.value.errno == 6002
    conn.setblocking(True)
    assert conn.gettimeout() is None and conn.getblocking()
    with pytest.raises(ValueError):
        conn.settimeout(-1)
    # UDT4's per-direction options drive the same modes.
    conn.setsockopt(udt.UDT_RCVTIMEO, 100)
    assert conn.getsockopt(udt.UDT_RCVTIMEO) == 100
    with pytest.raises(udt.timeout):
        conn.recv(10)
    conn.setsockopt(udt.UDT_RCVSYN, False)
    assert conn.getsockopt(udt.UDT_RCVSYN) is False
    with pytest.raises(udt.wouldblock):
        conn.recv(10)
    assert conn.getsockopt(udt.UDT_SNDSYN) is True


def test_accept_timeout_and_nonblocking_accept():
    with udt.create_server(("127.0.0.1", 0)) as srv:
        srv.settimeout(0.1)
        with pytest.raises(udt.timeout):
            srv.accept()
        srv.setblocking(False)
        with pytest.raises(BlockingIOError):
            srv.accept()


def test_default_timeout_applies_to_new_sockets():
    udt.setdefaulttimeout(1.5)
    try:
        s = udt.socket()
        assert s.gettimeout() == 1.5
        s.close()
    finally:
        udt.setdefaulttimeout(None)
    assert udt.socket().gettimeout() is None


def test_options_roundtrip():
    s = udt.socket()
    s.setsockopt(udt.UDT_MSS, 1400)
    assert s.getsockopt(udt.UDT_MSS) == 1400
    s.setsockopt(udt.UDT_SNDBUF, 4_000_000)
    assert 3_000_000 < s.getsockopt(udt.UDT_SNDBUF) <= 4_000_000
    s.setsockopt(udt.UDT_RCVBUF, 4_000_000)
    assert 3_000_000 < s.getsockopt(udt.UDT_RCVBUF) <= 4_000_000
    s.setsockopt(udt.UDT_LINGER, (1, 5))
    assert s.getsockopt(udt.UDT_LINGER) == (1, 5)
    s.setsockopt(udt.UDT_LINGER, None)
    assert s.getsockopt(udt.UDT_LINGER) == (0, 0)
    s.setsockopt(udt.UDT_LINGER, 3)
    assert s.getsockopt(udt.UDT_LINGER) == (1, 3)
    s.setsockopt(udt.UDT_MAXBW, 10_000_000)
    assert s.getsockopt(udt.UDT_MAXBW) == 10_000_000
    s.setsockopt(udt.UDT_MAXBW, -1)
    assert s.getsockopt(udt.UDT_MAXBW) == -1
    s.setsockopt(udt.UDT_FC, 1000)
    assert s.getsockopt(udt.UDT_FC) == 1000
    s.setsockopt(udt.UDP_SNDBUF, 1 << 20)
    assert s.getsockopt(udt.UDP_SNDBUF) == 1 << 20
    s.setsockopt(udt.UDT_REUSEADDR, False)
    assert s.getsockopt(udt.UDT_REUSEADDR) is False
    s.setsockopt(udt.UDT_RENDEZVOUS, True)
    assert s.getsockopt(udt.UDT_RENDEZVOUS) is True
    s.setsockopt(udt.UDT_SNDTIMEO, 250)
    assert s.getsockopt(udt.UDT_SNDTIMEO) == 250
    # Python's three-argument form (the level is ignored, as UDT4 ignores it).
    s.setsockopt(0, udt.UDT_MSS, 1300)
    assert s.getsockopt(0, udt.UDT_MSS) == 1300
    assert s.getsockopt(udt.UDT_STATE) == udt.INIT
    assert s.getsockopt(udt.UDT_EVENT) == 0
    assert s.getsockopt(udt.UDT_SNDDATA) == 0
    s.close()


def test_congestion_control_by_name():
    names = [n for n, _ in udt.congestion_controls()]
    assert "udt" in names and "bic" in names
    client, conn, listener = connected_pair(setup=lambda s: s.setsockopt(udt.UDT_CC, "bic"))
    try:
        assert client.getsockopt(udt.UDT_CC) == "bic"
        client.sendall(b"x" * 100_000)
        got = 0
        while got < 100_000:
            got += len(conn.recv(1 << 20))
    finally:
        for s in (client, conn, listener):
            s.close()
    s = udt.socket()
    with pytest.raises(udt.error) as e:
        s.setsockopt(udt.UDT_CC, "no-such-algorithm")
    assert e.value.errno == 5003 and "bic" in str(e.value)
    with pytest.raises(udt.error):
        s.setsockopt(udt.UDT_CC, 3)


def test_option_errors():
    s = udt.socket()
    with pytest.raises(udt.error) as e:
        s.setsockopt(udt.UDT_MSS, 10)  # below UDT's minimum
    assert e.value.errno == 5003
    with pytest.raises(udt.error) as e:
        s.setsockopt(udt.UDT_STATE, 1)  # read only
    assert e.value.errno == 5000
    with pytest.raises(udt.error) as e:
        s.setsockopt(999, 1)
    assert e.value.errno == 5003
    with pytest.raises(udt.error):
        s.setsockopt(udt.UDT_MSS, "big")
    with pytest.raises(udt.error):
        s.setsockopt(udt.UDT_MSS, 1 << 40)
    with pytest.raises(udt.error):
        s.setsockopt(udt.UDT_LINGER, (1, -5))
    with pytest.raises(TypeError):
        s.setsockopt(udt.UDT_MSS)
    s.bind(("127.0.0.1", 0))
    with pytest.raises(udt.error) as e:
        s.setsockopt(udt.UDT_MSS, 1400)  # only before bind (UDT4's EBOUNDSOCK)
    assert e.value.errno == 5001
    s.close()


def test_perfmon(pair):
    client, conn = pair
    client.sendall(b"y" * 2_000_000)
    got = 0
    while got < 2_000_000:
        got += len(conn.recv(1 << 20))
    p = client.perfmon()
    assert isinstance(p, udt.PerfMon)
    assert p.pktSentTotal >= 2_000_000 // 1500
    assert p.msRTT >= 0 and p.mbpsSendRate >= 0
    d = p.as_dict()
    assert list(d) == list(udt.PerfMon.fields)
    for key in ("msTimeStamp", "pktSentTotal", "pktRecvTotal", "pktSndLossTotal", "pktRetransTotal",
                "pktSentACK", "mbpsSendRate", "mbpsRecvRate", "usPktSndPeriod", "pktFlowWindow",
                "pktCongestionWindow", "pktFlightSize", "msRTT", "mbpsBandwidth",
                "byteAvailSndBuf", "byteAvailRcvBuf"):
        assert key in d
    assert conn.perfmon().pktRecvTotal >= p.pktSentTotal - p.pktRetransTotal - 5
    cleared = client.perfmon(clear=True)
    assert cleared.pktSent >= 0
    assert client.perfmon().pktSent == 0
    assert "pktSentTotal" in repr(p)


def test_sendfile_recvfile_paths_and_objects(pair, tmp_path):
    client, conn = pair
    src = tmp_path / "src.bin"
    data = os.urandom(3 * 1024 * 1024 + 17)
    src.write_bytes(data)
    dst = tmp_path / "dst.bin"

    # Path to path, whole file.
    t = Thread(conn.recvfile, str(dst), 0, len(data))
    t.start()
    assert client.sendfile(str(src)) == len(data)
    assert t.result() == len(data)
    assert dst.read_bytes() == data

    # File objects, a range: sendfile leaves the position after the bytes sent.
    out = tmp_path / "part.bin"
    with open(src, "rb") as f, open(out, "wb") as g:
        t = Thread(lambda: conn.recvfile(g, offset=100, count=5000))
        t.start()
        assert client.sendfile(f, 1000, 5000) == 5000
        assert f.tell() == 6000
        assert t.result() == 5000
        assert g.tell() == 5100
    assert out.read_bytes()[100:] == data[1000:6000]

    # os.PathLike, and count=None: to the end of the file from offset.
    t = Thread(conn.recvfile, dst, 0, len(data) - 10)
    t.start()
    assert client.sendfile(src, offset=10) == len(data) - 10
    t.result()
    assert dst.read_bytes() == data[10:]  # a path is cut to offset + count

    # Objects without a descriptor go through read()/write().
    import io
    sink = io.BytesIO()
    t = Thread(conn.recvfile, sink, 0, 1000)
    t.start()
    assert client.sendfile(io.BytesIO(data), 5, 1000) == 1000
    t.result()
    assert sink.getvalue() == data[5:1005]

    with pytest.raises(ValueError):
        conn.recvfile(str(dst))  # count is required
    with pytest.raises(ValueError):
        client.sendfile(str(src), -1)
    with pytest.raises(FileNotFoundError):
        client.sendfile(str(tmp_path / "missing"))
    client.setblocking(False)
    with pytest.raises(ValueError):
        client.sendfile(str(src))


def test_recvfile_peer_closes_early(pair, tmp_path):
    client, conn = pair
    client.sendall(b"z" * 1000)
    client.close()
    with pytest.raises(udt.connectionlost) as e:
        conn.recvfile(str(tmp_path / "short.bin"), 0, 5000)
    assert e.value.errno == 2001


def test_rendezvous_connect():
    a, b = udt.socket(), udt.socket()
    for s in (a, b):
        s.setsockopt(udt.UDT_RENDEZVOUS, True)
        s.settimeout(LIMIT)
        s.bind(("127.0.0.1", 0))
    pa, pb = a.getsockname(), b.getsockname()
    t = Thread(b.connect, pa)
    t.start()
    a.connect(pb)
    t.result()
    a.sendall(b"rendezvous")
    assert b.recv(100) == b"rendezvous"
    with pytest.raises(udt.error) as e:
        a.listen()
    assert e.value.errno in (5002, 5007)
    a.close()
    b.close()


def test_connect_ex(pair):
    client, _ = pair
    with udt.create_server(("127.0.0.1", 0)) as srv:
        s = udt.socket()
        assert s.connect_ex(srv.getsockname()) == 0
        s.close()
    assert client.connect_ex(("127.0.0.1", 1)) == 5002  # already connected


def test_create_connection_and_server_by_name():
    with udt.create_server(("localhost", 0)) as srv:
        port = srv.getsockname()[1]
        with udt.create_connection(("localhost", port), timeout=5) as c:
            assert c.gettimeout() == 5
            conn, addr = srv.accept()
            with conn:
                c.sendall(b"hi")
                assert conn.recv(2) == b"hi"
    with udt.create_server(("127.0.0.1", 0), type=udt.SOCK_DGRAM) as srv:
        with udt.create_connection(srv.getsockname(), type=udt.SOCK_DGRAM) as c:
            conn, _ = srv.accept()
            with conn:
                c.sendmsg(b"msg")
                assert conn.recvmsg(10) == b"msg"


def test_many_connections_on_one_listener():
    with udt.create_server(("127.0.0.1", 0)) as srv:
        clients = [udt.create_connection(srv.getsockname(), timeout=LIMIT) for _ in range(8)]
        conns = [srv.accept()[0] for _ in clients]
        by_port = {c.getpeername()[1]: c for c in conns}
        for i, c in enumerate(clients):
            c.sendall(b"%d" % i)
        for i, c in enumerate(clients):
            peer = by_port[c.getsockname()[1]]
            assert peer.recv(10) == b"%d" % i
        for s in clients + conns:
            s.close()


def test_malformed_arguments_are_clean_errors(pair, msg_pair):
    client, conn = pair
    mclient, mconn = msg_pair
    client.settimeout(float("inf"))  # forever, in practice
    client.sendall(b"ok")
    client.settimeout(1e300)
    assert conn.recv(2) == b"ok"
    with pytest.raises(ValueError):
        client.settimeout(float("nan"))
    with pytest.raises(TypeError):
        client.settimeout("soon")
    with pytest.raises(ValueError):
        mconn.recvmsg(0)
    with pytest.raises(ValueError):
        mconn.recvmsg_into(bytearray(0))
    with pytest.raises(udt.error):
        mclient.sendmsg(b"x", 1 << 40)
    with pytest.raises(ValueError):
        client.send(b"x", 1)  # UDT takes no flags
    with pytest.raises((TypeError, OverflowError)):
        conn.recv(1 << 70)
    assert conn.recv_into(bytearray(0)) == 0  # as Python's socket: returns at once
    assert conn.recv(0) == b""
    with pytest.raises(TypeError):
        conn.recv_into(memoryview(bytearray(10))[::2])  # not contiguous
    with pytest.raises(TypeError):
        udt.Poller().register("not a socket", 1)
    with pytest.raises(udt.error):
        udt.Poller().register(client, 1, 0)
    s = udt.socket()
    with pytest.raises(udt.error):
        s.setsockopt(udt.UDT_MAXBW, 1 << 70)
    s.close()
