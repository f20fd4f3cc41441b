//! `udt relay` on loopback: forwarding in both directions, loss, the DropTail queue, and a UDT
//! transfer through an impaired path.
//!
//! Every assertion is on counts and bytes, never on timing: each test waits (with a generous
//! bound) until the relay reports that it has received everything sent, then stops it with
//! SIGTERM and checks its final JSON report.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Longest wait for anything in these tests; only reached when something is broken.
const PATIENCE: Duration = Duration::from_secs(30);

/// Has the child `cmd` starts killed when the test process dies.
fn dies_with_the_test(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe, and the closure touches nothing else.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// A running relay, killed if the test ends early.
struct Relay {
    child: Child,
    addr: SocketAddr,
    reports: mpsc::Receiver<Value>,
}

impl Relay {
    /// Starts `udt relay --listen 127.0.0.1:0 --to <to> <extra>` with JSON reports every
    /// 50 ms and waits for the address it listens on.
    fn start(to: SocketAddr, extra: &[&str]) -> Relay {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_udt"));
        cmd.args(["relay", "--listen", "127.0.0.1:0", "--to"])
            .arg(to.to_string())
            .args(["--json", "--interval", "0.05", "--socket-buffer", "4194304"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        dies_with_the_test(&mut cmd);
        let mut child = cmd.spawn().expect("spawn udt relay");
        let stderr = child.stderr.take().expect("stderr");
        let stdout = child.stdout.take().expect("stdout");
        let (addr_tx, addr_rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("relay: {line}");
                if let Some(rest) = line.strip_prefix("udt relay: listening on ") {
                    let addr = rest.split(',').next().unwrap_or("").trim().to_string();
                    let _ = addr_tx.send(addr);
                }
            }
        });
        let (rep_tx, reports) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("relay printed non-JSON {line:?}: {e}"));
                if rep_tx.send(v).is_err() {
                    break;
                }
            }
        });
        let addr = addr_rx
            .recv_timeout(PATIENCE)
            .expect("the relay did not say where it listens")
            .parse()
            .expect("relay address");
        Relay {
            child,
            addr,
            reports,
        }
    }

    /// Waits for a periodic report that satisfies `done`.
    fn wait_for(&self, what: &str, done: impl Fn(&Value) -> bool) {
        let end = Instant::now() + PATIENCE;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let r = self
                .reports
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("the relay never reported {what}"));
            if done(&r) {
                return;
            }
        }
    }

    /// CPU time the relay has used so far (user + system), seconds.
    fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the command name (which is in parentheses): utime is the 12th, stime
        // the 13th, in clock ticks.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<f64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0.0))
            .collect();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / hz
    }

    /// Stops the relay with SIGTERM and returns its final report.
    fn stop(mut self) -> Value {
        // SAFETY: kill on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let status = self.child.wait().expect("wait for the relay");
        assert!(status.success(), "relay exited with {status}");
        let last = self
            .reports
            .iter()
            .last()
            .expect("the relay printed no report");
        assert_eq!(last["final"], true, "{last}");
        last
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `datagrams` from `client` to the relay in groups of 50, waiting after each group
/// until the relay has read them all, so that no socket buffer can overflow (the kernel's
/// limits without root are small) and every count below is exact.
fn send_paced(relay: &Relay, client: &UdpSocket, datagrams: &[Vec<u8>]) {
    for (k, group) in datagrams.chunks(50).enumerate() {
        for d in group {
            client.send_to(d, relay.addr).expect("send to the relay");
        }
        let sent = (k * 50 + group.len()) as u64;
        relay.wait_for("the datagrams sent", |r| {
            count(r, "fwd", "received") >= sent
        });
    }
}

fn count(v: &Value, dir: &str, key: &str) -> u64 {
    v[dir][key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {dir}.{key} in {v}"))
}

fn udp() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.set_read_timeout(Some(PATIENCE)).expect("timeout");
    s
}

/// Deterministic bytes: datagram `i` of length `len`.
fn payload(i: usize, len: usize) -> Vec<u8> {
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn forwards_both_ways_byte_exact() {
    let server = udp();
    let server_addr = server.local_addr().unwrap();
    let echo = thread::spawn(move || {
        let mut buf = vec![0u8; 65_536];
        let mut n = 0;
        // Echo every datagram back to where it came from (the relay), until "end".
        loop {
            let (len, from) = server.recv_from(&mut buf).expect("echo recv");
            if &buf[..len] == b"end" {
                return n;
            }
            server.send_to(&buf[..len], from).expect("echo send");
            n += 1;
        }
    });
    let relay = Relay::start(server_addr, &[]);
    let client = udp();
    let sizes = [0usize, 1, 2, 100, 1000, 1472, 1500, 9000, 65_507];
    let mut buf = vec![0u8; 65_536];
    let total = 200;
    for i in 0..total {
        let sent = payload(i, sizes[i % sizes.len()]);
        client.send_to(&sent, relay.addr).expect("send");
        let (len, from) = client.recv_from(&mut buf).expect("echo through the relay");
        assert_eq!(from, relay.addr, "replies come from the relay");
        assert_eq!(&buf[..len], &sent[..], "datagram {i}");
    }
    client.send_to(b"end", relay.addr).unwrap();
    assert_eq!(echo.join().unwrap(), total);
    relay.wait_for("the end marker", |r| {
        count(r, "fwd", "received") == total as u64 + 1
    });
    let r = relay.stop();
    assert_eq!(count(&r, "fwd", "forwarded"), total as u64 + 1);
    assert_eq!(count(&r, "rev", "received"), total as u64);
    assert_eq!(count(&r, "rev", "forwarded"), total as u64);
    for dir in ["fwd", "rev"] {
        for key in ["dropped_loss", "dropped_queue", "send_errors", "duplicated"] {
            assert_eq!(count(&r, dir, key), 0, "{dir}.{key}");
        }
    }
}

#[test]
fn total_loss_drops_everything() {
    let server = udp();
    server.set_nonblocking(true).unwrap();
    let relay = Relay::start(server.local_addr().unwrap(), &["--loss", "1"]);
    let client = udp();
    let total = 500u64;
    let data: Vec<Vec<u8>> = (0..total as usize).map(|i| payload(i, 500)).collect();
    send_paced(&relay, &client, &data);
    let r = relay.stop();
    assert_eq!(count(&r, "fwd", "received"), total);
    assert_eq!(count(&r, "fwd", "dropped_loss"), total);
    assert_eq!(count(&r, "fwd", "forwarded"), 0);
    assert_eq!(count(&r, "fwd", "in_flight"), 0);
    let mut buf = [0u8; 2048];
    assert!(
        server.recv_from(&mut buf).is_err(),
        "a datagram got through 100% loss"
    );
}

#[test]
fn no_loss_at_a_low_rate_drops_nothing() {
    let server = udp();
    let relay = Relay::start(
        server.local_addr().unwrap(),
        &[
            "--rate", "20mbit", "--queue", "1000", "--delay", "2ms", "--loss", "0",
        ],
    );
    big_recv_buffer(&server, 8 << 20);
    let client = udp();
    let total = 300;
    let data: Vec<Vec<u8>> = (0..total).map(|i| payload(i, 1000)).collect();
    send_paced(&relay, &client, &data);
    let mut buf = vec![0u8; 2048];
    for i in 0..total {
        let (len, _) = server
            .recv_from(&mut buf)
            .expect("datagram through the relay");
        // Nothing is lost, duplicated or reordered.
        assert_eq!(&buf[..len], &payload(i, 1000)[..], "datagram {i}");
    }
    let r = relay.stop();
    assert_eq!(count(&r, "fwd", "received"), total as u64);
    assert_eq!(count(&r, "fwd", "forwarded"), total as u64);
    assert_eq!(count(&r, "fwd", "dropped_loss"), 0);
    assert_eq!(count(&r, "fwd", "dropped_queue"), 0);
}

#[test]
fn a_burst_larger_than_the_queue_overflows_it() {
    let server = udp();
    // 8 kbit/s with no header overhead: a 1000-byte datagram takes one second to serialise,
    // so a burst of 100 meets a full 10-packet queue.
    let relay = Relay::start(
        server.local_addr().unwrap(),
        &["--rate", "8kbit", "--queue", "10", "--overhead", "0"],
    );
    let client = udp();
    let total = 100u64;
    let data: Vec<Vec<u8>> = (0..total as usize).map(|i| payload(i, 1000)).collect();
    send_paced(&relay, &client, &data);
    let r = relay.stop();
    assert_eq!(count(&r, "fwd", "received"), total);
    let dropped = count(&r, "fwd", "dropped_queue");
    let forwarded = count(&r, "fwd", "forwarded");
    let in_flight = count(&r, "fwd", "in_flight");
    assert_eq!(dropped + forwarded + in_flight, total, "{r}");
    // 10 fit, plus one per second the burst took to arrive.
    assert!(dropped >= 80, "only {dropped} queue drops: {r}");
    assert_eq!(count(&r, "fwd", "dropped_loss"), 0);
}

#[test]
fn udt_transfer_through_a_lossy_delayed_path_is_exact() {
    let builder = udt::Builder::new().read_timeout(Some(PATIENCE));
    let listener = builder.listen("127.0.0.1:0", 1).expect("listen");
    let relay = Relay::start(
        listener.local_addr(),
        &[
            "--delay", "5ms", "--loss", "0.01", "--rate", "200mbit", "--seed", "7",
        ],
    );
    let data: Vec<u8> = (0..16).flat_map(|i| payload(i, 250_000)).collect();
    let expected = data.clone();
    let receiver = thread::spawn(move || {
        let (mut sock, _) = listener.accept().expect("accept");
        let mut got = Vec::new();
        sock.read_to_end(&mut got).expect("read");
        got
    });
    let mut sock = builder
        .connect(relay.addr)
        .expect("connect through the relay");
    sock.write_all(&data).expect("write");
    sock.close().expect("close");
    let got = receiver.join().expect("receiver");
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "the bytes differ");
    let r = relay.stop();
    assert!(
        count(&r, "fwd", "dropped_loss") > 0,
        "no loss was applied: {r}"
    );
    assert!(
        count(&r, "rev", "forwarded") > 0,
        "no acknowledgement went back: {r}"
    );
}

/// `udt perf client`'s interval lines read the connection afresh while its sender thread is
/// blocked in `send`: at 8 Mbit/s the default send buffer (37 MB) frees the eighth that wakes
/// a blocked writer only after about 4.6 s, and lines that reused what the sender thread last
/// saw showed nothing acknowledged and the same window and packets in flight throughout, as
/// if the connection were stalled (issue 20: a slow path must not look like a stall).
#[test]
fn perf_client_lines_are_fresh_while_its_sender_is_blocked() {
    let listener = udt::Builder::new()
        .listen("127.0.0.1:0", 1)
        .expect("listen");
    let relay = Relay::start(
        listener.local_addr(),
        &["--rate", "8mbit", "--delay", "5ms", "--queue", "100"],
    );
    thread::spawn(move || {
        if let Ok((sock, _)) = listener.accept() {
            let mut buf = vec![0u8; 1 << 16];
            while matches!(sock.recv(&mut buf), Ok(n) if n > 0) {}
        }
    });
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_udt"));
    cmd.args(["perf", "client", &relay.addr.to_string()])
        .args(["--time", "30", "--interval", "0.25"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    dies_with_the_test(&mut cmd);
    let mut client = cmd.spawn().expect("spawn udt perf client");
    let stderr = client.stderr.take().expect("stderr");
    // (seconds, MB acknowledged, the bracket with window and packets in flight)
    let mut lines: Vec<(f64, f64, String)> = Vec::new();
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        eprintln!("client: {line}");
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(t), Some(mb)) = (
            f.first().and_then(|x| x.parse::<f64>().ok()),
            f.get(2).and_then(|x| x.parse::<f64>().ok()),
        ) else {
            continue;
        };
        let bracket = line.split_once('[').map_or("", |b| b.1).to_string();
        lines.push((t, mb, bracket));
        if t >= 3.0 {
            break;
        }
    }
    let _ = client.kill();
    let _ = client.wait();
    assert!(lines.len() >= 8, "too few interval lines: {lines:?}");
    // Acknowledged by 3 s: about 3 MB at 8 Mbit/s, less at most the 1 MB chunk a blocked
    // `send` has partly copied.
    let acked = lines.last().map_or(0.0, |l| l.1);
    assert!(acked >= 0.5, "nothing acknowledged in 3 s: {lines:?}");
    let brackets: std::collections::HashSet<&str> = lines.iter().map(|l| l.2.as_str()).collect();
    assert!(
        brackets.len() >= 3,
        "the window, packets in flight and RTT did not change: {lines:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Faithfulness measurements (not tests: they print figures and assert nothing about timing).
// Run them with a release build on an otherwise idle machine:
//   cargo test --release -p udt-cli --test relay -- --ignored --nocapture --test-threads 1

/// Sets a socket's kernel receive buffer (bytes), past `rmem_max` when running as root.
fn big_recv_buffer(s: &UdpSocket, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: setsockopt with a pointer to a live c_int and its size.
        let rc = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&bytes as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            return;
        }
    }
}

/// Offers `offered_bps` of 1472-byte datagrams (IP rate, 1500-byte packets) for `secs`
/// through a relay limited to `rate`; returns the rate the receiver saw (bit/s of IP packets,
/// over the steady part) and the relay's final report.
fn blast(rate: &str, offered_bps: f64, secs: f64) -> (f64, Value) {
    const PAYLOAD: usize = 1472;
    const WIRE_BITS: f64 = 1500.0 * 8.0;
    let sink = udp();
    big_recv_buffer(&sink, 64 << 20);
    sink.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    // RELAY_EXTRA: more relay flags, e.g. "--realtime" or "--spin 0".
    let extra = std::env::var("RELAY_EXTRA").unwrap_or_default();
    let mut args = vec!["--rate", rate, "--queue", "1000"];
    args.extend(extra.split_whitespace());
    let relay = Relay::start(sink.local_addr().unwrap(), &args);
    let counter = thread::spawn(move || {
        let mut buf = vec![0u8; 2048];
        let mut times = Vec::with_capacity(1 << 20);
        while let Ok(n) = sink.recv(&mut buf) {
            if n == PAYLOAD {
                times.push(Instant::now());
            }
        }
        times
    });
    let client = udp();
    let gap = Duration::from_secs_f64(WIRE_BITS / offered_bps);
    let data = payload(0, PAYLOAD);
    let start = Instant::now();
    let mut sent = 0u32;
    while start.elapsed().as_secs_f64() < secs {
        // Send what is due, then sleep: bursts of a few packets, no busy wait that would
        // take CPU from the relay.
        let now = Instant::now();
        while start + gap * sent <= now {
            let _ = client.send_to(&data, relay.addr);
            sent += 1;
        }
        thread::sleep(Duration::from_micros(100));
    }
    let relay_cpu = relay.cpu_seconds();
    let times = counter.join().unwrap();
    let report = relay.stop();
    // Skip the first 10% (the queue filling) and count what arrived after.
    let skip = times.len() / 10;
    let rate_seen = if times.len() > skip + 1 {
        let span = times[times.len() - 1] - times[skip];
        (times.len() - skip - 1) as f64 * WIRE_BITS / span.as_secs_f64()
    } else {
        0.0
    };
    println!(
        "rate {rate:>8}: offered {:7.1} Mbit/s ({sent} sent), received {:7.1} Mbit/s ({} pkts), \
         relay: qdrop {} kdrop {} late avg {:.1} us max {:.1} us, CPU {:.0}%",
        offered_bps / 1e6,
        rate_seen / 1e6,
        times.len(),
        count(&report, "fwd", "dropped_queue"),
        count(&report, "fwd", "kernel_dropped"),
        report["fwd"]["late_mean_us"].as_f64().unwrap_or(-1.0),
        report["fwd"]["late_max_us"].as_f64().unwrap_or(-1.0),
        relay_cpu / secs * 100.0,
    );
    (rate_seen, report)
}

/// Achieved rate against the set rate, offering 20% more than the set rate.
/// `RELAY_RATES` (comma-separated, default 100mbit,500mbit,1gbit), `RELAY_SECONDS` and
/// `RELAY_EXTRA` (more relay flags).
#[test]
#[ignore = "measurement; run with --ignored --nocapture on an idle machine"]
fn measure_rate_faithfulness() {
    let rates = std::env::var("RELAY_RATES").unwrap_or("100mbit,500mbit,1gbit".into());
    let secs: f64 = std::env::var("RELAY_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4.0);
    for r in rates.split(',') {
        let bps = r
            .trim_end_matches("mbit")
            .trim_end_matches("gbit")
            .parse::<f64>()
            .expect("rate like 500mbit or 1gbit")
            * if r.ends_with("gbit") { 1e9 } else { 1e6 };
        blast(r, bps * 1.2, secs);
    }
}

/// Round-trip time through a relay adding `delay` each way, from `n` ping-pongs of 64-byte
/// datagrams 5 ms apart; returns the RTTs, µs.
fn ping(extra: &[&str], n: usize) -> Vec<f64> {
    let server = udp();
    let server_addr = server.local_addr().unwrap();
    let echo = thread::spawn(move || {
        let mut buf = [0u8; 2048];
        server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        while let Ok((len, from)) = server.recv_from(&mut buf) {
            let _ = server.send_to(&buf[..len], from);
        }
    });
    let relay = (!extra.is_empty()).then(|| Relay::start(server_addr, extra));
    let target = relay.as_ref().map_or(server_addr, |r| r.addr);
    let client = udp();
    let mut buf = [0u8; 2048];
    let mut rtts = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        client.send_to(&payload(i, 64), target).unwrap();
        client.recv_from(&mut buf).expect("pong");
        rtts.push(t.elapsed().as_secs_f64() * 1e6);
        thread::sleep(Duration::from_millis(5));
    }
    if let Some(r) = relay {
        let rep = r.stop();
        for dir in ["fwd", "rev"] {
            println!(
                "  relay {dir}: late avg {:.1} us, max {:.1} us",
                rep[dir]["late_mean_us"].as_f64().unwrap_or(-1.0),
                rep[dir]["late_max_us"].as_f64().unwrap_or(-1.0)
            );
        }
    }
    echo.join().unwrap();
    rtts
}

fn summary(label: &str, mut v: Vec<f64>, minus_us: f64) {
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize] - minus_us;
    let mean = v.iter().sum::<f64>() / v.len() as f64 - minus_us;
    println!(
        "{label:<40} n={} min {:8.1} p50 {:8.1} mean {:8.1} p99 {:8.1} max {:8.1} (us)",
        v.len(),
        q(0.0),
        q(0.5),
        mean,
        q(0.99),
        q(1.0)
    );
}

