"""Interoperability: this package against the `udt` command-line tool (`udt perf`) and against
UDT4 4.11 itself (interop/target/udt4-peer, built on libudt by interop/build.sh). Every byte
is checked on the receiving side: byte i of each stream is i mod 251, the payload both tools
send and verify."""

import json
import os
import subprocess

import pytest

import udt
from conftest import LIMIT, REPO, free_udp_port, pattern, wait_udp_port

UDT_BIN = os.environ.get("UDT_BIN") or os.path.join(REPO, "target", "release", "udt")
UDT4_PEER = os.environ.get("UDT4_PEER") or os.path.join(REPO, "interop", "target", "udt4-peer")

needs_udt = pytest.mark.skipif(not os.access(UDT_BIN, os.X_OK), reason="build the udt CLI (test.sh does)")
needs_udt4 = pytest.mark.skipif(not os.access(UDT4_PEER, os.X_OK), reason="run interop/build.sh (test.sh does)")

SIZE = 40 * 1024 * 1024 + 4321
CHUNK = 1 << 20


def send_pattern(sock, size):
    off = 0
    while off < size:
        n = min(CHUNK, size - off)
        sock.sendall(pattern(off, n))
        off += n


def recv_and_verify(conn, expect):
    """Receives until the end of the stream; returns the byte count, checking each byte."""
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    off = 0
    while True:
        n = conn.recv_into(buf)
        if n == 0:
            return off
        assert view[:n] == pattern(off, n), "mismatch in bytes %d..%d" % (off, off + n)
        off += n
        assert off <= expect


def last_json(text):
    lines = [l for l in text.splitlines() if l.startswith("{")]
    assert lines, "no JSON report in %r" % text[-2000:]
    return json.loads(lines[-1])


def start(args):
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=60):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("peer did not finish: %s" % err[-2000:])
    return proc.returncode, out, err


def python_server(kind=udt.SOCK_STREAM):
    srv = udt.create_server(("127.0.0.1", 0), type=kind)
    srv.settimeout(LIMIT)
    return srv, srv.getsockname()[1]


@needs_udt
def test_python_client_to_udt_perf_server():
    port = free_udp_port()
    proc = start([UDT_BIN, "perf", "server", "--bind", "127.0.0.1", "--port", str(port),
                  "--once", "--json", "--interval", "0", "--mode", "stream"])
    try:
        wait_udp_port(port)
        with udt.create_connection(("127.0.0.1", port), timeout=LIMIT) as s:
            send_pattern(s, SIZE)
    finally:
        rc, out, err = finish(proc)
    assert rc == 0, err
    report = last_json(out)
    assert report["verified"] is True and report["bytes"] == SIZE, report


@needs_udt
def test_udt_perf_client_to_python_server():
    srv, port = python_server()
    proc = start([UDT_BIN, "perf", "client", "127.0.0.1:%d" % port, "--bytes", str(SIZE),
                  "--json", "--interval", "0"])
    try:
        conn, _ = srv.accept()
        conn.settimeout(LIMIT)
        with conn:
            assert recv_and_verify(conn, SIZE) == SIZE
    finally:
        rc, out, err = finish(proc)
        srv.close()
    assert rc == 0, err
    assert last_json(out)["bytes"] == SIZE


@needs_udt
def test_udt_perf_message_client_to_python_server():
    msg, size = 100_000, 5_000_000 + 777
    srv, port = python_server(udt.SOCK_DGRAM)
    proc = start([UDT_BIN, "perf", "client", "127.0.0.1:%d" % port, "--bytes", str(size),
                  "--mode", "message", "--msg-size", str(msg), "--json", "--interval", "0"])
    try:
        conn, _ = srv.accept()
        conn.settimeout(LIMIT)
        with conn:
            seen, total = set(), 0
            while True:
                m = conn.recvmsg(2 * msg)
                if not m:
                    break
                # Whole messages: each is message k of the sequence, intact (the tool clears
                # the in-order flag, as UDT4 does, so k is found rather than assumed).
                k = next(k for k in range(size // msg + 1)
                         if k not in seen and len(m) == min(msg, size - k * msg)
                         and m == pattern(k * msg, len(m)))
                seen.add(k)
                total += len(m)
    finally:
        rc, out, err = finish(proc)
        srv.close()
    assert rc == 0, err
    assert total == size and len(seen) == -(-size // msg)


@needs_udt4
def test_python_client_to_udt4_server():
    port = free_udp_port()
    proc = start([UDT4_PEER, "server", "--port", str(port), "--bind", "127.0.0.1", "--once",
                  "--bytes", str(SIZE), "--timeout", "60"])
    try:
        wait_udp_port(port)
        with udt.create_connection(("127.0.0.1", port), timeout=LIMIT) as s:
            send_pattern(s, SIZE)
    finally:
        rc, out, err = finish(proc)
    assert rc == 0, err
    report = last_json(out)
    assert report["verified"] is True and report["bytes"] == SIZE, report


@needs_udt4
def test_udt4_client_to_python_server():
    srv, port = python_server()
    proc = start([UDT4_PEER, "client", "127.0.0.1:%d" % port, "--bytes", str(SIZE), "--timeout", "60"])
    try:
        conn, _ = srv.accept()
        conn.settimeout(LIMIT)
        with conn:
            assert recv_and_verify(conn, SIZE) == SIZE
    finally:
        rc, out, err = finish(proc)
        srv.close()
    assert rc == 0, err


@needs_udt4
def test_udt4_message_client_to_python_server_keeps_boundaries():
    msg, size = 9_999, 3_000_000
    srv, port = python_server(udt.SOCK_DGRAM)
    proc = start([UDT4_PEER, "client", "127.0.0.1:%d" % port, "--mode", "message", "--inorder",
                  "--msg-size", str(msg), "--vary-sizes", "--bytes", str(size), "--timeout", "60"])
    try:
        conn, _ = srv.accept()
        conn.settimeout(LIMIT)
        with conn:
            off, k = 0, 0
            while True:
                m = conn.recvmsg(msg + 1)
                if not m:
                    break
                want = min(1 + (k * 2654435761) % msg, size - off)
                assert len(m) == want, "message %d: %d bytes, expected %d" % (k, len(m), want)
                assert m == pattern(off, len(m))
                off += len(m)
                k += 1
    finally:
        rc, out, err = finish(proc)
        srv.close()
    assert rc == 0, err
    assert off == size


@needs_udt4
def test_python_message_client_to_udt4_server():
    msg, count = 12_345, 200
    port = free_udp_port()
    proc = start([UDT4_PEER, "server", "--port", str(port), "--bind", "127.0.0.1", "--once",
                  "--mode", "message", "--msg-size", str(msg), "--bytes", str(msg * count),
                  "--inorder", "--timeout", "60"])
    try:
        wait_udp_port(port)
        with udt.create_connection(("127.0.0.1", port), timeout=LIMIT, type=udt.SOCK_DGRAM) as s:
            for k in range(count):
                s.sendmsg(pattern(k * msg, msg), -1, True)
    finally:
        rc, out, err = finish(proc)
    assert rc == 0, err
    report = last_json(out)
    assert report["verified"] is True and report["bytes"] == msg * count, report
    assert report.get("messages", count) == count
