"""Failures are udt.error (an OSError carrying UDT4's code) in the right subclass, and none
hangs: no server, a rejected connection, bad addresses, closed sockets, wrong states."""

import time

import pytest

import udt
from conftest import LIMIT, connected_pair, free_udp_port


def test_no_server_is_refused_and_timed_out():
    s = udt.socket()
    t0 = time.monotonic()
    with pytest.raises(udt.noserver) as e:
        s.connect(("127.0.0.1", free_udp_port()))
    assert time.monotonic() - t0 < 10
    assert e.value.errno == 1001
    # Nobody answered: both "refused" and "timed out" in Python's terms.
    assert isinstance(e.value, ConnectionRefusedError)
    assert isinstance(e.value, TimeoutError)
    assert isinstance(e.value, udt.error) and isinstance(e.value, OSError)
    s.close()


def test_connect_timeout_shorter_than_udts():
    s = udt.socket()
    s.settimeout(0.3)
    t0 = time.monotonic()
    with pytest.raises(udt.timeout):
        s.connect(("127.0.0.1", free_udp_port()))
    assert time.monotonic() - t0 < 2
    s.close()


def test_rejected_connection_is_refused():
    # A message socket asking a stream listener is rejected by the listener.
    with udt.create_server(("127.0.0.1", 0)) as srv:
        s = udt.socket(udt.AF_INET, udt.SOCK_DGRAM)
        s.settimeout(LIMIT)
        with pytest.raises(ConnectionRefusedError) as e:
            s.connect(srv.getsockname())
        assert isinstance(e.value, udt.refused)
        assert e.value.errno == 1002
        s.close()


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1:9000",
        ("127.0.0.1",),
        ("127.0.0.1", 9000, 0),
        ("127.0.0.1", 70000),
        ("127.0.0.1", -1),
        ("127.0.0.1", "9000"),
        (None, 9000),
        ("::1", 9000),
        ("256.1.1.1.1", 9000),
    ],
)
def test_bad_addresses(address):
    s = udt.socket()
    with pytest.raises(udt.error) as e:
        s.connect(address)
    assert e.value.errno == 5003
    with pytest.raises(udt.error):
        s.bind(address)
    s.close()


def test_bad_address_exceptions_match_pythons():
    s = udt.socket()
    with pytest.raises(TypeError):
        s.bind("not a tuple")
    with pytest.raises(OverflowError):
        s.bind(("127.0.0.1", 1 << 20))
    with pytest.raises(udt.gaierror) as e:
        s.connect(("no-such-host.invalid", 9000))
    import socket as pysocket
    assert isinstance(e.value, pysocket.gaierror)
    s.close()


def test_closed_socket():
    client, conn, listener = connected_pair()
    client.close()
    for call in (
        lambda: client.send(b"x"),
        lambda: client.sendall(b"x"),
        lambda: client.recv(1),
        lambda: client.recv_into(bytearray(1)),
        lambda: client.getpeername(),
        lambda: client.getsockname(),
        lambda: client.perfmon(),
        lambda: client.getsockopt(udt.UDT_MSS),
        lambda: client.setsockopt(udt.UDT_MAXBW, 1),
        lambda: client.setsockopt(udt.UDT_RCVSYN, True),
        lambda: client.connect(("127.0.0.1", 9)),
        lambda: client.bind(("127.0.0.1", 0)),
    ):
        with pytest.raises(udt.error) as e:
            call()
        assert e.value.errno == 5004, call
    conn.close()
    listener.close()
    with pytest.raises(udt.error) as e:
        listener.accept()
    assert e.value.errno == 5004


def test_close_from_another_thread_wakes_a_blocked_recv():
    import threading

    client, conn, listener = connected_pair()
    conn.settimeout(None)
    threading.Timer(0.2, conn.close).start()
    t0 = time.monotonic()
    with pytest.raises(udt.error) as e:
        conn.recv(10)
    assert e.value.errno == 5004
    assert time.monotonic() - t0 < 3
    client.close()
    listener.close()


def test_wrong_states():
    s = udt.socket()
    with pytest.raises(udt.error) as e:
        s.listen()
    assert e.value.errno == 5005  # not bound
    with pytest.raises(udt.error) as e:
        s.accept()
    assert e.value.errno == 5006  # not listening
    with pytest.raises(udt.error) as e:
        s.recv(1)
    assert e.value.errno == 2002  # not connected
    with pytest.raises(udt.error) as e:
        s.getpeername()
    assert e.value.errno == 2002
    with pytest.raises(udt.error) as e:
        s.getsockname()
    assert e.value.errno == 5005
    with pytest.raises(udt.error) as e:
        s.perfmon()
    assert e.value.errno == 2002
    s.bind(("127.0.0.1", 0))
    with pytest.raises(udt.error) as e:
        s.bind(("127.0.0.1", 0))
    assert e.value.errno == 5001
    s.close()


def test_send_to_a_closed_peer_is_connection_lost():
    client, conn, listener = connected_pair()
    conn.close()
    deadline = time.monotonic() + LIMIT
    with pytest.raises(udt.connectionlost) as e:
        while time.monotonic() < deadline:
            client.send(b"anyone there?")
            time.sleep(0.01)
    assert isinstance(e.value, ConnectionResetError)
    assert e.value.errno == 2001
    client.close()
    listener.close()


def test_error_attributes():
    e = udt.error(5004, "socket is closed")
    assert e.errno == e.code == 5004 and e.strerror == "socket is closed"
    assert e.os_errno is None
    assert issubclass(udt.timeout, TimeoutError)
    assert issubclass(udt.wouldblock, BlockingIOError)
    assert issubclass(udt.error, OSError)
