//! `udt perf`: memory-to-memory throughput tests with a verifiable payload.
//!
//! The client sends, the server receives. The byte at stream offset `i` is `i mod 251` (in
//! message mode, over the concatenation of the messages), so the receiver checks every byte,
//! whatever implementation sent it. The server accepts stream and message connections on one
//! port (each served in its peer's mode; a UDT4 listener takes only one kind), or only one
//! kind with `--mode`.

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
    /// Exit after the first test: once its first connection and every connection that
    /// arrived while any of them was still open have ended (so `--parallel N` clients work).
    #[arg(long)]
    once: bool,
    /// Print one JSON object per test instead of text.
    #[arg(long)]
    json: bool,
    /// Accept only this socket kind (default: both, each connection served in the mode its
    /// client connected with).
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    /// Interval between progress reports, seconds (0 = none).
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Instead of listening, meet the sender at HOST:PORT in rendezvous mode (it runs
    /// `udt perf client --rendezvous --local-port PORT` towards our --port, or any UDT
    /// rendezvous sender), receive that one connection and exit. Stream mode unless --mode.
    #[arg(long, value_name = "HOST:PORT")]
    rendezvous: Option<String>,
    /// Encrypt with a key stretched from this secret (docs/encryption.md). The server then
    /// accepts encrypted and clear clients alike; the client requires encryption.
    #[arg(long)]
    secret: Option<String>,
    /// Cipher the client proposes with --secret.
    #[arg(long, value_enum, default_value_t = CipherArg::Aes256Gcm)]
    cipher: CipherArg,
    /// Maximum segment size, bytes of an IP packet (UDT_MSS; both ends must allow it, the
    /// handshake takes the smaller). The default is 1500.
    #[arg(long)]
    mss: Option<u32>,
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
    /// Give each parallel connection a UDP port (and I/O thread) of its own. By default they
    /// share the first connection's port, as UDT's multiplexing allows: one thread paces them
    /// all.
    #[arg(long)]
    separate_ports: bool,
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
    /// Encrypt with a key stretched from this secret (docs/encryption.md). The server then
    /// accepts encrypted and clear clients alike; the client requires encryption.
    #[arg(long)]
    secret: Option<String>,
    /// Cipher the client proposes with --secret.
    #[arg(long, value_enum, default_value_t = CipherArg::Aes256Gcm)]
    cipher: CipherArg,
    /// Maximum segment size, bytes of an IP packet (UDT_MSS; both ends must allow it, the
    /// handshake takes the smaller). The default is 1500.
    #[arg(long)]
    mss: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CipherArg {
    Aes256Gcm,
    Chacha20Poly1305,
}

/// `builder` with `--mss` applied, if given.
fn with_mss(builder: Builder, mss: Option<u32>) -> Builder {
    match mss {
        Some(m) => builder.mss(m),
        None => builder,
    }
}

/// The encryption of `udt perf` for `--secret`/`--cipher`.
fn perf_encryption(
    secret: Option<&str>,
    cipher: CipherArg,
    mode: udt::EncryptionMode,
) -> anyhow::Result<Option<udt::Encryption>> {
    let Some(secret) = secret.filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let c = match cipher {
        CipherArg::Aes256Gcm => udt::Cipher::Aes256Gcm,
        CipherArg::Chacha20Poly1305 => udt::Cipher::ChaCha20Poly1305,
    };
    Ok(Some(
        udt::Encryption::from_passphrase(secret.as_bytes(), mode)
            .map_err(|e| anyhow::anyhow!("--secret: {e}"))?
            .with_cipher(c),
    ))
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
    /// Message mode: messages not at their place in the concatenation, each checked as a
    /// whole run of the pattern since the receiver cannot see its place in the sequence. They
    /// overtook an earlier message (the sender cleared their in-order flag, as 4.11's
    /// `sendmsg` does by default) or follow one the sender dropped (TTL; then `bytes` falls
    /// short of what was sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    out_of_order_msgs: Option<u64>,
    /// Throughput of each connection, Mb/s (when there is more than one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    per_connection_mbps: Vec<f64>,
    /// Jain's fairness index of `per_connection_mbps` (when there is more than one).
    #[serde(skip_serializing_if = "Option::is_none")]
    jain: Option<f64>,
    /// The cipher of the (first) connection, when encrypted (client side).
    #[serde(skip_serializing_if = "Option::is_none")]
    cipher: Option<String>,
    /// The I/O path of the (first) connection's UDP port: offloads in use, datagrams per
    /// system call, paced wake-ups.
    #[serde(skip_serializing_if = "Option::is_none")]
    io: Option<String>,
}

/// "GSO on, GRO on, 31.2 datagrams per send call, 12.0 per receive call, 8123 paced
/// wake-ups": how a port moved its datagrams.
fn describe_io(s: &udt::IoStats) -> String {
    let on = |b: bool| if b { "on" } else { "off" };
    let per = |d: u64, c: u64| if c == 0 { 0.0 } else { d as f64 / c as f64 };
    format!(
        "GSO {}, GRO {}, {:.1} datagrams per send call, {:.1} per receive call, {} paced wake-ups{}",
        on(s.gso),
        on(s.gro),
        per(s.datagrams_sent, s.send_calls),
        per(s.datagrams_received, s.recv_calls),
        s.paced_wakeups,
        if s.gso_fallbacks > 0 {
            format!(", GSO refused by the device {} times", s.gso_fallbacks)
        } else {
            String::new()
        }
    )
}

/// Jain's fairness index of `xs`: 1 when all are equal, 1/n when one has everything.
fn jain(xs: &[f64]) -> Option<f64> {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    (xs.len() > 1 && squares > 0.0).then(|| sum * sum / (xs.len() as f64 * squares))
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

/// Bytes read per `recv` in stream mode.
const STREAM_READ: usize = 8 << 20;

/// Received data is compared with the pattern in pieces of this many bytes.
const CHECK_CHUNK: usize = 1 << 20;

/// How many bytes of `data`, received at stream offset `offset`, differ from the pattern:
/// one `memcmp` per [`CHECK_CHUNK`] against `table` (a [`pattern_table`] of that length), a
/// byte-by-byte count only where a piece differs.
fn mismatches(data: &[u8], offset: u64, table: &[u8]) -> u64 {
    let mut bad = 0;
    let mut at = offset;
    for piece in data.chunks(CHECK_CHUNK) {
        let from = (at % 251) as usize;
        let want = &table[from..from + piece.len()];
        if piece != want {
            bad += piece.iter().zip(want).filter(|(a, b)| a != b).count() as u64;
        }
        at += piece.len() as u64;
    }
    bad
}

/// True when `data` is a contiguous run of the pattern starting at any offset: the check for
/// a message delivered out of its sending order, whose offset the receiver cannot know.
fn is_pattern_run(data: &[u8], table: &[u8]) -> bool {
    data.first()
        .is_some_and(|&b| b < 251 && mismatches(data, u64::from(b), table) == 0)
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

fn mode_of(kind: SocketKind) -> Mode {
    match kind {
        SocketKind::Stream => Mode::Stream,
        SocketKind::Message => Mode::Message,
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

/// What one connection delivered to the server.
struct ConnResult {
    mode: Mode,
    bytes: u64,
    bad: u64,
    out_of_order_msgs: Option<u64>,
    seconds: f64,
    ended: Instant,
}

fn server(a: ServerArgs) -> anyhow::Result<()> {
    if let Some(peer) = &a.rendezvous {
        return rendezvous_server(&a, peer);
    }
    let builder = match a.mode {
        Some(m) => Builder::new().kind(kind(m)),
        None => Builder::new().accept_any_kind(true),
    };
    let builder = with_mss(builder, a.mss);
    let builder = builder.encryption(perf_encryption(
        a.secret.as_deref(),
        a.cipher,
        udt::EncryptionMode::Preferred,
    )?);
    let listener = builder
        .listen((a.bind.as_str(), a.port), 64)
        .with_context(|| format!("cannot listen on {}:{}", a.bind, a.port))?;
    warn_buffers(listener.udp_buffers());
    if !a.json {
        eprintln!(
            "udt perf server: listening on {} ({} mode)",
            listener.local_addr(),
            a.mode.map_or("stream and message", mode_name)
        );
    }
    // Each connection is served by its own thread, so parallel clients are measured side by
    // side; with --once the server stops when the first test's connections are all done.
    listener.set_nonblocking(true);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<anyhow::Result<ConnResult>>();
    let (mut active, mut session): (usize, Vec<ConnResult>) = (0, Vec::new());
    // Connections of the current test that ended in an error (reported as they happen).
    let mut failed = 0usize;
    let mut session_start: Option<(Instant, f64)> = None;
    let multi = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    loop {
        match listener.accept() {
            Ok((sock, peer)) => {
                active += 1;
                session_start.get_or_insert((Instant::now(), cpu_seconds()));
                if active > 1 {
                    multi.store(true, Ordering::Relaxed);
                }
                let (tx, interval, json) = (done_tx.clone(), a.interval, a.json);
                let multi = std::sync::Arc::clone(&multi);
                std::thread::spawn(move || {
                    let r = serve(&sock, peer, interval, json, &multi);
                    let _ = tx.send(r);
                });
                continue;
            }
            Err(udt::Error::WouldBlock) => {}
            Err(e) => return Err(e).context("accept failed"),
        }
        match done_rx.recv_timeout(Duration::from_millis(5)) {
            Ok(r) => {
                active -= 1;
                match r {
                    Ok(r) => session.push(r),
                    // One broken connection must not take the others' results with it.
                    Err(e) => {
                        failed += 1;
                        eprintln!("udt perf server: a connection failed: {e:#}");
                    }
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(e) => return Err(e).context("connection thread lost"),
        }
        if active > 0 {
            continue;
        }
        // Every connection of this test has ended.
        let (t0, cpu0) = session_start
            .take()
            .unwrap_or((Instant::now(), cpu_seconds()));
        let results = std::mem::take(&mut session);
        let bad: u64 = results.iter().map(|r| r.bad).sum();
        if results.len() > 1 {
            let out_of_order_msgs = results
                .iter()
                .filter_map(|r| r.out_of_order_msgs)
                .reduce(|a, b| a + b);
            let bytes: u64 = results.iter().map(|r| r.bytes).sum();
            let end = results.iter().map(|r| r.ended).max().unwrap_or(t0);
            let seconds = (end - t0).as_secs_f64();
            let per: Vec<f64> = results
                .iter()
                .map(|r| r.bytes as f64 * 8.0 / r.seconds.max(1e-9) / 1e6)
                .collect();
            let first = results[0].mode;
            let summary = Summary {
                role: "server",
                mode: if results.iter().all(|r| r.mode == first) {
                    mode_name(first)
                } else {
                    "mixed"
                },
                connections: results.len(),
                bytes,
                seconds,
                mbps: bytes as f64 * 8.0 / seconds.max(1e-9) / 1e6,
                retransmitted: 0,
                loss_pkts: 0,
                rtt_ms: 0.0,
                cpu_seconds: cpu_seconds() - cpu0,
                verified: bad == 0,
                mismatched_bytes: bad,
                out_of_order_msgs,
                jain: jain(&per),
                cipher: None,
                io: None,
                per_connection_mbps: per,
            };
            report(
                &summary,
                a.json,
                &format!("from {} connections", results.len()),
            );
        }
        multi.store(false, Ordering::Relaxed);
        let failed_now = std::mem::take(&mut failed);
        if a.once {
            if bad > 0 {
                bail!("{bad} received bytes did not match the expected pattern");
            }
            if failed_now > 0 {
                bail!("{failed_now} connection(s) failed");
            }
            return Ok(());
        }
    }
}

/// `udt perf server --rendezvous`: one connection, met rather than accepted.
fn rendezvous_server(a: &ServerArgs, peer: &str) -> anyhow::Result<()> {
    let builder = with_mss(Builder::new(), a.mss)
        .kind(kind(a.mode.unwrap_or(Mode::Stream)))
        .encryption(perf_encryption(
            a.secret.as_deref(),
            a.cipher,
            udt::EncryptionMode::Preferred,
        )?);
    if !a.json {
        eprintln!(
            "udt perf server: meeting {peer} in rendezvous mode from {}:{}",
            a.bind, a.port
        );
    }
    let sock = builder
        .rendezvous((a.bind.as_str(), a.port), peer)
        .with_context(|| format!("rendezvous with {peer} failed"))?;
    warn_buffers(sock.udp_buffers());
    let peer_addr = sock.peer_addr().context("rendezvous connection lost")?;
    let multi = std::sync::atomic::AtomicBool::new(false);
    let r = serve(&sock, peer_addr, a.interval, a.json, &multi)?;
    if r.bad > 0 {
        bail!(
            "{} received bytes did not match the expected pattern",
            r.bad
        );
    }
    Ok(())
}

/// Receives one connection and reports it (as its own summary).
fn serve(
    sock: &Socket,
    peer: std::net::SocketAddr,
    interval: f64,
    json: bool,
    multi: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<ConnResult> {
    let mode = mode_of(sock.kind());
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let Delivered {
        bytes,
        bad,
        out_of_order_msgs,
    } = receive(sock, mode, interval, json, multi)?;
    let out_of_order_msgs = (mode == Mode::Message).then_some(out_of_order_msgs);
    let seconds = start.elapsed().as_secs_f64();
    let stats = sock.stats(false).ok();
    let summary = Summary {
        role: "server",
        mode: mode_name(mode),
        connections: 1,
        bytes,
        seconds,
        mbps: bytes as f64 * 8.0 / seconds.max(1e-9) / 1e6,
        retransmitted: stats.map_or(0, |s| s.pkt_retrans_total),
        loss_pkts: stats.map_or(0, |s| s.pkt_rcv_loss_total),
        rtt_ms: stats.map_or(0.0, |s| s.ms_rtt),
        // The whole process's CPU while this connection ran (all connections share it).
        cpu_seconds: cpu_seconds() - cpu0,
        verified: bad == 0,
        mismatched_bytes: bad,
        out_of_order_msgs,
        per_connection_mbps: Vec::new(),
        jain: None,
        cipher: None,
        io: Some(describe_io(&sock.io_stats())),
    };
    report(&summary, json, &format!("from {peer}"));
    Ok(ConnResult {
        mode,
        bytes,
        bad,
        out_of_order_msgs,
        seconds,
        ended: Instant::now(),
    })
}

/// What one connection delivered.
struct Delivered {
    bytes: u64,
    /// Bytes that did not match the pattern.
    bad: u64,
    /// Messages delivered ahead of their turn (see [`Summary::out_of_order_msgs`]).
    out_of_order_msgs: u64,
}

/// Reads until the peer closes, verifying every byte. Interval reports are skipped while
/// several connections run (`multi`), so that their lines do not interleave.
fn receive(
    sock: &Socket,
    mode: Mode,
    interval: f64,
    quiet: bool,
    multi: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<Delivered> {
    // A message is read whole or not at all, so in message mode the buffer takes the largest
    // one the connection can deliver: its receive buffer (pages are touched only as used).
    let payload = (sock.mss() as usize).saturating_sub(
        udt_proto::config::IP_UDP_HEADER_LEN as usize + udt_proto::wire::HEADER_LEN,
    );
    let largest_msg = sock.recv_buffer_pkts() as usize * payload;
    let mut buf = vec![
        0u8;
        match mode {
            Mode::Stream => STREAM_READ,
            Mode::Message => largest_msg.max(STREAM_READ),
        }
    ];
    let table = pattern_table(CHECK_CHUNK);
    let mut got = 0u64;
    let mut bad = 0u64;
    let mut out_of_order_msgs = 0u64;
    let start = Instant::now();
    let mut next_report = interval;
    let mut last_bytes = 0u64;
    let mut last_report = 0.0f64;
    loop {
        // Bytes of a message that did not fit in `buf` and were discarded (never, given its
        // size, but a peer's message is not to be trusted blindly).
        let mut cut = 0;
        let n = match mode {
            Mode::Stream => sock.recv(&mut buf).context("receive failed")?,
            Mode::Message => match sock.recv_msg(&mut buf) {
                Ok(m) => {
                    cut = m.msg_len - m.copied;
                    m.copied
                }
                Err(udt::Error::ConnectionLost) => 0,
                Err(e) => return Err(e).context("receive failed"),
            },
        };
        if n == 0 {
            return Ok(Delivered {
                bytes: got,
                bad,
                out_of_order_msgs,
            });
        }
        let wrong = mismatches(&buf[..n], got, &table);
        if wrong > 0 && mode == Mode::Message && cut == 0 && is_pattern_run(&buf[..n], &table) {
            // Not where the concatenation has it, but intact: a message that overtook an
            // earlier one (which will then arrive out of place too, and be checked the same
            // way). The byte count still has to add up.
            out_of_order_msgs += 1;
        } else {
            bad += wrong;
        }
        got += n as u64;
        if cut > 0 {
            eprintln!(
                "udt perf server: a {}-byte message was cut to the {}-byte read buffer; \
                 {cut} bytes unchecked",
                n + cut,
                buf.len()
            );
            // Unverified, and skipped so that later messages are checked at their offsets.
            bad += cut as u64;
            got += cut as u64;
        }
        let t = start.elapsed().as_secs_f64();
        if interval > 0.0 && t >= next_report && !quiet && !multi.load(Ordering::Relaxed) {
            // Over the time since the last line, not the nominal interval: a line is printed
            // only when a read returns, and after a stall that is well past the interval.
            eprintln!(
                "{:6.1} s  {:10.1} MB  {:8.1} Mb/s",
                t,
                got as f64 / 1e6,
                (got - last_bytes) as f64 * 8.0 / (t - last_report).max(1e-9) / 1e6
            );
            last_bytes = got;
            last_report = t;
            next_report = t + interval;
        }
    }
}

fn client(a: ClientArgs) -> anyhow::Result<()> {
    if a.parallel == 0 {
        bail!("--parallel must be at least 1");
    }
    let mut builder = with_mss(Builder::new(), a.mss)
        .kind(kind(a.mode))
        .congestion_control_by_name(&a.cc)
        .with_context(|| format!("unknown congestion control {:?}", a.cc))?;
    if a.mode == Mode::Message && a.msg_size == 0 {
        bail!("--msg-size must be positive");
    }
    builder = builder
        .linger(Some(DRAIN_LIMIT))
        .encryption(perf_encryption(
            a.secret.as_deref(),
            a.cipher,
            udt::EncryptionMode::Required,
        )?);
    let mut cipher = None;
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
    let sending_done = Arc::new(AtomicU64::new(0));
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let mut handles = Vec::new();
    let mut conns: Vec<Arc<Progress>> = Vec::new();
    let mss = f64::from(builder.connection_config().mss);
    for i in 0..a.parallel {
        let sock = if a.rendezvous {
            builder.rendezvous(("0.0.0.0", a.local_port + i as u16), a.server.as_str())
        } else {
            builder.connect(a.server.as_str())
        }
        .with_context(|| format!("cannot connect to {}", a.server))?;
        if i == 0 {
            warn_buffers(sock.udp_buffers());
            cipher = sock.cipher().map(|c| format!("{c:?}"));
            if !a.separate_ports && !a.rendezvous {
                builder = builder.reuse_addr(true).local_addr(sock.local_addr());
            }
        }
        let progress = Arc::new(Progress::new(sock)?);
        conns.push(Arc::clone(&progress));
        let sent = Arc::clone(&sent);
        let sending_done = Arc::clone(&sending_done);
        let (mode, msg_size) = (a.mode, a.msg_size);
        handles.push(std::thread::spawn(
            move || -> anyhow::Result<(udt::PerfStats, u64, f64, bool, udt::IoStats)> {
                let conn_bytes = send(
                    &progress,
                    mode,
                    msg_size,
                    per_conn_bytes,
                    duration.map(|d| start + d),
                    &sent,
                )?;
                sending_done.fetch_add(1, Ordering::Relaxed);
                // The statistics count retransmissions until the last byte is acknowledged,
                // so wait for the send buffer to drain before reading them (close lingers
                // the same way, but the socket is gone afterwards). The interval reports keep
                // showing what is acknowledged meanwhile: a slow drain is not a stall.
                let drain_until = Instant::now() + DRAIN_LIMIT;
                let mut stats = progress.refresh()?;
                while stats.byte_avail_snd_buf < progress.empty && Instant::now() < drain_until {
                    std::thread::sleep(Duration::from_millis(1));
                    stats = progress.refresh()?;
                }
                let acknowledged = stats.byte_avail_snd_buf >= progress.empty;
                let io = progress.sock.io_stats();
                progress.sock.close()?;
                Ok((
                    stats,
                    conn_bytes,
                    start.elapsed().as_secs_f64(),
                    acknowledged,
                    io,
                ))
            },
        ));
    }
    let mut next_report = a.interval;
    let mut last_acked = 0u64;
    let mut last_report = 0.0f64;
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(20));
        let t = start.elapsed().as_secs_f64();
        if a.interval > 0.0 && !a.json && t >= next_report {
            // Every line reads each connection's statistics afresh, here: a sender thread
            // blocked in `send` (a full send buffer waits for an eighth of it to be
            // acknowledged, which at start-up or at a low rate takes seconds) would leave
            // them stale, and a line that repeats old values makes a slow start look like a
            // stall.
            let fresh: Vec<_> = conns.iter().map(|c| c.refresh().ok()).collect();
            let now_acked: u64 = conns.iter().map(|c| c.acked.load(Ordering::Relaxed)).sum();
            let now_sent = sent.load(Ordering::Relaxed);
            let draining = sending_done.load(Ordering::Relaxed) as usize == a.parallel;
            eprintln!(
                "{:6.1} s  {:10.1} MB acknowledged {:8.1} Mb/s  {:8.1} MB outstanding{}{}",
                t,
                now_acked as f64 / 1e6,
                now_acked.saturating_sub(last_acked) as f64 * 8.0
                    / (t - last_report).max(1e-9)
                    / 1e6,
                now_sent.saturating_sub(now_acked) as f64 / 1e6,
                if draining { " (draining)" } else { "" },
                fresh[0]
                    .as_ref()
                    .map_or_else(String::new, |s| describe_conn(s, mss))
            );
            last_acked = now_acked;
            last_report = t;
            next_report = t + a.interval;
        }
    }
    let mut retrans = 0;
    let mut loss = 0;
    let mut rtt = 0.0f64;
    let mut per = Vec::new();
    let mut all_acknowledged = true;
    let mut io = None;
    for h in handles {
        let (s, conn_bytes, conn_seconds, acknowledged, conn_io) = h
            .join()
            .map_err(|_| anyhow::anyhow!("sender thread panicked"))??;
        io.get_or_insert_with(|| describe_io(&conn_io));
        per.push(conn_bytes as f64 * 8.0 / conn_seconds.max(1e-9) / 1e6);
        all_acknowledged &= acknowledged;
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
        // The sender cannot see the receiver's check; it vouches only for delivery: every
        // byte acknowledged by the receiver before the drain limit.
        verified: all_acknowledged,
        mismatched_bytes: 0,
        out_of_order_msgs: None,
        jain: jain(&per),
        cipher,
        io,
        per_connection_mbps: if per.len() > 1 { per } else { Vec::new() },
    };
    report(&summary, a.json, &format!("to {}", a.server));
    if !all_acknowledged {
        bail!(
            "the receiver did not acknowledge every byte within {} s",
            DRAIN_LIMIT.as_secs()
        );
    }
    Ok(())
}

/// Longest wait for the peer to acknowledge everything before the final statistics are read
/// (the linger time of the client's sockets).
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// One connection of the client: its socket, the bytes its sender thread has handed it, and
/// how many of them its receiver has acknowledged (the bytes handed over less those the send
/// buffer still holds), refreshed from its statistics by whichever thread reads them.
struct Progress {
    sock: Socket,
    /// Free send-buffer bytes of the idle connection.
    empty: u64,
    /// Bytes handed to the socket so far; counted after each `send` returns, so never more
    /// than the socket holds or has delivered.
    queued: AtomicU64,
    /// The most this connection has been seen to have acknowledged, bytes.
    acked: AtomicU64,
}

impl Progress {
    fn new(sock: Socket) -> anyhow::Result<Self> {
        let empty = sock.stats(false)?.byte_avail_snd_buf;
        Ok(Progress {
            sock,
            empty,
            queued: AtomicU64::new(0),
            acked: AtomicU64::new(0),
        })
    }

    /// Reads fresh statistics and records what they show acknowledged.
    fn refresh(&self) -> udt::Result<udt::PerfStats> {
        // `queued` before the statistics: bytes a send adds after this load are in the
        // buffer's count but not in `queued`, which can only make the figure low, never
        // high; the running maximum hides that.
        let queued = self.queued.load(Ordering::Acquire);
        let s = self.sock.stats(false)?;
        let held = self.empty.saturating_sub(s.byte_avail_snd_buf);
        self.acked
            .fetch_max(queued.saturating_sub(held), Ordering::Relaxed);
        Ok(s)
    }
}

/// Sends the pattern until `limit` bytes or `until`, counting into `sent`; returns the bytes
/// this connection sent.
fn send(
    conn: &Progress,
    mode: Mode,
    msg_size: usize,
    limit: Option<u64>,
    until: Option<Instant>,
    sent: &AtomicU64,
) -> anyhow::Result<u64> {
    let sock = &conn.sock;
    let chunk = match mode {
        Mode::Stream => 1 << 20,
        Mode::Message => msg_size,
    };
    let table = pattern_table(chunk);
    let mut off = 0u64;
    loop {
        if limit.is_some_and(|l| off >= l) || until.is_some_and(|u| Instant::now() >= u) {
            return Ok(off);
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
        conn.queued.store(off, Ordering::Release);
    }
}

/// "rate R Mb/s, window W, in flight F, RTT T ms, link B Mb/s, retransmitted N" of the
/// first connection, from statistics `s` read for this line.
fn describe_conn(s: &udt::PerfStats, mss: f64) -> String {
    let rate = if s.us_pkt_snd_period > 0.0 {
        mss * 8.0 / s.us_pkt_snd_period
    } else {
        0.0
    };
    format!(
        "  [conn 1: rate {rate:.0} Mb/s, window {}, in flight {}, RTT {:.1} ms, link {:.0} Mb/s, retransmitted {}]",
        s.pkt_congestion_window.min(s.pkt_flow_window),
        s.pkt_flight_size,
        s.ms_rtt,
        s.mbps_bandwidth,
        s.pkt_retrans_total
    )
}

fn report(s: &Summary, json: bool, what: &str) {
    if json {
        println!("{}", serde_json::to_string(s).unwrap_or_default());
    } else {
        eprintln!(
            "{} {what}: {} bytes in {:.2} s = {:.1} Mb/s, {} retransmitted, RTT {:.2} ms, CPU {:.2} s{}{}",
            s.role,
            s.bytes,
            s.seconds,
            s.mbps,
            s.retransmitted,
            s.rtt_ms,
            s.cpu_seconds,
            match &s.io {
                Some(io) => format!(" [{io}]"),
                None => String::new(),
            },
            if s.role == "server" {
                let early = match s.out_of_order_msgs {
                    Some(k) if k > 0 => format!(" ({k} messages out of order)"),
                    _ => String::new(),
                };
                if s.verified {
                    format!(", all bytes verified{early}")
                } else {
                    format!(", {} BAD BYTES{early}", s.mismatched_bytes)
                }
            } else {
                String::new()
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatches_are_counted_across_check_pieces() {
        let offset = 1_000_003u64;
        let len = 3 * CHECK_CHUNK + 17;
        let mut data: Vec<u8> = (0..len as u64).map(|i| expected(offset + i)).collect();
        let table = pattern_table(CHECK_CHUNK);
        assert_eq!(mismatches(&data, offset, &table), 0);
        // One wrong byte in the first piece, two straddling a piece boundary, one at the end.
        for at in [5, CHECK_CHUNK - 1, CHECK_CHUNK, len - 1] {
            data[at] = data[at].wrapping_add(1);
        }
        assert_eq!(mismatches(&data, offset, &table), 4);
        // A run of the pattern from any offset is recognised as one; a damaged one is not.
        let run: Vec<u8> = (0..5000u64).map(|i| expected(777_777 + i)).collect();
        assert!(is_pattern_run(&run, &table));
        let mut damaged = run.clone();
        damaged[4321] ^= 0x40;
        assert!(!is_pattern_run(&damaged, &table));
        assert!(!is_pattern_run(&[251, 0, 1], &table));
        // The right bytes at the wrong offset are all wrong but one in 251.
        let shifted = mismatches(&data[..1000], offset + 1, &table);
        assert!(shifted >= 990, "{shifted}");
    }
}
