#!/usr/bin/env python3
"""Side-by-side benchmarks on loopback: our `udt perf`, UDT4 4.11 (bench/udt4-perf) and kernel
TCP (iperf3), memory to memory, in one run; prints Markdown tables.

    python3 bench/run.py [--udt PATH] [--idle-bin PATH] [--bytes N] [--rounds R]
                         [--parallel K] [--ptime S] [--conns N] [--only single,parallel,idle]

Build first:

    cargo build --release -p udt-cli && cargo build --release -p udt --example idle
    bench/build.sh

Every tool runs as its own pair of processes (server = receiver, client = sender). The CPU time
of each process (user + system) comes from os.wait4 on that process, so CPU seconds per GB are
measured the same way for all three; on loopback the kernel's receive path mostly runs in the
sender's system call, so it is charged to the sender. 1 GB = 10^9 bytes of payload.

Sections:
  single    one flow of --bytes, --rounds interleaved rounds (the order rotates each round):
            throughput at the receiver, CPU s/GB of sender and receiver; medians and ratios.
  parallel  --parallel flows to one server port for --ptime seconds: aggregate throughput and
            Jain's fairness index of per-flow throughput.
  idle      --conns idle connections to one listener, one UDP port per side (ours, UDT4):
            threads and resident memory.
Python 3 standard library only.
"""

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def mss_args(a):
    """`--mss N` for our perf tool and UDT4's, when --mss is set."""
    return ["--mss", str(a.mss)] if a.mss else []


# ---------------------------------------------------------------------------------------------
# Processes


