//! `udt perf`: memory-to-memory throughput tests with a verifiable payload.
//!
//! The client sends, the server receives. The byte at stream offset `i` is `i mod 251` (in
//! message mode, over the concatenation of the messages), so the receiver checks every byte,
//! whatever implementation sent it. The server accepts stream connections by default and
//! message connections with `--mode message` (one listener per UDP port, as in UDT4).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use udt::{Builder, Socket, SocketKind};

/// Arguments of `udt perf`.
#[derive(Args, Debug)]
pub struct PerfArgs {
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand, Debug)]
enum Role {
    /// Receive and verify test traffic.
    Server(ServerArgs),
    /// Send test traffic to a server.
    Client(ClientArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    Stream,
    Message,
}

#[derive(Args, Debug)]
struct ServerArgs {
    /// UDP port to listen on.
    #[arg(long, default_value_t = 9000)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "0.0.0.0")]
    bind: String,
    /// Exit after the first test.
    #[arg(long)]
    once: bool,
    /// Print one JSON object per test instead of text.
    #[arg(long)]
    json: bool,
    /// Socket kind to accept.
    #[arg(long, value_enum, default_value_t = Mode::Stream)]
    mode: Mode,
    /// Interval between progress reports, seconds (0 = none).
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
}

#[derive(Args, Debug)]
struct ClientArgs {
    /// Server address, HOST:PORT.
    server: String,
    /// Bytes to send (default: run for --time).
    #[arg(long, conflicts_with = "time")]
    bytes: Option<u64>,
    /// Seconds to send (default 10 unless --bytes).
    #[arg(long)]
    time: Option<f64>,
    /// Parallel connections.
    #[arg(long, default_value_t = 1)]
    parallel: usize,
    /// Stream or message mode.
    #[arg(long, value_enum, default_value_t = Mode::Stream)]
    mode: Mode,
    /// Message size in message mode, bytes.
    #[arg(long, default_value_t = 1_456_000)]
    msg_size: usize,
    /// Rendezvous: bind --local-port and meet a peer that connects to us at the same time.
    #[arg(long)]
    rendezvous: bool,
    /// Local port for rendezvous.
    #[arg(long, default_value_t = 9001)]
    local_port: u16,
    /// Congestion control by name.
    #[arg(long, default_value = "udt")]
    cc: String,
    /// Interval between progress reports, seconds (0 = none).
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Print one JSON object at the end instead of text.
    #[arg(long)]
    json: bool,
}

/// The result of one test, printed by `--json`.
#[derive(Debug, Serialize)]
struct Summary {
    role: &'static str,
    mode: &'static str,
    connections: usize,
    bytes: u64,
    seconds: f64,
    mbps: f64,
    retransmitted: u64,
    loss_pkts: u64,
    rtt_ms: f64,
    cpu_seconds: f64,
    verified: bool,
    mismatched_bytes: u64,
}

pub fn run(args: PerfArgs) -> anyhow::Result<()> {
    match args.role {
        Role::Server(a) => server(a),
        Role::Client(a) => client(a),
    }
}

/// The expected byte at stream offset `i`.
fn expected(i: u64) -> u8 {
    (i % 251) as u8
}

/// A 251-periodic pattern long enough to copy any chunk of up to `len` bytes from.
fn pattern_table(len: usize) -> Vec<u8> {
    (0..len + 251).map(|i| expected(i as u64)).collect()
}

fn kind(mode: Mode) -> SocketKind {
    match mode {
        Mode::Stream => SocketKind::Stream,
        Mode::Message => SocketKind::Message,
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Stream => "stream",
        Mode::Message => "message",
    }
}

/// CPU time of this process (user + system), seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills a zeroed rusage struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe {
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn warn_buffers(b: udt::BufferSizes) {
    if b.capped() {
        eprintln!(
            "warning: the kernel capped the UDP buffers (receive {} of {} bytes, send {} of {}); \
             raise net.core.rmem_max / wmem_max (sysctl) for fast or long paths",
            b.recv_granted, b.recv_requested, b.send_granted, b.send_requested
        );
    }
}

fn server(a: ServerArgs) -> anyhow::Result<()> {
    let builder = Builder::new().kind(kind(a.mode));
    let listener = builder
        .listen((a.bind.as_str(), a.port), 64)
        .with_context(|| format!("cannot listen on {}:{}", a.bind, a.port))?;
    warn_buffers(listener.udp_buffers());
    if !a.json {
        eprintln!(
            "udt perf server: listening on {} ({} mode)",
            listener.local_addr(),
            mode_name(a.mode)
        );
    }
    loop {
        let (sock, peer) = listener.accept().context("accept failed")?;
        let cpu0 = cpu_seconds();
        let start = Instant::now();
        let (bytes, bad) = receive(&sock, a.mode, a.interval, a.json)?;
        let seconds = start.elapsed().as_secs_f64();
        let stats = sock.stats(false).ok();
        let summary = Summary {
            role: "server",
            mode: mode_name(a.mode),
            connections: 1,
            bytes,
            seconds,
            mbps: bytes as f64 * 8.0 / seconds.max(1e-9) / 1e6,
            retransmitted: stats.map_or(0, |s| s.pkt_retrans_total),
            loss_pkts: stats.map_or(0, |s| s.pkt_rcv_loss_total),
            rtt_ms: stats.map_or(0.0, |s| s.ms_rtt),
            cpu_seconds: cpu_seconds() - cpu0,
            verified: bad == 0,
            mismatched_bytes: bad,
        };
        report(&summary, a.json, &format!("from {peer}"));
        if a.once {
            if bad > 0 {
                bail!("{bad} received bytes did not match the expected pattern");
            }
            return Ok(());
        }
    }
}

/// Reads until the peer closes, verifying every byte; returns (bytes, mismatched bytes).
fn receive(sock: &Socket, mode: Mode, interval: f64, quiet: bool) -> anyhow::Result<(u64, u64)> {
    let mut buf = vec![0u8; 8 << 20];
    let mut got = 0u64;
    let mut bad = 0u64;
    let start = Instant::now();
    let mut next_report = interval;
    let mut last_bytes = 0u64;
    loop {
        let n = match mode {
            Mode::Stream => sock.recv(&mut buf).context("receive failed")?,
            Mode::Message => match sock.recv_msg(&mut buf) {
                Ok(m) => m.copied,
                Err(udt::Error::ConnectionLost) => 0,
                Err(e) => return Err(e).context("receive failed"),
            },
        };
        if n == 0 {
            return Ok((got, bad));
        }
        bad += buf[..n]
            .iter()
            .enumerate()
            .filter(|(k, &b)| b != expected(got + *k as u64))
            .count() as u64;
        got += n as u64;
        let t = start.elapsed().as_secs_f64();
        if interval > 0.0 && t >= next_report && !quiet {
            eprintln!(
                "{:6.1} s  {:10.1} MB  {:8.1} Mb/s",
                t,
                got as f64 / 1e6,
                (got - last_bytes) as f64 * 8.0 / interval / 1e6
            );
            last_bytes = got;
            next_report += interval;
        }
    }
}

fn client(a: ClientArgs) -> anyhow::Result<()> {
    if a.parallel == 0 {
        bail!("--parallel must be at least 1");
    }
    let mut builder = Builder::new()
        .kind(kind(a.mode))
        .congestion_control_by_name(&a.cc)
        .with_context(|| format!("unknown congestion control {:?}", a.cc))?;
    if a.mode == Mode::Message && a.msg_size == 0 {
        bail!("--msg-size must be positive");
    }
    builder = builder.linger(Some(DRAIN_LIMIT));
    let duration = a
        .time
        .map(Duration::from_secs_f64)
        .or(if a.bytes.is_none() {
            Some(Duration::from_secs(10))
        } else {
            None
        });
    let per_conn_bytes = a.bytes.map(|b| b.div_ceil(a.parallel as u64));
    let sent = Arc::new(AtomicU64::new(0));
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let mut handles = Vec::new();
    for i in 0..a.parallel {
        let sock = if a.rendezvous {
            builder.rendezvous(("0.0.0.0", a.local_port + i as u16), a.server.as_str())
        } else {
            builder.connect(a.server.as_str())
        }
        .with_context(|| format!("cannot connect to {}", a.server))?;
        if i == 0 {
            warn_buffers(sock.udp_buffers());
        }
        let sent = Arc::clone(&sent);
        let (mode, msg_size) = (a.mode, a.msg_size);
        handles.push(std::thread::spawn(
            move || -> anyhow::Result<udt::PerfStats> {
                let empty = sock.stats(false)?.byte_avail_snd_buf;
                send(
                    &sock,
                    mode,
                    msg_size,
                    per_conn_bytes,
                    duration.map(|d| start + d),
                    &sent,
                )?;
                // The statistics count retransmissions until the last byte is acknowledged,
                // so wait for the send buffer to drain before reading them (close lingers
                // the same way, but the socket is gone afterwards).
                let drain_until = Instant::now() + DRAIN_LIMIT;
                let mut stats = sock.stats(false)?;
                while stats.byte_avail_snd_buf < empty && Instant::now() < drain_until {
                    std::thread::sleep(Duration::from_millis(1));
                    stats = sock.stats(false)?;
                }
                sock.close()?;
                Ok(stats)
            },
        ));
    }
    let mut next_report = a.interval;
    let mut last_sent = 0u64;
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(20));
        let t = start.elapsed().as_secs_f64();
        if a.interval > 0.0 && !a.json && t >= next_report {
            let now_sent = sent.load(Ordering::Relaxed);
            eprintln!(
                "{:6.1} s  {:10.1} MB  {:8.1} Mb/s",
                t,
                now_sent as f64 / 1e6,
                (now_sent - last_sent) as f64 * 8.0 / a.interval / 1e6
            );
            last_sent = now_sent;
            next_report += a.interval;
        }
    }
    let mut retrans = 0;
    let mut loss = 0;
    let mut rtt = 0.0f64;
    for h in handles {
        let s = h
            .join()
            .map_err(|_| anyhow::anyhow!("sender thread panicked"))??;
        retrans += s.pkt_retrans_total;
        loss += s.pkt_snd_loss_total;
        rtt = rtt.max(s.ms_rtt);
    }
    let seconds = start.elapsed().as_secs_f64();
    let bytes = sent.load(Ordering::Relaxed);
    let summary = Summary {
        role: "client",
        mode: mode_name(a.mode),
        connections: a.parallel,
        bytes,
        seconds,
        mbps: bytes as f64 * 8.0 / seconds.max(1e-9) / 1e6,
        retransmitted: retrans,
        loss_pkts: loss,
        rtt_ms: rtt,
        cpu_seconds: cpu_seconds() - cpu0,
        // The sender cannot see the receiver's check; it vouches only for delivery.
        verified: true,
        mismatched_bytes: 0,
    };
    report(&summary, a.json, &format!("to {}", a.server));
    Ok(())
}

