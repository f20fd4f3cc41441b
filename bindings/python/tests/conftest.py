"""Shared helpers: loopback pairs of connected sockets, a payload pattern other UDT programs
check (byte i of a stream is i mod 251, as `udt perf` and the UDT4 peer use), and time limits
so that no test can hang."""

import os
import socket as pysocket
import threading
import time

import pytest

import udt

#: Every blocking call in the tests gives up after this long, so a bug fails a test instead
#: of hanging the run.
LIMIT = 20.0


def pattern(offset, n):
    """Bytes offset..offset+n of the test stream: byte i is i mod 251."""
    start = offset % 251
    reps = (start + n) // 251 + 1
    return (bytes(range(251)) * reps)[start:start + n]


def connected_pair(kind=udt.SOCK_STREAM, family=udt.AF_INET, host="127.0.0.1", setup=None):
    """(client, server_side, listener): a connected pair over loopback."""
    listener = udt.socket(family, kind)
    if setup:
        setup(listener)
    listener.settimeout(LIMIT)
    listener.bind((host, 0))
    listener.listen()
    client = udt.socket(family, kind)
    if setup:
        setup(client)
    client.settimeout(LIMIT)
    client.connect(listener.getsockname()[:2])
    conn, _ = listener.accept()
    conn.settimeout(LIMIT)
    return client, conn, listener


@pytest.fixture
def pair():
    client, conn, listener = connected_pair()
    yield client, conn
    for s in (client, conn, listener):
        s.close()


@pytest.fixture
def msg_pair():
    client, conn, listener = connected_pair(kind=udt.SOCK_DGRAM)
    yield client, conn
    for s in (client, conn, listener):
        s.close()


class Thread(threading.Thread):
    """A thread whose exception or result the test collects with `result()`."""

    def __init__(self, target, *args):
        super().__init__(daemon=True)
        self._target_fn, self._args = target, args
        self._exc = self._value = None

    def run(self):
        try:
            self._value = self._target_fn(*self._args)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            self._exc = e

    def result(self, timeout=LIMIT):
        self.join(timeout)
        assert not self.is_alive(), "thread did not finish in time"
        if self._exc is not None:
            raise self._exc
        return self._value


def free_udp_port():
    with pysocket.socket(pysocket.AF_INET, pysocket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_udp_port(port, timeout=10.0):
    """Waits until some process has bound UDP `port` (read from /proc/net/udp*)."""
    want = ":%04X " % port
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in ("/proc/net/udp", "/proc/net/udp6"):
            try:
                with open(path) as f:
                    for line in f.readlines()[1:]:
                        if want in line.split(None, 2)[1] + " ":
                            return
            except OSError:
                pass
        time.sleep(0.02)
    raise AssertionError("nothing bound UDP port %d in time" % port)


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
