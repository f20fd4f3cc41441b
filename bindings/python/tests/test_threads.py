"""Blocking calls release the GIL, and Ctrl-C interrupts them promptly."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import udt
from conftest import LIMIT, Thread, connected_pair


def test_blocked_recv_lets_other_threads_run():
    client, conn, listener = connected_pair()
    conn.settimeout(None)
    t = Thread(conn.recv, 100)
    t.start()
    # While the receiver is blocked, this thread runs Python code freely.
    t0 = time.monotonic()
    count = 0
    while time.monotonic() - t0 < 0.5:
        count += sum(range(100))
    assert count > 0 and t.is_alive()
    ticks = []
    ticker = threading.Thread(target=lambda: [ticks.append(time.sleep(0.01)) for _ in range(20)])
    ticker.start()
    ticker.join(LIMIT)
    assert len(ticks) == 20 and t.is_alive()
    client.sendall(b"wake up")
    assert t.result() == b"wake up"
    for s in (client, conn, listener):
        s.close()


def test_send_and_recv_from_two_threads_at_once():
    client, conn, listener = connected_pair()
    size = 8 * 1024 * 1024

    def echo():
        buf = bytearray(1 << 16)
        n = 0
        while n < size:
            k = conn.recv_into(buf)
            conn.sendall(memoryview(buf)[:k])
            n += k

    e = Thread(echo)
    e.start()
    data = os.urandom(size)
    sender = Thread(client.sendall, data)
    sender.start()
    got = bytearray()
    while len(got) < size:
        got += client.recv(1 << 20)
    sender.result()
    e.result()
    assert bytes(got) == data
    for s in (client, conn, listener):
        s.close()


SETUP_PAIR = """
srv = udt.create_server(("127.0.0.1", 0))
c = udt.create_connection(srv.getsockname())
conn, _ = srv.accept()
"""

SETUP_SMALL_BUFFERS = """
srv = udt.socket()
srv.setsockopt(udt.UDT_RCVBUF, 100_000)
srv.bind(("127.0.0.1", 0))
srv.listen()
c = udt.socket()
c.setsockopt(udt.UDT_SNDBUF, 100_000)
c.connect(srv.getsockname())
conn, _ = srv.accept()
"""


def _interrupt(setup, call):
    """Runs `call` in a child process after `setup`, sends it SIGINT while it blocks, and
    checks that KeyboardInterrupt arrives within a second."""
    code = "import sys, udt\n" + setup + textwrap.dedent(
        """
        print("blocking", flush=True)
        try:
            %s
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(0)
        print("not interrupted", flush=True)
        sys.exit(1)
        """
    ) % call
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "blocking"
        time.sleep(0.3)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out = child.stdout.readline().strip()
        rc = child.wait(LIMIT)
        elapsed = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
    assert out == "interrupted", out
    assert rc == 0
    assert elapsed < 1.0, "Ctrl-C took %.3f s" % elapsed


def test_ctrl_c_interrupts_blocking_recv():
    _interrupt(SETUP_PAIR, "conn.recv(100)")


def test_ctrl_c_interrupts_blocking_recv_into_and_recvfile():
    _interrupt(SETUP_PAIR, "conn.recv_into(bytearray(10))")
    _interrupt(SETUP_PAIR, "conn.recvfile('/dev/null', 0, 1000)")


def test_ctrl_c_interrupts_blocking_accept():
    _interrupt('srv = udt.create_server(("127.0.0.1", 0))\n', "srv.accept()")


def test_ctrl_c_interrupts_blocking_connect():
    # Nobody listens: connect would wait UDT's whole 3 s connect timeout.
    _interrupt("import socket\np = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
               "p.bind(('127.0.0.1', 0))\ns = udt.socket()\n", "s.connect(p.getsockname())")


def test_ctrl_c_interrupts_sendall_into_a_full_buffer():
    # The receiver never reads: sendall blocks once both small buffers are full.
    _interrupt(SETUP_SMALL_BUFFERS, "c.sendall(b'x' * 50_000_000)")