class Proc:
    """A child process whose stdout/stderr go to files and whose rusage we collect with wait4."""

    def __init__(self, argv, tmp, name):
        self.argv = argv
        self.out_path = os.path.join(tmp, name + ".out")
        self.err_path = os.path.join(tmp, name + ".err")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.p = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        self.start = time.monotonic()
        self.status = None
        self.cpu = None
        self.wall = None

    def wait(self, timeout):
        """Waits up to `timeout` seconds; kills the process after that. Returns self."""
        deadline = time.monotonic() + timeout
        while self.status is None:
            pid, status, ru = os.wait4(self.p.pid, os.WNOHANG)
            if pid == self.p.pid:
                self._done(status, ru)
                break
            if time.monotonic() > deadline:
                sys.stderr.write(f"run.py: {self.argv[0]} ran over {timeout:.0f} s, killing\n")
                self.kill(signal.SIGKILL)
                break
            time.sleep(0.01)
        return self

    def finish(self, grace):
        """Gives a server `grace` seconds to end by itself (its client is done), then stops it
        with SIGTERM. Returns how long it took to end, or None if it had to be stopped."""
        t0 = time.monotonic()
        while self.status is None and time.monotonic() - t0 < grace:
            pid, status, ru = os.wait4(self.p.pid, os.WNOHANG)
            if pid == self.p.pid:
                self._done(status, ru)
                return time.monotonic() - t0
            time.sleep(0.01)
        if self.status is not None:
            return 0.0
        self.kill(signal.SIGTERM)
        return None

    def kill(self, sig=signal.SIGTERM):
        """Sends `sig` and reaps the process (its rusage counts up to its end)."""
        if self.status is None:
            try:
                os.kill(self.p.pid, sig)
            except ProcessLookupError:
                pass
            _, status, ru = os.wait4(self.p.pid, 0)
            self._done(status, ru)
        return self

    def _done(self, status, ru):
        self.wall = time.monotonic() - self.start
        self.status = status
        self.cpu = ru.ru_utime + ru.ru_stime
        self.p.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from reaping again

    def stdout(self):
        with open(self.out_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.err_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stderr_brief(self):
        """The start (a panic's message) and the end of stderr."""
        e = self.stderr()
        return e if len(e) <= 3000 else e[:2000] + "\n[...]\n" + e[-1000:]

    def json_lines(self):
        out = []
        for line in self.stdout().splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        return out

    def ok(self):
        return self.status is not None and os.WIFEXITED(self.status) and os.WEXITSTATUS(self.status) == 0


def listening(port, proto):
    """Whether a local socket of `proto` ("udp" or "tcp") is bound to `port` (TCP: listening)."""
    for fam in ("", "6"):
        try:
            with open(f"/proc/net/{proto}{fam}") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    local, state = cols[1], cols[3]
                    if int(local.rsplit(":", 1)[1], 16) == port and (proto == "udp" or state == "0A"):
                        return True
        except OSError:
            pass
    return False


def wait_listening(port, proto, proc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not listening(port, proto):
        if proc.p.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"server {proc.argv} did not start: {proc.stderr()[-500:]}")
        time.sleep(0.02)


class Ports:
    """Fresh ports for every test (no reuse of a port another test may still hold)."""

    def __init__(self):
        self.next = random.randrange(30000, 38000)

    def take(self, n=1):
        while True:
            p = self.next
            self.next += n
            if not any(listening(q, "udp") or listening(q, "tcp") for q in range(p, p + n)):
                return p


# ---------------------------------------------------------------------------------------------
# One test of each tool


def jain(xs):
    xs = [x for x in xs]
    if not xs or sum(xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def conn_lines(srv):
    """The server's per-connection reports; a session's summary of several connections (it
    carries `per_connection_mbps`) is not one."""
    return [j for j in srv.json_lines()
            if j.get("role") == "server" and "per_connection_mbps" not in j]


def run_ours(a, tmp, ports, tag, nbytes=None, parallel=1, seconds=None):
    port = ports.take()
    srv_argv = [a.udt, "perf", "server", "--port", str(port), "--bind", "127.0.0.1",
                "--json", "--interval", "0"] + mss_args(a)
    if parallel == 1:
        srv_argv.append("--once")
    srv = Proc(srv_argv, tmp, tag + "-srv")
    wait_listening(port, "udp", srv)
    cli_argv = [a.udt, "perf", "client", f"127.0.0.1:{port}", "--json", "--interval", "0",
                "--parallel", str(parallel)] + mss_args(a)
    cli_argv += ["--bytes", str(nbytes)] if nbytes else ["--time", str(seconds)]
    cli = Proc(cli_argv, tmp, tag + "-cli").wait(a.timeout)
    if parallel == 1:
        server_end = srv.finish(a.grace)
    else:
        # The server serves forever: wait for one line per connection, then stop it. (A peer
        # that vanished is detected by the expiry timer after tens of seconds.)
        t0 = time.monotonic()
        while len(conn_lines(srv)) < parallel and time.monotonic() - t0 < a.pgrace:
            time.sleep(0.05)
        server_end = (time.monotonic() - t0 if len(conn_lines(srv)) >= parallel else None)
        srv.kill(signal.SIGTERM)
    c = (cli.json_lines() or [{}])[-1]
    s_lines = conn_lines(srv)
    rcv_bytes = sum(j["bytes"] for j in s_lines)
    r = {
        "tool": "ours", "client_ok": cli.ok(), "bytes": c.get("bytes"),
        "received_bytes": rcv_bytes, "server_end_after_client": server_end,
        "verified": bool(s_lines) and all(j.get("verified") for j in s_lines),
        "retransmitted": c.get("retransmitted"), "client_wall": cli.wall,
        "sender_cpu": cli.cpu, "receiver_cpu": srv.cpu,
        "client_json": c, "server_json": s_lines,
        "client_err": cli.stderr_brief(), "server_err": srv.stderr_brief(),
        "server_exit": srv.status, "client_exit": cli.status,
    }
    # Sender-timed: bytes over the client's run, connect to close returned (close lingers
    # until the receiver has acknowledged every byte).
    r["mbps"] = c.get("mbps")
    if parallel == 1:
        r["rcv_mbps"] = s_lines[0]["mbps"] if s_lines else None
    else:
        r["flow_bytes"] = [j["bytes"] for j in s_lines]
        r["flow_mbps"] = [j["mbps"] for j in s_lines]
    return r


def run_udt4(a, tmp, ports, tag, nbytes=None, parallel=1, seconds=None, buf=0, client=None):
    """UDT4 server; UDT4 client unless `client` is "ours" (our sender into their receiver)."""
    port = ports.take()
    srv_argv = [a.udt4_perf, "server", "--port", str(port), "--bind", "127.0.0.1",
                "--conns", str(parallel)] + mss_args(a)
    if a.udt4_verify:
        srv_argv.append("--verify")
    if buf:
        srv_argv += ["--buf", str(buf)]
    srv = Proc(srv_argv, tmp, tag + "-srv")
    wait_listening(port, "udp", srv)
    if client == "ours":
        cli_argv = [a.udt, "perf", "client", f"127.0.0.1:{port}", "--json", "--interval", "0",
                    "--parallel", str(parallel)] + mss_args(a)
    else:
        cli_argv = [a.udt4_perf, "client", f"127.0.0.1:{port}", "--parallel", str(parallel)] + mss_args(a)
        if buf:
            cli_argv += ["--buf", str(buf)]
    cli_argv += ["--bytes", str(nbytes)] if nbytes else ["--time", str(seconds)]
    cli = Proc(cli_argv, tmp, tag + "-cli").wait(a.timeout)
    server_end = srv.finish(a.grace if parallel == 1 else a.pgrace)
    c = [j for j in cli.json_lines() if j.get("total") or client == "ours"]
    c = c[-1] if c else {}
    s_conn = [j for j in srv.json_lines() if not j.get("total")]
    rcv_bytes = sum(j["bytes"] for j in s_conn)
    r = {
        "tool": "udt4" + ("+buf" if buf else "") + ("<-ours" if client == "ours" else ""),
        "client_ok": cli.ok(), "bytes": c.get("bytes"), "received_bytes": rcv_bytes,
        "server_end_after_client": server_end,
        "verified": (all(j.get("verified") for j in s_conn) if a.udt4_verify else None),
        "retransmitted": c.get("retransmitted"), "client_wall": cli.wall,
        "sender_cpu": cli.cpu, "receiver_cpu": srv.cpu,
        "client_json": c, "server_json": srv.json_lines(),
        "client_err": cli.stderr_brief(), "server_err": srv.stderr_brief(),
        "server_exit": srv.status, "client_exit": cli.status,
    }
    r["mbps"] = c.get("mbps")
    if parallel == 1:
        r["rcv_mbps"] = s_conn[0]["mbps"] if s_conn else None
    else:
        r["flow_bytes"] = [j["bytes"] for j in s_conn]
        r["flow_mbps"] = [j["mbps"] for j in s_conn]
    return r


def run_tcp(a, tmp, ports, tag, nbytes=None, parallel=1, seconds=None):
    port = ports.take()
    srv = Proc([a.iperf3, "-s", "-1", "-p", str(port), "-B", "127.0.0.1", "-J"], tmp, tag + "-srv")
    wait_listening(port, "tcp", srv)
    cli_argv = [a.iperf3, "-c", "127.0.0.1", "-p", str(port), "-J", "-P", str(parallel)]
    cli_argv += ["-n", str(nbytes)] if nbytes else ["-t", str(seconds)]
    cli = Proc(cli_argv, tmp, tag + "-cli").wait(a.timeout)
    server_end = srv.finish(a.grace)
    try:
        j = json.loads(cli.stdout())
    except json.JSONDecodeError:
        j = {}
    end = j.get("end", {})
    rcv = end.get("sum_received", {})
    # iperf3's receiver total can miss the last segments still in flight when it snapshots its
    # counters; TCP delivers everything that was sent, so CPU per GB counts the bytes sent.
    sent = end.get("sum_sent", {}).get("bytes")
    r = {
        "tool": "tcp", "client_ok": cli.ok(), "bytes": sent, "received_bytes": rcv.get("bytes"),
        "server_end_after_client": server_end,
        "sent_bytes": sent, "verified": None,
        "retransmitted": end.get("sum_sent", {}).get("retransmits"), "client_wall": cli.wall,
        "sender_cpu": cli.cpu, "receiver_cpu": srv.cpu,
        "mbps": rcv.get("bits_per_second", 0) / 1e6 if rcv else None,
        "rcv_mbps": rcv.get("bits_per_second", 0) / 1e6 if rcv else None,
        "client_err": cli.stderr_brief() + (j.get("error") or ""),
        "server_err": srv.stderr_brief(),
    }
    if parallel > 1:
        streams = end.get("streams", [])
        r["flow_bytes"] = [s["receiver"]["bytes"] for s in streams]
        r["flow_mbps"] = [s["receiver"]["bits_per_second"] / 1e6 for s in streams]
    return r


def check_errors(tag, r):
    """Logs a panic or an abnormal exit of either process."""
    for side in ("client", "server"):
        err = r.get(side + "_err") or ""
        status = r.get(side + "_exit")
        abnormal = status is not None and not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
        if "panicked" in err or "error" in err.lower() or (abnormal and side == "client"):
            log(f"  {tag} {side}: exit status {status}; stderr: {err[:600]!r}")


def cpu_per_gb(r, key):
    if not r.get("bytes") or r.get(key) is None:
        return None
    return r[key] / (r["bytes"] / 1e9)


# ---------------------------------------------------------------------------------------------
# Sections


def fmt(x, nd=2):
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.{nd}f}".replace(",", " ")
    return str(x)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ratio(x, y):
    return None if x is None or not y else x / y


def section_single(a, tmp, ports, results):
    tools = [("ours", run_ours), ("udt4", run_udt4), ("tcp", run_tcp)]
    runs = {name: [] for name, _ in tools}
    if a.udt4_buf:
        runs["udt4+buf"] = []
    for rnd in range(a.rounds):
        order = tools[rnd % len(tools):] + tools[:rnd % len(tools)]
        for name, fn in order:
            r = fn(a, tmp, ports, f"single-{name}-{rnd}", nbytes=a.bytes)
            r["round"] = rnd
            runs[name].append(r)
            check_errors(f"single {name} round {rnd}", r)
            log(f"single round {rnd} {name}: {fmt(r['mbps'], 0)} Mb/s (receiver "
                f"{fmt(r.get('rcv_mbps'), 0)}), sender "
                f"{fmt(cpu_per_gb(r, 'sender_cpu'))} s/GB, receiver "
                f"{fmt(cpu_per_gb(r, 'receiver_cpu'))} s/GB, ok={r['client_ok']} "
                f"verified={r['verified']} server ended {fmt(r['server_end_after_client'])} s "
                f"after the client")
            if not r["client_ok"] or (r["bytes"] or 0) < a.bytes:
                log(f"  INCOMPLETE: sent {r['bytes']} of {a.bytes}; client stderr: "
                    f"{r['client_err'][-300:]!r} server stderr: {r['server_err'][-300:]!r}")
            if r["server_end_after_client"] is None:
                log(f"  STALL: the receiver had not ended {a.grace:g} s after the sender; stopped "
                    f"(received {r.get('received_bytes')} bytes reported)")
        if a.udt4_buf:
            r = run_udt4(a, tmp, ports, f"single-udt4buf-{rnd}", nbytes=a.bytes, buf=a.udt4_buf)
            r["round"] = rnd
            runs["udt4+buf"].append(r)
            log(f"single round {rnd} udt4+buf: {fmt(r['mbps'], 0)} Mb/s, sender "
                f"{fmt(cpu_per_gb(r, 'sender_cpu'))} s/GB, receiver "
                f"{fmt(cpu_per_gb(r, 'receiver_cpu'))} s/GB")
    results["single"] = runs

    names = list(runs)
    label = {"ours": "ours (`udt perf`)", "udt4": "UDT4 4.11", "tcp": "TCP (iperf3)",
             "udt4+buf": f"UDT4 4.11, buffers {a.udt4_buf} B"}
    lines = [f"Single flow, {a.bytes / 1e9:g} GB per run, {a.rounds} rounds; per round: "
             "Mb/s sender-timed (receiver-timed), sender / receiver CPU s/GB"
             f"; † = receiver still waiting {a.grace:g} s after the sender ended (stopped)", "",
             "| round | " + " | ".join(label[n] for n in names) + " |",
             "|---:|" + "---:|" * len(names)]
    for rnd in range(a.rounds):
        cells = []
        for n in names:
            r = runs[n][rnd]
            stall = " †" if r["server_end_after_client"] is None else ""
            cells.append(f"{fmt(r['mbps'], 0)} ({fmt(r.get('rcv_mbps'), 0)}{stall}), "
                         f"{fmt(cpu_per_gb(r, 'sender_cpu'))} / "
                         f"{fmt(cpu_per_gb(r, 'receiver_cpu'))}")
        lines.append(f"| {rnd + 1} | " + " | ".join(cells) + " |")
    lines += ["", "Medians of the rounds, and ratios of the medians:", "",
              "| | " + " | ".join(label[n] for n in names) + " | ours / UDT4 | ours / TCP |",
              "|---|" + "---:|" * (len(names) + 2)]
    metrics = [("throughput, Mb/s (UDT: sender-timed; TCP: iperf3 receiver)",
                lambda r: r["mbps"], 0),
               ("throughput, receiver-timed, Mb/s", lambda r: r.get("rcv_mbps"), 0),
               ("sender CPU, s/GB", lambda r: cpu_per_gb(r, "sender_cpu"), 2),
               ("receiver CPU, s/GB", lambda r: cpu_per_gb(r, "receiver_cpu"), 2),
               ("sender + receiver CPU, s/GB",
                lambda r: (None if cpu_per_gb(r, "sender_cpu") is None else
                           cpu_per_gb(r, "sender_cpu") + cpu_per_gb(r, "receiver_cpu")), 2),
               ("retransmitted packets", lambda r: r["retransmitted"], 0),
               ("payload verified by the receiver (runs)",
                lambda r: 1 if r["verified"] else 0, 0),
               (f"receiver stalled > {a.grace:g} s after the sender (runs)",
                lambda r: 1 if r["server_end_after_client"] is None else 0, 0)]
    for title, f, nd in metrics:
        if title.endswith("(runs)"):
            m = {n: sum(f(r) for r in runs[n]) for n in names}
            cells = [f"{m[n]} of {len(runs[n])}" for n in names]
            lines.append(f"| {title} | " + " | ".join(cells) + " | | |")
            continue
        m = {n: med([f(r) for r in runs[n]]) for n in names}
        cells = [fmt(m[n], nd) for n in names]
        lines.append(f"| {title} | " + " | ".join(cells) + f" | {fmt(ratio(m['ours'], m['udt4']))}"
                     f" | {fmt(ratio(m['ours'], m['tcp']))} |")
    return "\n".join(lines)


def section_parallel(a, tmp, ports, results):
    k, t = a.parallel, a.ptime
    runs = []
    for name, fn, kw in [("ours", run_ours, {}), ("udt4", run_udt4, {}), ("tcp", run_tcp, {}),
                         ("ours -> UDT4 server", run_udt4, {"client": "ours"})]:
        r = fn(a, tmp, ports, f"par-{name.replace(' ', '_')}", parallel=k, seconds=t, **kw)
        r["name"] = name
        runs.append(r)
        check_errors(f"parallel {name}", r)
        log(f"parallel {name}: {fmt(r['mbps'], 0)} Mb/s, flows {len(r.get('flow_bytes', []))}, "
            f"jain(bytes) {fmt(jain(r.get('flow_bytes', [])), 3)}, ok={r['client_ok']}")
    results["parallel"] = runs
    label = {"ours": "ours → ours (`udt perf`)", "udt4": "UDT4 → UDT4", "tcp": "TCP (iperf3)",
             "ours -> UDT4 server": "ours → UDT4 server"}
    lines = [f"{k} parallel flows to one server port, each sending for {t:g} s:", "",
             "| sender → receiver | aggregate Mb/s | client wall s | flows reported | "
             "Jain (per-flow bytes) | Jain (per-flow Mb/s) | per-flow Mb/s min–max | "
             "sender CPU s/GB | receiver CPU s/GB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        fm = r.get("flow_mbps", [])
        lines.append(
            f"| {label[r['name']]} | {fmt(r['mbps'], 0)} | {fmt(r['client_wall'], 1)} | "
            f"{len(r.get('flow_bytes', []))} | {fmt(jain(r.get('flow_bytes', [])), 3)} | "
            f"{fmt(jain(fm), 3)} | "
            f"{fmt(min(fm), 0) if fm else '–'}–{fmt(max(fm), 0) if fm else '–'} | "
            f"{fmt(cpu_per_gb(r, 'sender_cpu'))} | {fmt(cpu_per_gb(r, 'receiver_cpu'))} |")
    return "\n".join(lines)


def section_idle(a, tmp, ports, results):
    runs = []
    for name, argv0 in [("ours", a.idle_bin), ("udt4", a.udt4_idle)]:
        p = ports.take(2)
        proc = Proc([argv0, "--conns", str(a.conns), "--port", str(p), "--client-port",
                     str(p + 1), "--idle", str(a.idle)], tmp, f"idle-{name}").wait(a.timeout)
        j = (proc.json_lines() or [{}])[-1]
        j["name"] = name
        j["process_cpu"] = proc.cpu
        j["ok"] = proc.ok()
        j["err"] = proc.stderr()[-1000:]
        runs.append(j)
        log(f"idle {name}: {j}")
    results["idle"] = runs
    by = {r["name"]: r for r in runs}
    lines = [f"{a.conns} idle connections to one listener, one UDP port per side, one process:", "",
             "| | ours | UDT4 4.11 | ours / UDT4 |", "|---|---:|---:|---:|"]
    for title, key, nd in [("connections accepted", "accepted", 0), ("UDP ports", "udp_ports", 0),
                           ("threads", "threads", 0), ("threads before opening", "threads_before", 0),
                           ("RSS, kB", "rss_kb", 0), ("RSS per connection pair, kB", None, 1),
                           ("setup time (connect + accept all), s", "setup_seconds", 2),
                           (f"CPU while idle ({a.idle:g} s), s per s", "idle_cpu_per_s", 4)]:
        if key is None:
            v = {n: (None if "rss_kb" not in r else
                     (r["rss_kb"] - r["rss_before_kb"]) / max(r.get("accepted", 1), 1))
                 for n, r in by.items()}
        else:
            v = {n: r.get(key) for n, r in by.items()}
        o, u = v.get("ours"), v.get("udt4")
        lines.append(f"| {title} | {fmt(o, nd)} | {fmt(u, nd)} | {fmt(ratio(o, u))} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------


def log(msg):
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def machine():
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip(),
        "loadavg": open("/proc/loadavg").read().split()[:3],
        "sysctl": sh("sysctl -n net.core.rmem_max net.core.wmem_max net.core.rmem_default "
                     "net.core.wmem_default").split(),
        "iperf3": sh("iperf3 --version | head -1"),
        "git": sh(f"git -C {REPO} log -1 --format=%h"),
    }


def main():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--udt", default=os.path.join(target, "release", "udt"))
    ap.add_argument("--idle-bin", default=os.path.join(target, "release", "examples", "idle"))
    ap.add_argument("--udt4-perf", default=os.path.join(HERE, "target", "udt4-perf"))
    ap.add_argument("--udt4-idle", default=os.path.join(HERE, "target", "udt4-idle"))
    ap.add_argument("--iperf3", default="iperf3")
    ap.add_argument("--bytes", type=int, default=3_000_000_000, help="bytes per single-flow run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=16)
    ap.add_argument("--ptime", type=float, default=10.0, help="seconds of the parallel test")
    ap.add_argument("--conns", type=int, default=1000)
    ap.add_argument("--idle", type=float, default=5.0, help="idle seconds before measuring CPU")
    ap.add_argument("--mss", type=int, default=0,
                    help="UDT_MSS of every UDT run, both ends (0: the default, 1500)")
    ap.add_argument("--udt4-buf", type=int, default=0,
                    help="also run UDT4 with UDT and UDP buffers raised to this many bytes")
    ap.add_argument("--no-udt4-verify", dest="udt4_verify", action="store_false",
                    help="UDT4 server does not check the payload (ours always does)")
    ap.add_argument("--timeout", type=float, default=300.0, help="per-process limit, seconds")
    ap.add_argument("--grace", type=float, default=10.0,
                    help="seconds a single-flow server may take to end after its client")
    ap.add_argument("--pgrace", type=float, default=60.0,
                    help="seconds a parallel-test server may take to report every flow")
    ap.add_argument("--only", default="single,parallel,idle")
    ap.add_argument("--json", help="write all raw results here")
    a = ap.parse_args()

    for path in (a.udt, a.udt4_perf):
        if not os.access(path, os.X_OK):
            sys.exit(f"run.py: {path} is missing: build it first (see --help)")
    sections = a.only.split(",")
    results = {"machine": machine(), "args": vars(a)}
    out = [f"Machine: {results['machine']}", ""]
    with tempfile.TemporaryDirectory(prefix="udt-bench-") as tmp:
        ports = Ports()
        if "single" in sections:
            out += [section_single(a, tmp, ports, results), ""]
        if "parallel" in sections:
            out += [section_parallel(a, tmp, ports, results), ""]
        if "idle" in sections:
            out += [section_idle(a, tmp, ports, results), ""]
    results["machine_after"] = {"loadavg": open("/proc/loadavg").read().split()[:3]}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    print("\n".join(out))


if __name__ == "__main__":
    main()