/// Longest wait for the peer to acknowledge everything before the final statistics are read
/// (the linger time of the client's sockets).
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// Sends the pattern until `limit` bytes or `until`, counting into `sent`.
fn send(
    sock: &Socket,
    mode: Mode,
    msg_size: usize,
    limit: Option<u64>,
    until: Option<Instant>,
    sent: &AtomicU64,
) -> anyhow::Result<()> {
    let chunk = match mode {
        Mode::Stream => 1 << 20,
        Mode::Message => msg_size,
    };
    let table = pattern_table(chunk);
    let mut off = 0u64;
    loop {
        if limit.is_some_and(|l| off >= l) || until.is_some_and(|u| Instant::now() >= u) {
            return Ok(());
        }
        let want = limit.map_or(chunk as u64, |l| (l - off).min(chunk as u64)) as usize;
        let start = (off % 251) as usize;
        let data = &table[start..start + want];
        let n = match mode {
            Mode::Stream => sock.send(data).context("send failed")?,
            Mode::Message => {
                sock.send_msg(data, None, true).context("send failed")?;
                want
            }
        };
        off += n as u64;
        sent.fetch_add(n as u64, Ordering::Relaxed);
    }
}

fn report(s: &Summary, json: bool, what: &str) {
    if json {
        println!("{}", serde_json::to_string(s).unwrap_or_default());
    } else {
        eprintln!(
            "{} {what}: {} bytes in {:.2} s = {:.1} Mb/s, {} retransmitted, RTT {:.2} ms, CPU {:.2} s{}",
            s.role,
            s.bytes,
            s.seconds,
            s.mbps,
            s.retransmitted,
            s.rtt_ms,
            s.cpu_seconds,
            if s.role == "server" {
                if s.verified { ", all bytes verified".to_owned() } else { format!(", {} BAD BYTES", s.mismatched_bytes) }
            } else {
                String::new()
            }
        );
    }
}