/// Delay accuracy: RTT through the relay minus the set RTT, against the direct RTT.
#[test]
#[ignore = "measurement; run with --ignored --nocapture on an idle machine"]
fn measure_delay_faithfulness() {
    let n = 400;
    summary("direct RTT", ping(&[], n), 0.0);
    summary("relay, no delay: RTT", ping(&["--delay", "0"], n), 0.0);
    summary(
        "relay, 50 ms each way: RTT - 100 ms",
        ping(&["--delay", "50ms"], n),
        100_000.0,
    );
    summary(
        "relay, 50 ms, --realtime: RTT - 100 ms",
        ping(&["--delay", "50ms", "--realtime"], n),
        100_000.0,
    );
    summary(
        "relay, 5 ms + 1gbit: RTT - 10 ms",
        ping(&["--delay", "5ms", "--rate", "1gbit"], n),
        10_000.0,
    );
}

/// A GSO buffer (one `send` cut into datagrams by the kernel, as `udt perf` sends) reaches the
/// far side as its datagrams, each whole and in order, and the relay counts each one.
#[test]
fn gso_buffers_are_forwarded_as_their_datagrams() {
    use std::os::fd::AsRawFd;
    const SOL_UDP: libc::c_int = 17;
    const UDP_SEGMENT: libc::c_int = 103;
    let server = udp();
    let relay = Relay::start(server.local_addr().unwrap(), &[]);
    let client = udp();
    let seg: libc::c_int = 1000;
    // SAFETY: setsockopt with a pointer to a live c_int and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            SOL_UDP,
            UDP_SEGMENT,
            (&seg as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        eprintln!("skipped: this kernel has no UDP GSO");
        return;
    }
    let sizes = [1000, 1000, 1000, 1000, 1000, 300];
    let mut rounds = 0;
    let mut buf = vec![0u8; 65_536];
    for round in 0..20 {
        let whole: Vec<u8> = sizes
            .iter()
            .enumerate()
            .flat_map(|(k, &len)| payload(round * 10 + k, len))
            .collect();
        if let Err(e) = client.send_to(&whole, relay.addr) {
            eprintln!("skipped: the kernel refused a GSO send ({e})");
            return;
        }
        for (k, &len) in sizes.iter().enumerate() {
            let n = server.recv(&mut buf).expect("a datagram through the relay");
            assert_eq!(n, len, "round {round}, datagram {k}");
            assert_eq!(
                buf[..n],
                payload(round * 10 + k, len)[..],
                "round {round}, datagram {k}"
            );
        }
        rounds += 1;
    }
    let sent = (rounds * sizes.len()) as u64;
    relay.wait_for("every datagram", |r| count(r, "fwd", "received") >= sent);
    let last = relay.stop();
    assert_eq!(count(&last, "fwd", "received"), sent);
    assert_eq!(count(&last, "fwd", "forwarded"), sent, "{last}");
}
