#!/usr/bin/env python3
"""An impairing UDP relay for the interoperability tests (Python 3 standard library only).

It listens on 127.0.0.1:PORT, forwards every datagram from the first client that talks to it to
TARGET (from a second socket bound to 127.0.0.1 on an ephemeral port), and forwards the target's
answers back to that client. In both directions it can drop a fraction of the datagrams, hold a
fraction back for a few milliseconds (so that later ones overtake them: reordering), and send a
fraction twice (the copy is delayed like a reordered datagram). All random choices come from one
generator seeded with --seed, so a run is repeatable for a given arrival order.

It stops by itself after --idle-timeout seconds without any datagram (before the first one too),
after --max-time seconds in all, or on SIGTERM/SIGINT, and then prints its counters.

Output on stdout: first `{"event":"ready","port":P}` once it listens (use --port 0 to let the
system choose), and at exit `{"event":"done", "fwd":{...}, "back":{...}, "reason":...}`.

usage: relay.py --port P --target HOST:PORT [--loss F] [--loss-fwd F] [--loss-back F]
                [--reorder F] [--reorder-ms MIN-MAX] [--dup F] [--spare-handshake]
                [--spare-shutdown] [--seed S]
                [--idle-timeout S] [--max-time S]
"""

import argparse
import heapq
import json
import random
import select
import signal
import socket
import sys
import time


# First word of a UDT handshake: control bit set, type 0, extended type 0.
HANDSHAKE = b"\x80\x00\x00\x00"
# First word of a UDT shutdown: control bit set, type 5, extended type 0.
SHUTDOWN = b"\x80\x05\x00\x00"


class Direction:
    """Impairments and counters for one direction."""

    def __init__(self, name, loss, reorder, dup):
        self.name = name
        self.loss = loss
        self.reorder = reorder
        self.dup = dup
        self.received = 0
        self.forwarded = 0
        self.dropped = 0
        self.reordered = 0
        self.duplicated = 0
        self.send_errors = 0

    def counters(self):
        return {
            "received": self.received,
            "forwarded": self.forwarded,
            "dropped": self.dropped,
            "reordered": self.reordered,
            "duplicated": self.duplicated,
            "send_errors": self.send_errors,
        }


def parse_addr(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return (socket.gethostbyname(host), int(port))


def parse_range(text):
    lo, sep, hi = text.partition("-")
    lo = float(lo)
    hi = float(hi) if sep else lo
    if lo < 0 or hi < lo:
        raise argparse.ArgumentTypeError(f"bad range {text!r}")
    return (lo, hi)


def fraction(text):
    v = float(text)
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in [0, 1]")
    return v


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True, help="port to listen on (127.0.0.1; 0 = any)")
    p.add_argument("--target", type=parse_addr, required=True, help="HOST:PORT to forward to")
    p.add_argument("--loss", type=fraction, default=0.0, help="fraction dropped, both directions")
    p.add_argument("--loss-fwd", type=fraction, help="fraction dropped client -> target")
    p.add_argument("--loss-back", type=fraction, help="fraction dropped target -> client")
    p.add_argument("--reorder", type=fraction, default=0.0, help="fraction held back")
    p.add_argument("--reorder-ms", type=parse_range, default=(1.0, 5.0), help="hold time, ms")
    p.add_argument("--dup", type=fraction, default=0.0, help="fraction sent twice")
    p.add_argument("--spare-handshake", action="store_true",
                   help="never impair UDT handshakes (control type 0): a 4.11 client whose "
                        "handshake reply is lost can wrongly report success (spec 5.4 item 8)")
    p.add_argument("--spare-shutdown", action="store_true",
                   help="never impair UDT shutdowns (control type 5): UDT sends a single, "
                        "unacknowledged shutdown, and its loss turns a clean close into a "
                        "timeout at the peer (for UDT4 as for us)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--idle-timeout", type=float, default=15.0, help="stop after this long idle, s")
    p.add_argument("--max-time", type=float, default=900.0, help="stop after this long in all, s")
    a = p.parse_args()

    if a.target[0] != "127.0.0.1":
        # The relay is a test tool for loopback only.
        print(f"relay: refusing non-loopback target {a.target[0]}", file=sys.stderr)
        return 2

    rng = random.Random(a.seed)
    fwd = Direction("fwd", a.loss if a.loss_fwd is None else a.loss_fwd, a.reorder, a.dup)
    back = Direction("back", a.loss if a.loss_back is None else a.loss_back, a.reorder, a.dup)

    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(("127.0.0.1", a.port))
    upstream = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    upstream.bind(("127.0.0.1", 0))
    for s in (front, upstream):
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                s.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)
            except OSError:
                pass
        s.setblocking(False)

    stop = {"reason": None}

    def on_signal(signum, _frame):
        stop["reason"] = f"signal {signum}"

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    print(json.dumps({"event": "ready", "port": front.getsockname()[1],
                      "upstream_port": upstream.getsockname()[1]}), flush=True)

    client = None
    held = []  # heap of (release time, counter, socket, data, address, direction)
    counter = 0
    start = time.monotonic()
    last_activity = start
    lo_ms, hi_ms = a.reorder_ms

    def forward(d, data, sock, addr, now):
        nonlocal counter
        d.received += 1
        if (a.spare_handshake and data[:4] == HANDSHAKE) or (
                a.spare_shutdown and data[:4] == SHUTDOWN):
            send(d, sock, data, addr)
            return
        if d.loss and rng.random() < d.loss:
            d.dropped += 1
            return
        copies = 1
        if d.dup and rng.random() < d.dup:
            d.duplicated += 1
            copies = 2
        for i in range(copies):
            if i == 1 or (d.reorder and rng.random() < d.reorder):
                if i == 0:
                    d.reordered += 1
                delay = rng.uniform(lo_ms, hi_ms) / 1000.0
                counter += 1
                heapq.heappush(held, (now + delay, counter, sock, data, addr, d))
            else:
                send(d, sock, data, addr)

    def send(d, sock, data, addr):
        try:
            sock.sendto(data, addr)
            d.forwarded += 1
        except (BlockingIOError, InterruptedError):
            # The kernel buffer is full: the datagram is lost, like on a congested link.
            d.send_errors += 1
        except OSError:
            # e.g. ECONNREFUSED reported for an earlier datagram: the peer is gone.
            d.send_errors += 1

    while stop["reason"] is None:
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, _, sock, data, addr, d = heapq.heappop(held)
            send(d, sock, data, addr)
        if now - last_activity > a.idle_timeout and not held:
            stop["reason"] = "idle"
            break
        if now - start > a.max_time:
            stop["reason"] = "max-time"
            break
        timeout = 0.2
        if held:
            timeout = max(0.0, min(timeout, held[0][0] - now))
        try:
            readable, _, _ = select.select([front, upstream], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for sock in readable:
            # Drain what is queued (bounded, so held datagrams are released on time).
            for _ in range(256):
                try:
                    data, addr = sock.recvfrom(65536)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    # ICMP errors (port unreachable) surface here; ignore them.
                    continue
                last_activity = now
                if sock is front:
                    if client is None:
                        client = addr
                    elif addr != client:
                        continue  # one client per relay
                    forward(fwd, data, upstream, a.target, now)
                else:
                    if addr != a.target or client is None:
                        continue
                    forward(back, data, front, client, now)

    print(json.dumps({"event": "done", "reason": stop["reason"],
                      "seconds": round(time.monotonic() - start, 3),
                      "fwd": fwd.counters(), "back": back.counters()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
