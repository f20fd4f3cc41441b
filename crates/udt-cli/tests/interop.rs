//! Interoperability with the reference implementation, UDT4 4.11 (Debian's `libudt`).
//!
//! Part of `cargo test --workspace` (so of `scripts/test.sh` and CI), which installs what the
//! suite needs (`libudt-dev`, `g++`, `python3`) on a fresh Debian machine.
//!
//! Each test runs our side (the `udt` binary, or the `udt` library in this process) against
//! `interop/target/udt4-peer` (built from `interop/peer.cpp` by `interop/build.sh`, which
//! installs `g++` and `libudt-dev` if they are missing), sometimes through `interop/relay.py`,
//! an impairing UDP relay (loss, reordering, duplication). The payload is the `udt perf`
//! pattern (byte i of the stream is i mod 251) and the receiving side verifies every byte; the
//! tests also check byte counts and, in message mode, message boundaries.
//!
//! High-rate tests take a process-wide lock so that throughput figures are not disturbed by
//! other tests; the slow lossy ones share it and run side by side. Every child process is
//! bounded by a timeout, killed when it runs over, and killed if the test thread ends (Drop and
//! PR_SET_PDEATHSIG), so nothing is left behind.
//!
//! Results (times, Mb/s) are printed (`-- --nocapture`) and appended to
//! `interop/target/results.jsonl`. `UDT_INTEROP_BIN=path/to/udt` tests another build of our
//! binary (e.g. the release one) instead of the one Cargo built for the tests, and
//! `UDT_INTEROP_PEER=path` another build of the peer (scripts/test-c.sh passes `peer.cpp` built
//! against our C++ drop-in, so the suite then checks the drop-in against our engine).
//!
//! Both I/O paths of our binary meet UDT4 in every run: about half of the tests (chosen by a
//! hash of the test's name) start our `udt` processes with `UDT_GSO=off` (plain
//! `sendmmsg`/`recvmmsg`), the others with GSO and GRO on. `UDT_INTEROP_OFFLOAD=on` or `off`
//! runs every test one way.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::UdpSocket;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use udt::{Builder, Socket, SocketKind};

const MB: u64 = 1_000_000;
const GB: u64 = 1_000_000_000;

// ---------------------------------------------------------------------------------------------
// Locations and tools

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the UDT4 peer once (interop/build.sh) and returns its path; `UDT_INTEROP_PEER`
/// names another build of `interop/peer.cpp` instead (the C++ drop-in's, from
/// scripts/test-c.sh).
fn peer_bin() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("UDT_INTEROP_PEER") {
            let p = PathBuf::from(p);
            return if p.is_file() {
                Ok(p)
            } else {
                Err(format!("UDT_INTEROP_PEER={} is not a file", p.display()))
            };
        }
        let script = root().join("interop/build.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}):\n{}{}",
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let path = PathBuf::from(stdout.lines().last().unwrap_or("").trim());
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!("build.sh did not name a binary: {stdout:?}"))
        }
    })
    .clone()
    .unwrap_or_else(|e| panic!("cannot build the UDT4 peer: {e}"))
}

fn udt_bin() -> PathBuf {
    std::env::var_os("UDT_INTEROP_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_udt")))
}

fn relay_script() -> PathBuf {
    root().join("interop/relay.py")
}

// ---------------------------------------------------------------------------------------------
// Scheduling: high-rate tests run alone, slow ones side by side.

static LOCK: RwLock<()> = RwLock::new(());

fn exclusive() -> RwLockWriteGuard<'static, ()> {
    LOCK.write().unwrap_or_else(|e| e.into_inner())
}

fn shared() -> RwLockReadGuard<'static, ()> {
    LOCK.read().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Ports

/// A UDP port that is free now, distinct from every other one handed out by this process (the
/// range depends on the process id, so concurrent runs rarely collide either).
fn port() -> u16 {
    static NEXT: OnceLock<AtomicU16> = OnceLock::new();
    let next = NEXT.get_or_init(|| AtomicU16::new(20000 + (std::process::id() % 400) as u16 * 25));
    loop {
        let p = next.fetch_add(1, Ordering::Relaxed);
        if !(20000..30000).contains(&p) {
            next.store(20000, Ordering::Relaxed);
            continue;
        }
        if !udp_bound(p) && UdpSocket::bind(("0.0.0.0", p)).is_ok() {
            return p;
        }
    }
}

/// Is UDP `port` bound by anyone? (Read from /proc/net/udp and udp6, without touching the port:
/// probing by binding it could make the server's own bind fail.)
fn udp_bound(port: u16) -> bool {
    let want = format!(":{port:04X} ");
    ["/proc/net/udp", "/proc/net/udp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| format!("{a} ").ends_with(&want))
            })
        })
    })
}

/// Waits until something has bound UDP `port` (a server is up).
fn wait_bound(port: u16, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if udp_bound(port) {
            // Give the server a moment to enter accept() after binding.
            thread::sleep(Duration::from_millis(100));
            return;
        }
        thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing bound UDP port {port} within {timeout:?}");
}

fn local(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

// ---------------------------------------------------------------------------------------------
// Child processes

/// A child process whose output is collected by reader threads; killed on drop.
struct Proc {
    name: String,
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    lines: mpsc::Receiver<String>,
    readers: Vec<JoinHandle<()>>,
    started: Instant,
}

/// How a child process ended.
#[derive(Debug)]
struct Finished {
    name: String,
    /// None: it ran over its time and was killed.
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
    /// From spawning to exit.
    elapsed: Duration,
}

impl Finished {
    fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The last JSON report line of stdout (the one with "bytes"; events are skipped).
    fn json(&self) -> Value {
        self.stdout
            .lines()
            .rev()
            .filter(|l| l.trim_start().starts_with('{'))
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v.get("bytes").is_some())
            .unwrap_or_else(|| {
                panic!(
                    "{}: no JSON report in its output\n{}",
                    self.name,
                    self.dump()
                )
            })
    }

    fn dump(&self) -> String {
        format!(
            "--- {} ({:?} after {:.1} s)\nstdout:\n{}\nstderr:\n{}",
            self.name,
            self.status,
            self.elapsed.as_secs_f64(),
            self.stdout,
            self.stderr
        )
    }
}

/// Panics with every process's output unless all of them exited with status 0.
fn all_ok(procs: &[&Finished]) {
    if procs.iter().any(|p| !p.success()) {
        let failed: Vec<_> = procs
            .iter()
            .filter(|p| !p.success())
            .map(|p| p.name.as_str())
            .collect();
        fail(&format!("{} failed", failed.join(", ")), procs);
    }
}

/// Panics with `msg` and every process's output.
fn fail(msg: &str, procs: &[&Finished]) -> ! {
    let dumps: Vec<String> = procs.iter().map(|p| p.dump()).collect();
    let setup_failed = msg.contains("did not finish")
        || procs.iter().any(|p| {
            p.stderr.contains("UDT error 1001")
                || p.stderr.contains("connection timed out")
                || p.status.is_none()
        });
    let hint = if setup_failed {
        "\nhint: a connection that never starts (UDT4 error 1001, or a hang before any data) was \
         once a start-up race of our runtime, pinned by \
         `startup_race_udt4_clients_to_our_servers`"
    } else {
        ""
    };
    panic!("{msg}{hint}\n{}", dumps.join("\n"));
}

fn reader<R: Read + Send + 'static>(
    r: R,
    sink: Arc<Mutex<String>>,
    lines: Option<mpsc::Sender<String>>,
) -> JoinHandle<()> {
    thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            {
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
            if let Some(tx) = &lines {
                let _ = tx.send(line);
            }
        }
    })
}

/// Whether the current test runs our processes with the offloads forced off: as
/// `UDT_INTEROP_OFFLOAD` says (`on`, `off`), else for about half of the tests, by a hash of
/// the test's name (libtest names each test's thread after it), so that a given test always
/// takes the same path.
fn offloads_off() -> bool {
    match std::env::var("UDT_INTEROP_OFFLOAD").as_deref() {
        Ok("on") => false,
        Ok("off") => true,
        _ => {
            let name = thread::current().name().unwrap_or("").to_owned();
            // FNV-1a: stable across runs and Rust versions, unlike `DefaultHasher`.
            let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
            h & 1 == 1
        }
    }
}

impl Proc {
    fn spawn(name: &str, program: &Path, args: &[String]) -> Proc {
        Proc::spawn_env(name, program, args, &[])
    }

    fn spawn_env(name: &str, program: &Path, args: &[String], env: &[(&str, &str)]) -> Proc {
        let mut cmd = Command::new(program);
        cmd.envs(env.iter().copied());
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Error messages, not backtraces, in the children's stderr.
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE");
        // SAFETY: prctl is async-signal-safe; the child is killed if this thread dies.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({}): {e}", program.display()));
        eprintln!(
            "[interop] start {name}: {}{} {}",
            env.iter()
                .map(|(k, v)| format!("{k}={v} "))
                .collect::<String>(),
            program.display(),
            args.join(" ")
        );
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, lines) = mpsc::channel();
        let readers = vec![
            reader(child.stdout.take().unwrap(), Arc::clone(&stdout), Some(tx)),
            reader(child.stderr.take().unwrap(), Arc::clone(&stderr), None),
        ];
        Proc {
            name: name.to_owned(),
            child,
            stdout,
            stderr,
            lines,
            readers,
            started: Instant::now(),
        }
    }

    fn udt4(name: &str, args: &[&str]) -> Proc {
        Proc::spawn(name, &peer_bin(), &strings(args))
    }

    fn ours(name: &str, args: &[&str]) -> Proc {
        let env: &[(&str, &str)] = if offloads_off() {
            &[("UDT_GSO", "off")]
        } else {
            &[]
        };
        Proc::spawn_env(name, &udt_bin(), &strings(args), env)
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for a stdout line satisfying `pred`.
    fn wait_line(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.lines.recv_timeout(left) {
                Ok(l) if pred(&l) => return Some(l),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// SIGKILL (for the broken-connection tests).
    fn kill(&mut self) {
        let _ = self.child.kill();
    }

    /// Waits up to `timeout` for the process to exit; kills it if it does not.
    fn wait(mut self, timeout: Duration) -> Finished {
        let deadline = Instant::now() + timeout;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() >= deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
                Ok(None) => thread::sleep(Duration::from_millis(20)),
                Err(e) => panic!("{}: wait failed: {e}", self.name),
            }
        };
        let elapsed = self.started.elapsed();
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let take = |m: &Arc<Mutex<String>>| m.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Finished {
            name: self.name.clone(),
            status,
            stdout: take(&self.stdout),
            stderr: take(&self.stderr),
            elapsed,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The impairing relay on 127.0.0.1 (a free port chosen by the system) towards `target`.
struct Relay {
    proc: Proc,
    port: u16,
}

impl Relay {
    fn start(target: u16, loss: f64, reorder: f64, dup: f64, seed: u64) -> Relay {
        let args = vec![
            relay_script().display().to_string(),
            "--port".into(),
            "0".into(),
            "--target".into(),
            local(target),
            "--loss".into(),
            loss.to_string(),
            "--reorder".into(),
            reorder.to_string(),
            "--reorder-ms".into(),
            "1-5".into(),
            "--dup".into(),
            dup.to_string(),
            "--seed".into(),
            seed.to_string(),
            // A 4.11 client whose handshake reply is lost may report success without being
            // connected (spec 5.4 item 8): a weakness of 4.11 itself, not what we test here.
            "--spare-handshake".into(),
            // UDT sends one Shutdown and never repeats it; if it is lost, the peer learns of the
            // close only from the EXP timeout (≈ 46 s later, for 4.11 as for us) and reports a
            // broken connection instead of end of stream. That is the protocol's behaviour, not
            // what these tests check, and it would make them depend on the seed.
            "--spare-shutdown".into(),
            "--idle-timeout".into(),
            "20".into(),
            "--max-time".into(),
            "600".into(),
        ];
        let proc = Proc::spawn("relay", Path::new("python3"), &args);
        let ready = proc
            .wait_line(Duration::from_secs(10), |l| l.contains("\"ready\""))
            .unwrap_or_else(|| panic!("the relay did not start"));
        let v: Value = serde_json::from_str(&ready).expect("relay ready line");
        let port = v["port"].as_u64().expect("relay port") as u16;
        Relay { proc, port }
    }

    /// Stops the relay and returns its counters.
    fn stop(self) -> Value {
        // SAFETY: plain kill(2) of our own child.
        unsafe {
            libc::kill(self.proc.child.id() as i32, libc::SIGTERM);
        }
        let f = self.proc.wait(Duration::from_secs(10));
        f.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["event"] == "done")
            .unwrap_or(Value::Null)
    }
}

// ---------------------------------------------------------------------------------------------
// Reports

fn record(test: &str, v: Value) {
    eprintln!("[interop] RESULT {test}: {v}");
    let dir = root().join("interop/target");
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("results.jsonl"))
    {
        let line = json!({ "test": test, "result": v });
        let _ = writeln!(f, "{line}");
    }
}

/// Checks a receiver's JSON report: every byte verified and exactly `bytes` of them.
fn assert_received(rx: &Finished, bytes: u64) -> Value {
    let j = rx.json();
    assert_eq!(
        j["verified"],
        true,
        "{}: not verified\n{}",
        rx.name,
        rx.dump()
    );
    assert_eq!(
        j["mismatched_bytes"],
        0,
        "{}: bad bytes\n{}",
        rx.name,
        rx.dump()
    );
    assert_eq!(
        j["bytes"].as_u64(),
        Some(bytes),
        "{}: wrong byte count\n{}",
        rx.name,
        rx.dump()
    );
    j
}

fn mbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 * 8.0 / secs.max(1e-9) / 1e6
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

// ---------------------------------------------------------------------------------------------
// Our side in this process (the `udt` library), for what the CLI cannot do: checking message
// boundaries, TTL, one connection in both directions.

/// Message sizes: fixed, or message k has 1 + (k * 2654435761 mod max) bytes (the peer's
/// `--vary-sizes`).
#[derive(Clone, Copy, Debug)]
enum Sizes {
    Fixed(usize),
    Vary(usize),
}

impl Sizes {
    fn of(self, k: u64) -> usize {
        match self {
            Sizes::Fixed(m) => m,
            Sizes::Vary(m) => 1 + (k.wrapping_mul(2_654_435_761) % m as u64) as usize,
        }
    }

    fn max(self) -> usize {
        match self {
            Sizes::Fixed(m) | Sizes::Vary(m) => m,
        }
    }
}

/// How a receiver checks messages.
#[derive(Clone, Copy, Debug)]
enum MsgCheck {
    /// Stream: only the concatenation.
    None,
    /// Every message in order, with exactly the sender's sizes (the last may be cut to the
    /// total).
    Exact(Sizes),
    /// Messages of `m` bytes may be missing (TTL): each delivered one must be a whole message
    /// of the pattern (starting at a multiple of `m`); with `in_order`, at increasing indexes.
    Drops { m: usize, in_order: bool },
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len + 251).map(|i| (i % 251) as u8).collect()
}

#[derive(Debug, Default, Clone)]
struct RecvReport {
    bytes: u64,
    mismatched: u64,
    messages: u64,
    bad_messages: u64,
    dropped_messages: u64,
    seconds: f64,
    /// Why receiving stopped, if not the expected end.
    end: Option<String>,
}

impl RecvReport {
    fn json(&self) -> Value {
        json!({
            "bytes": self.bytes, "mismatched_bytes": self.mismatched, "messages": self.messages,
            "bad_messages": self.bad_messages, "dropped_messages": self.dropped_messages,
            "seconds": round2(self.seconds), "mbps": round2(mbps(self.bytes, self.seconds)),
            "end": self.end,
        })
    }
}

/// Receives (stream or messages) until the peer closes or `limit` bytes, verifying everything.
fn lib_recv(sock: &Socket, kind: SocketKind, limit: Option<u64>, check: MsgCheck) -> RecvReport {
    let mut r = RecvReport::default();
    let size = match check {
        MsgCheck::None => 1 << 20,
        MsgCheck::Exact(s) => s.max() + 1,
        MsgCheck::Drops { m, .. } => m + 1,
    };
    let mut buf = vec![0u8; size.max(1 << 16)];
    let start = Instant::now();
    let mut last = start;
    let mut next_k = 0u64;
    let mut short_seen = false;
    while limit.is_none_or(|l| r.bytes < l) {
        let n = match kind {
            SocketKind::Stream => match sock.recv(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    r.end = Some(e.to_string());
                    break;
                }
            },
            _ => match sock.recv_msg(&mut buf) {
                Ok(m) => {
                    if m.copied != m.msg_len {
                        r.bad_messages += 1; // larger than the largest message sent
                    }
                    m.copied
                }
                Err(udt::Error::ConnectionLost) => break,
                Err(e) => {
                    r.end = Some(e.to_string());
                    break;
                }
            },
        };
        last = Instant::now();
        let data = &buf[..n];
        match check {
            MsgCheck::None | MsgCheck::Exact(_) => {
                let bad = data
                    .iter()
                    .enumerate()
                    .filter(|&(j, &b)| b != ((r.bytes + j as u64) % 251) as u8)
                    .count() as u64;
                r.mismatched += bad;
                if let MsgCheck::Exact(sizes) = check {
                    r.messages += 1;
                    let want = sizes.of(next_k);
                    let bad_len = n > want || (n < want && short_seen);
                    if bad > 0 || bad_len || short_seen || n == 0 {
                        r.bad_messages += 1;
                    }
                    if n < want {
                        short_seen = true; // only the very last message may be cut
                    }
                    next_k += 1;
                }
            }
            MsgCheck::Drops { m, in_order } => {
                r.messages += 1;
                let mut bad = n == 0 || n > m || short_seen;
                if n < m {
                    short_seen = true;
                }
                let b0 = data.first().copied().unwrap_or(0) as u64;
                let mism = data
                    .iter()
                    .enumerate()
                    .filter(|&(j, &b)| b as u64 != (b0 + j as u64) % 251)
                    .count() as u64;
                r.mismatched += mism;
                bad |= mism > 0;
                let from = if in_order { next_k } else { 0 };
                match (from..from + 251).find(|k| (k * m as u64) % 251 == b0) {
                    Some(k) if in_order => {
                        r.dropped_messages += k - next_k;
                        next_k = k + 1;
                    }
                    Some(_) => {}
                    None => bad = true,
                }
                if bad {
                    r.bad_messages += 1;
                }
            }
        }
        r.bytes += n as u64;
    }
    r.seconds = (last - start).as_secs_f64();
    r
}

/// Sends the pattern: `total` bytes as a stream, or as messages of `sizes`.
fn lib_send(
    sock: &Socket,
    kind: SocketKind,
    total: u64,
    sizes: Sizes,
    ttl: Option<Duration>,
    in_order: bool,
    pace: Option<Duration>,
) -> udt::Result<(u64, u64)> {
    let chunk = match kind {
        SocketKind::Stream => 1 << 20,
        _ => sizes.max(),
    };
    let table = pattern(chunk);
    let (mut off, mut k) = (0u64, 0u64);
    while off < total {
        let want = match kind {
            SocketKind::Stream => chunk,
            _ => sizes.of(k),
        }
        .min((total - off) as usize);
        let s = (off % 251) as usize;
        let data = &table[s..s + want];
        let n = match kind {
            SocketKind::Stream => sock.send(data)?,
            _ => {
                sock.send_msg(data, ttl, in_order)?;
                k += 1;
                want
            }
        };
        off += n as u64;
        if let Some(p) = pace {
            thread::sleep(p);
        }
    }
    Ok((off, k))
}

fn builder(kind: SocketKind) -> Builder {
    Builder::new()
        .kind(kind)
        .linger(Some(Duration::from_secs(60)))
        .read_timeout(Some(Duration::from_secs(60)))
        .write_timeout(Some(Duration::from_secs(60)))
}

/// Runs `f` on its own thread and gives up after `timeout` (the thread is then abandoned: its
/// blocking calls end with the process).
fn bounded<T: Send + 'static>(
    what: &str,
    timeout: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<Option<T>> {
    let what = what.to_owned();
    thread::spawn(move || {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let _ = tx.send(f());
        });
        let r = rx.recv_timeout(timeout).ok();
        if r.is_none() {
            eprintln!("[interop] {what}: did not finish within {timeout:?}");
        }
        r
    })
}

/// The result of a [`bounded`] closure, or why there is none.
fn join<T>(h: JoinHandle<Option<Result<T, String>>>, what: &str) -> Result<T, String> {
    match h.join() {
        Err(_) => Err(format!("{what}: panicked")),
        Ok(None) => Err(format!("{what}: did not finish in time")),
        Ok(Some(r)) => r.map_err(|e| format!("{what}: {e}")),
    }
}

// ---------------------------------------------------------------------------------------------
// Stream, loopback, >= 1 GB each way

#[test]
fn stream_ours_to_udt4_1gb() {
    let _g = exclusive();
    let p = port();
    let n = GB.to_string();
    let srv = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--bytes",
            &n,
            "--timeout",
            "400",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let cli = Proc::ours(
        "our client",
        &[
            "perf",
            "client",
            &local(p),
            "--bytes",
            &n,
            "--json",
            "--interval",
            "0",
        ],
    );
    let c = cli.wait(Duration::from_secs(360));
    let s = srv.wait(Duration::from_secs(30));
    all_ok(&[&c, &s]);
    let sj = assert_received(&s, GB);
    let cj = c.json();
    record(
        "stream_ours_to_udt4_1gb",
        json!({"bytes": GB, "client_seconds": cj["seconds"], "client_mbps": cj["mbps"],
               "server_seconds": sj["seconds"], "server_mbps": sj["mbps"],
               "retransmitted": cj["retransmitted"], "wall_seconds": round2(c.elapsed.as_secs_f64())}),
    );
}

#[test]
fn stream_udt4_to_ours_1gb() {
    let _g = exclusive();
    let p = port();
    let n = GB.to_string();
    let srv = Proc::ours(
        "our server",
        &[
            "perf",
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--json",
            "--interval",
            "0",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let cli = Proc::udt4(
        "udt4 client",
        &["client", &local(p), "--bytes", &n, "--timeout", "400"],
    );
    let c = cli.wait(Duration::from_secs(360));
    let s = srv.wait(Duration::from_secs(30));
    all_ok(&[&c, &s]);
    let sj = assert_received(&s, GB);
    let cj = c.json();
    record(
        "stream_udt4_to_ours_1gb",
        json!({"bytes": GB, "client_seconds": cj["seconds"], "client_mbps": cj["mbps"],
               "server_seconds": sj["seconds"], "server_mbps": sj["mbps"],
               "retransmitted": cj["retransmitted"], "wall_seconds": round2(c.elapsed.as_secs_f64())}),
    );
}

// ---------------------------------------------------------------------------------------------
// Both directions at once

/// Two connections in opposite directions at the same time: our client -> UDT4 server and
/// UDT4 client -> our server.
#[test]
fn bidir_two_connections_at_once() {
    let _g = exclusive();
    let n = 300 * MB;
    let ns = n.to_string();
    let (p1, p2) = (port(), port());
    let s1 = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p1.to_string(),
            "--once",
            "--bytes",
            &ns,
            "--timeout",
            "300",
        ],
    );
    let s2 = Proc::ours(
        "our server",
        &[
            "perf",
            "server",
            "--port",
            &p2.to_string(),
            "--once",
            "--json",
            "--interval",
            "0",
        ],
    );
    wait_bound(p1, Duration::from_secs(10));
    wait_bound(p2, Duration::from_secs(10));
    let c1 = Proc::ours(
        "our client",
        &[
            "perf",
            "client",
            &local(p1),
            "--bytes",
            &ns,
            "--json",
            "--interval",
            "0",
        ],
    );
    let c2 = Proc::udt4(
        "udt4 client",
        &["client", &local(p2), "--bytes", &ns, "--timeout", "300"],
    );
    let c1 = c1.wait(Duration::from_secs(240));
    let c2 = c2.wait(Duration::from_secs(240));
    let s1 = s1.wait(Duration::from_secs(30));
    let s2 = s2.wait(Duration::from_secs(30));
    all_ok(&[&c1, &c2, &s1, &s2]);
    let j1 = assert_received(&s1, n);
    let j2 = assert_received(&s2, n);
    record(
        "bidir_two_connections_at_once",
        json!({"bytes_each_way": n, "ours_to_udt4_mbps": j1["mbps"], "udt4_to_ours_mbps": j2["mbps"],
               "ours_to_udt4_seconds": c1.json()["seconds"], "udt4_to_ours_seconds": c2.json()["seconds"]}),
    );
}

/// One connection, both sides sending and receiving at once: UDT4 listens (`--bidir`), we
/// connect with the library.
#[test]
fn bidir_one_connection_udt4_listens() {
    let _g = exclusive();
    let n = 200 * MB;
    let p = port();
    let srv = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--bidir",
            "--bytes",
            &n.to_string(),
            "--timeout",
            "240",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let h = bounded("our bidir client", Duration::from_secs(200), move || {
        let sock = builder(SocketKind::Stream)
            .connect(local(p))
            .map_err(|e| e.to_string())?;
        let start = Instant::now();
        let (sent, report) = thread::scope(|s| {
            let tx = s.spawn(|| {
                lib_send(
                    &sock,
                    SocketKind::Stream,
                    n,
                    Sizes::Fixed(0),
                    None,
                    true,
                    None,
                )
            });
            let report = lib_recv(&sock, SocketKind::Stream, Some(n), MsgCheck::None);
            (tx.join().expect("sender panicked"), report)
        });
        let sent = sent.map_err(|e| format!("send failed: {e}"))?;
        sock.close().map_err(|e| format!("close failed: {e}"))?;
        Ok::<_, String>((sent.0, report, start.elapsed().as_secs_f64()))
    });
    let ours = join(h, "our bidir client");
    let s = srv.wait(Duration::from_secs(if ours.is_ok() { 60 } else { 5 }));
    let (sent, ours, secs) = ours.unwrap_or_else(|e| fail(&e, &[&s]));
    all_ok(&[&s]);
    let sj = assert_received(&s, n);
    assert_eq!(sj["sent_bytes"].as_u64(), Some(n));
    assert_eq!(sent, n);
    assert_eq!(
        (ours.bytes, ours.mismatched, ours.end.clone()),
        (n, 0, None),
        "our receive side: {ours:?}"
    );
    record(
        "bidir_one_connection_udt4_listens",
        json!({"bytes_each_way": n, "ours_received_mbps": round2(mbps(ours.bytes, ours.seconds)),
               "udt4_received_mbps": sj["mbps"], "our_total_seconds": round2(secs)}),
    );
}

/// One connection, both directions at once: we listen (library), UDT4 connects with `--bidir`.
#[test]
fn bidir_one_connection_udt4_connects() {
    let _g = exclusive();
    let n = 200 * MB;
    let listener = builder(SocketKind::Stream)
        .listen("127.0.0.1:0", 4)
        .expect("listen");
    let p = listener.local_addr().port();
    let h = bounded("our bidir server", Duration::from_secs(200), move || {
        let (sock, _) = listener.accept().map_err(|e| e.to_string())?;
        let (sent, report) = thread::scope(|s| {
            let tx = s.spawn(|| {
                lib_send(
                    &sock,
                    SocketKind::Stream,
                    n,
                    Sizes::Fixed(0),
                    None,
                    true,
                    None,
                )
            });
            let report = lib_recv(&sock, SocketKind::Stream, Some(n), MsgCheck::None);
            (tx.join().expect("sender panicked"), report)
        });
        let sent = sent.map_err(|e| format!("send failed: {e}"))?;
        sock.close().map_err(|e| format!("close failed: {e}"))?;
        Ok::<_, String>((sent.0, report))
    });
    let cli = Proc::udt4(
        "udt4 client",
        &[
            "client",
            &local(p),
            "--bidir",
            "--bytes",
            &n.to_string(),
            "--timeout",
            "240",
        ],
    );
    let ours = join(h, "our bidir server");
    let c = cli.wait(Duration::from_secs(if ours.is_ok() { 60 } else { 5 }));
    let (sent, ours) = ours.unwrap_or_else(|e| fail(&e, &[&c]));
    all_ok(&[&c]);
    let cj = assert_received(&c, n);
    assert_eq!(cj["sent_bytes"].as_u64(), Some(n));
    assert_eq!(sent, n);
    assert_eq!(
        (ours.bytes, ours.mismatched, ours.end.clone()),
        (n, 0, None),
        "our receive side: {ours:?}"
    );
    record(
        "bidir_one_connection_udt4_connects",
        json!({"bytes_each_way": n, "ours_received_mbps": round2(mbps(ours.bytes, ours.seconds)),
               "udt4_received_mbps": cj["mbps"], "udt4_total_seconds": cj["sent_seconds"]}),
    );
}

// ---------------------------------------------------------------------------------------------
// Message mode

/// A size that is not a multiple of the 1456-byte payload (nor of 251).
const ODD_MSG: usize = 1_000_003;

#[test]
fn message_ours_to_udt4_cli() {
    let _g = exclusive();
    let n = 200 * MB;
    let ns = n.to_string();
    let m = ODD_MSG.to_string();
    let p = port();
    let srv = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--mode",
            "message",
            "--msg-size",
            &m,
            "--bytes",
            &ns,
            "--timeout",
            "240",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let cli = Proc::ours(
        "our client",
        &[
            "perf",
            "client",
            &local(p),
            "--mode",
            "message",
            "--msg-size",
            &m,
            "--bytes",
            &ns,
            "--json",
            "--interval",
            "0",
        ],
    );
    let c = cli.wait(Duration::from_secs(200));
    let s = srv.wait(Duration::from_secs(30));
    all_ok(&[&c, &s]);
    let sj = assert_received(&s, n);
    assert_eq!(
        sj["messages"].as_u64(),
        Some(n.div_ceil(ODD_MSG as u64)),
        "{}",
        s.dump()
    );
    assert_eq!(sj["bad_messages"], 0, "{}", s.dump());
    record(
        "message_ours_to_udt4_cli",
        json!({"bytes": n, "msg_size": ODD_MSG, "messages": sj["messages"], "udt4_mbps": sj["mbps"],
               "client_seconds": c.json()["seconds"]}),
    );
}

/// A 4.11 message client to `udt perf server` started without `--mode`, which serves each
/// connection in its client's mode.
#[test]
fn message_udt4_to_ours_cli() {
    let _g = exclusive();
    let n = 200 * MB;
    let ns = n.to_string();
    let m = ODD_MSG.to_string();
    let (srv, p) = our_server();
    wait_bound(p, Duration::from_secs(10));
    let cli = Proc::udt4(
        "udt4 client",
        &[
            "client",
            &local(p),
            "--mode",
            "message",
            "--msg-size",
            &m,
            "--inorder",
            "--bytes",
            &ns,
            "--timeout",
            "240",
        ],
    );
    let c = cli.wait(Duration::from_secs(200));
    let s = srv.wait(Duration::from_secs(30));
    all_ok(&[&c, &s]);
    let sj = assert_received(&s, n);
    // The server was given no --mode: it took the 4.11 client's message socket as one.
    assert_eq!(sj["mode"], "message", "{}", s.dump());
    record(
        "message_udt4_to_ours_cli",
        json!({"bytes": n, "msg_size": ODD_MSG, "ours_mbps": sj["mbps"], "client_seconds": c.json()["seconds"]}),
    );
}

/// Many messages of varied sizes (1 byte … 20 000 bytes), in order: every boundary checked.
#[test]
fn message_boundaries_ours_to_udt4() {
    let _g = exclusive();
    let n = 50 * MB;
    let max = 20_000usize;
    let p = port();
    let srv = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--mode",
            "message",
            "--vary-sizes",
            "--msg-size",
            &max.to_string(),
            "--bytes",
            &n.to_string(),
            "--timeout",
            "240",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let h = bounded("our message sender", Duration::from_secs(200), move || {
        let sock = builder(SocketKind::Message)
            .connect(local(p))
            .map_err(|e| e.to_string())?;
        let r = lib_send(
            &sock,
            SocketKind::Message,
            n,
            Sizes::Vary(max),
            None,
            true,
            None,
        )
        .map_err(|e| format!("send failed: {e}"))?;
        sock.close().map_err(|e| format!("close failed: {e}"))?;
        Ok::<_, String>(r)
    });
    let ours = join(h, "our message sender");
    let s = srv.wait(Duration::from_secs(if ours.is_ok() { 60 } else { 5 }));
    let (sent, msgs) = ours.unwrap_or_else(|e| fail(&e, &[&s]));
    all_ok(&[&s]);
    let sj = assert_received(&s, n);
    assert_eq!(sent, n);
    assert_eq!(
        sj["messages"].as_u64(),
        Some(msgs),
        "message count\n{}",
        s.dump()
    );
    assert_eq!(sj["bad_messages"], 0, "{}", s.dump());
    record(
        "message_boundaries_ours_to_udt4",
        json!({"bytes": n, "messages": msgs, "udt4_mbps": sj["mbps"]}),
    );
}

#[test]
fn message_boundaries_udt4_to_ours() {
    let _g = exclusive();
    let n = 50 * MB;
    let max = 20_000usize;
    let listener = builder(SocketKind::Message)
        .listen("127.0.0.1:0", 4)
        .expect("listen");
    let p = listener.local_addr().port();
    let h = bounded(
        "our message receiver",
        Duration::from_secs(200),
        move || {
            let (sock, _) = listener.accept().map_err(|e| e.to_string())?;
            Ok::<_, String>(lib_recv(
                &sock,
                SocketKind::Message,
                None,
                MsgCheck::Exact(Sizes::Vary(max)),
            ))
        },
    );
    let cli = Proc::udt4(
        "udt4 client",
        &[
            "client",
            &local(p),
            "--mode",
            "message",
            "--vary-sizes",
            "--msg-size",
            &max.to_string(),
            "--inorder",
            "--bytes",
            &n.to_string(),
            "--timeout",
            "240",
        ],
    );
    let ours = join(h, "our message receiver");
    let c = cli.wait(Duration::from_secs(if ours.is_ok() { 60 } else { 5 }));
    let r = ours.unwrap_or_else(|e| fail(&e, &[&c]));
    all_ok(&[&c]);
    let cj = c.json();
    assert_eq!(r.end, None, "{r:?}");
    assert_eq!((r.bytes, r.mismatched, r.bad_messages), (n, 0, 0), "{r:?}");
    assert_eq!(
        Some(r.messages),
        cj["messages"].as_u64(),
        "message count {r:?}"
    );
    record("message_boundaries_udt4_to_ours", r.json());
}

/// Messages with a time-to-live through a lossy, reordering relay: some may be dropped, but
/// whatever is delivered must be whole, correct messages. UDT4 sends (not in order, its
/// default), we receive.
#[test]
fn message_ttl_lossy_udt4_to_ours() {
    let _g = shared();
    let (m, count) = (10_000usize, 2000u64);
    let n = m as u64 * count;
    let listener = builder(SocketKind::Message)
        .listen("127.0.0.1:0", 4)
        .expect("listen");
    let relay = Relay::start(listener.local_addr().port(), 0.03, 0.01, 0.005, 7);
    let h = bounded(
        "our message receiver",
        Duration::from_secs(200),
        move || {
            let (sock, _) = listener.accept().map_err(|e| e.to_string())?;
            Ok::<_, String>(lib_recv(
                &sock,
                SocketKind::Message,
                None,
                MsgCheck::Drops { m, in_order: false },
            ))
        },
    );
    let cli = Proc::udt4(
        "udt4 client",
        &[
            "client",
            &local(relay.port),
            "--mode",
            "message",
            "--msg-size",
            &m.to_string(),
            "--ttl-ms",
            "100",
            "--pace-us",
            "4000",
            "--bytes",
            &n.to_string(),
            "--timeout",
            "240",
        ],
    );
    let ours = join(h, "our message receiver");
    let c = cli.wait(Duration::from_secs(if ours.is_ok() { 120 } else { 5 }));
    let r = ours.unwrap_or_else(|e| fail(&e, &[&c]));
    // A 4.11 process that has reported its whole send (and closed) sometimes never exits:
    // UDT::cleanup() waits for its garbage collector, which keeps a socket whose shifted
    // mapping (below) left it half-closed. Seen once in four full runs on 2026-11-25, after
    // `"close_seconds"` was printed; that hang is 4.11's, not the transfer's.
    let reported_all = c.status.is_none()
        && c.json().get("bytes").and_then(Value::as_u64) == Some(n)
        && c.json().get("close_seconds").is_some();
    // After that shift (below) our receiver may time out first and close; the 4.11 sender,
    // still sending broken messages, then fails with a broken connection (UDT error 2001).
    // Seen in CI at 5c48924: 11 messages delivered in 1.5 s, then 60 s of nothing whole.
    let receiver_gave_up = r.end.as_deref() == Some(&udt::Error::Timeout.to_string())
        && c.stderr.contains("UDT error 2001");
    if !c.success() && !reported_all && !receiver_gave_up {
        fail(
            &format!("the UDT4 sender failed; our receiver: {r:?}"),
            &[&c],
        );
    }
    let rel = relay.stop();
    // A 4.11 sender's first TTL drop shifts its buffer-to-sequence mapping (interop/README.md,
    // finding 4); after that it may send nothing but incomplete messages until it gives up, and
    // our receiver's 60 s read timeout ends the wait first. Either end is the sender's doing;
    // what this test checks is that everything delivered is whole and correct.
    assert!(
        r.end.is_none() || r.end.as_deref() == Some(&udt::Error::Timeout.to_string()),
        "{r:?}"
    );
    assert_eq!((r.mismatched, r.bad_messages), (0, 0), "{r:?}");
    assert!(r.messages > 0 && r.messages <= count, "{r:?}");
    assert_eq!(r.bytes, r.messages * m as u64, "{r:?}");
    let mut v = r.json();
    v["sent_messages"] = json!(count);
    v["lost_messages"] = json!(count - r.messages);
    v["udt4_retransmitted"] = c.json()["retransmitted"].clone();
    v["relay"] = rel;
    record("message_ttl_lossy_udt4_to_ours", v);
}

/// The same the other way: we send with a TTL, in order; UDT4 receives.
#[test]
fn message_ttl_lossy_ours_to_udt4() {
    let _g = shared();
    let (m, count) = (10_000usize, 2000u64);
    let n = m as u64 * count;
    let p = port();
    let srv = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--mode",
            "message",
            "--msg-size",
            &m.to_string(),
            "--allow-drops",
            "--inorder",
            "--timeout",
            "240",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let relay = Relay::start(p, 0.03, 0.01, 0.005, 11);
    let rp = relay.port;
    let h = bounded("our message sender", Duration::from_secs(200), move || {
        let sock = builder(SocketKind::Message)
            .connect(local(rp))
            .map_err(|e| e.to_string())?;
        let r = lib_send(
            &sock,
            SocketKind::Message,
            n,
            Sizes::Fixed(m),
            Some(Duration::from_millis(100)),
            true,
            Some(Duration::from_millis(4)),
        )
        .map_err(|e| format!("send failed: {e}"))?;
        let stats = sock.stats(false).ok();
        sock.close().map_err(|e| format!("close failed: {e}"))?;
        Ok::<_, String>((r, stats.map(|s| s.pkt_retrans_total)))
    });
    let ours = join(h, "our message sender");
    let s = srv.wait(Duration::from_secs(if ours.is_ok() { 90 } else { 5 }));
    let ((sent, msgs), retrans) = ours.unwrap_or_else(|e| fail(&e, &[&s]));
    all_ok(&[&s]);
    let rel = relay.stop();
    let sj = s.json();
    assert_eq!((sent, msgs), (n, count));
    assert_eq!(sj["verified"], true, "{}", s.dump());
    assert_eq!(sj["bad_messages"], 0, "{}", s.dump());
    let got = sj["messages"].as_u64().unwrap_or(0);
    assert!(got > 0 && got <= count, "{}", s.dump());
    assert_eq!(sj["bytes"].as_u64(), Some(got * m as u64), "{}", s.dump());
    record(
        "message_ttl_lossy_ours_to_udt4",
        json!({"sent_messages": count, "delivered_messages": got, "lost_messages": count - got,
               "udt4_dropped_estimate": sj["dropped_messages"], "our_retransmitted": retrans, "relay": rel}),
    );
}

// ---------------------------------------------------------------------------------------------
// Rendezvous

/// 100 MB in rendezvous mode between `udt perf` and the 4.11 peer, `ours_send`ing or
/// receiving, with our side (`ours_first`) or theirs started a second before the other.
fn rendezvous_transfer(ours_send: bool, ours_first: bool, test: &str) {
    let _g = exclusive();
    let n = 100 * MB;
    let ns = n.to_string();
    let (a, b) = (port(), port()); // a: ours, b: theirs
    let (pa, pb) = (a.to_string(), b.to_string());
    let (la, lb) = (local(a), local(b));
    let ours = || {
        if ours_send {
            Proc::ours(
                "our client",
                &[
                    "perf",
                    "client",
                    &lb,
                    "--rendezvous",
                    "--local-port",
                    &pa,
                    "--bytes",
                    &ns,
                    "--json",
                    "--interval",
                    "0",
                ],
            )
        } else {
            Proc::ours(
                "our rendezvous server",
                &[
                    "perf",
                    "server",
                    "--port",
                    &pa,
                    "--rendezvous",
                    &lb,
                    "--json",
                    "--interval",
                    "0",
                ],
            )
        }
    };
    let theirs = || {
        if ours_send {
            Proc::udt4(
                "udt4 server",
                &[
                    "server",
                    "--rendezvous",
                    "--local-port",
                    &pb,
                    &la,
                    "--bytes",
                    &ns,
                    "--timeout",
                    "120",
                ],
            )
        } else {
            Proc::udt4(
                "udt4 client",
                &[
                    "client",
                    &la,
                    "--rendezvous",
                    "--local-port",
                    &pb,
                    "--bytes",
                    &ns,
                    "--timeout",
                    "120",
                ],
            )
        }
    };
    let (first, second) = if ours_first {
        let o = ours();
        thread::sleep(Duration::from_secs(1));
        (o, theirs())
    } else {
        let t = theirs();
        thread::sleep(Duration::from_secs(1));
        (t, ours())
    };
    let (ours, theirs) = if ours_first {
        (first, second)
    } else {
        (second, first)
    };
    let (sender, receiver) = if ours_send {
        (ours, theirs)
    } else {
        (theirs, ours)
    };
    let c = sender.wait(Duration::from_secs(100));
    let s = receiver.wait(Duration::from_secs(30));
    all_ok(&[&c, &s]);
    let sj = assert_received(&s, n);
    record(
        test,
        json!({"bytes": n, "receiver_mbps": sj["mbps"], "sender_seconds": c.json()["seconds"]}),
    );
}

#[test]
fn rendezvous_ours_first_ours_sends() {
    rendezvous_transfer(true, true, "rendezvous_ours_first_ours_sends");
}

#[test]
fn rendezvous_udt4_first_ours_sends() {
    rendezvous_transfer(true, false, "rendezvous_udt4_first_ours_sends");
}

#[test]
fn rendezvous_ours_first_udt4_sends() {
    rendezvous_transfer(false, true, "rendezvous_ours_first_udt4_sends");
}

#[test]
fn rendezvous_udt4_first_udt4_sends() {
    rendezvous_transfer(false, false, "rendezvous_udt4_first_udt4_sends");
}

// ---------------------------------------------------------------------------------------------
// Streams through the lossy relay (loss, reordering, duplication)

fn lossy_ours_to_udt4(test: &str, n: u64, loss: f64, seed: u64) {
    let _g = shared();
    let ns = n.to_string();
    let p = port();
    let srv = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--bytes",
            &ns,
            "--timeout",
            "300",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let relay = Relay::start(p, loss, 0.01, 0.005, seed);
    let cli = Proc::ours(
        "our client",
        &[
            "perf",
            "client",
            &local(relay.port),
            "--bytes",
            &ns,
            "--json",
            "--interval",
            "0",
        ],
    );
    let c = cli.wait(Duration::from_secs(240));
    let s = srv.wait(Duration::from_secs(100));
    all_ok(&[&c, &s]);
    let rel = relay.stop();
    let sj = assert_received(&s, n);
    let cj = c.json();
    record(
        test,
        json!({"bytes": n, "loss": loss, "mbps": sj["mbps"], "seconds": sj["seconds"],
               "our_client_seconds": cj["seconds"], "relay": rel}),
    );
}

fn lossy_udt4_to_ours(test: &str, n: u64, loss: f64, seed: u64) {
    let _g = shared();
    let ns = n.to_string();
    let (srv, relay, cli) =
        udt4_via_relay_to_our_server(loss, seed, &["--bytes", &ns, "--timeout", "300"]);
    let c = cli.wait(Duration::from_secs(240));
    let s = srv.wait(Duration::from_secs(100));
    all_ok(&[&c, &s]);
    let rel = relay.stop();
    let sj = assert_received(&s, n);
    let cj = c.json();
    record(
        test,
        // Throughput from the sender's side: until everything was acknowledged (our server's
        // own time includes the ~46 s wait for EXP if the single Shutdown packet was lost).
        json!({"bytes": n, "loss": loss, "mbps": cj["mbps"], "seconds": cj["seconds"],
               "our_server_seconds": sj["seconds"], "udt4_retransmitted": cj["retransmitted"], "relay": rel}),
    );
}

/// A 4.11 client sending messages with its `sendmsg` defaults (in-order flag clear) through a
/// lossy, reordering relay to `udt perf server`: messages that complete early are delivered
/// early, and the server must still verify every byte (each such message as a whole run of
/// the pattern) and count them.
#[test]
fn message_unordered_lossy_udt4_to_ours_cli() {
    let _g = shared();
    let n = 20 * MB;
    let ns = n.to_string();
    let args = [
        "--mode",
        "message",
        "--msg-size",
        "10000",
        "--bytes",
        &ns,
        "--timeout",
        "300",
    ];
    let (srv, relay, cli) = udt4_via_relay_to_our_server(0.02, 7, &args);
    let c = cli.wait(Duration::from_secs(240));
    let s = srv.wait(Duration::from_secs(100));
    all_ok(&[&c, &s]);
    let rel = relay.stop();
    let sj = assert_received(&s, n);
    assert_eq!(sj["mode"], "message", "{}", s.dump());
    let early = sj["out_of_order_msgs"].as_u64().expect("out_of_order_msgs");
    // With 2 % loss some of the 2000 messages complete before an earlier one is repaired.
    assert!(early > 0, "no message was delivered early\n{}", s.dump());
    record(
        "message_unordered_lossy_udt4_to_ours_cli",
        json!({"bytes": n, "msg_size": 10000, "out_of_order_msgs": early, "relay": rel}),
    );
}

#[test]
fn lossy_1pct_stream_ours_to_udt4() {
    lossy_ours_to_udt4("lossy_1pct_stream_ours_to_udt4", 50 * MB, 0.01, 1);
}

#[test]
fn lossy_1pct_stream_udt4_to_ours() {
    lossy_udt4_to_ours("lossy_1pct_stream_udt4_to_ours", 50 * MB, 0.01, 2);
}

#[test]
fn lossy_5pct_stream_ours_to_udt4() {
    lossy_ours_to_udt4("lossy_5pct_stream_ours_to_udt4", 15 * MB, 0.05, 3);
}

#[test]
fn lossy_5pct_stream_udt4_to_ours() {
    lossy_udt4_to_ours("lossy_5pct_stream_udt4_to_ours", 15 * MB, 0.05, 4);
}

// ---------------------------------------------------------------------------------------------
// Close with linger: the sender closes as soon as everything is queued (8 MB fits in both
// send buffers), over a lossy path so that most of it is still in flight; the receiver must
// still get every byte.

#[test]
fn close_linger_ours_to_udt4() {
    let _g = shared();
    let n = 8 * MB;
    let ns = n.to_string();
    let p = port();
    let srv = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--bytes",
            &ns,
            "--timeout",
            "200",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let relay = Relay::start(p, 0.02, 0.01, 0.005, 5);
    let rp = relay.port;
    // The library (not the CLI) so that the time spent in close() can be measured.
    let h = bounded("our sender", Duration::from_secs(150), move || {
        let sock = builder(SocketKind::Stream)
            .connect(local(rp))
            .map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        lib_send(
            &sock,
            SocketKind::Stream,
            n,
            Sizes::Fixed(0),
            None,
            true,
            None,
        )
        .map_err(|e| e.to_string())?;
        let queued = t0.elapsed().as_secs_f64();
        sock.close().map_err(|e| e.to_string())?;
        Ok::<_, String>((queued, t0.elapsed().as_secs_f64() - queued))
    });
    let ours = join(h, "our sender");
    let s = srv.wait(Duration::from_secs(if ours.is_ok() { 100 } else { 5 }));
    let (queued, closing) = ours.unwrap_or_else(|e| fail(&e, &[&s]));
    all_ok(&[&s]);
    relay.stop();
    assert_received(&s, n);
    record(
        "close_linger_ours_to_udt4",
        json!({"bytes": n, "queue_seconds": round2(queued), "close_seconds": round2(closing)}),
    );
}

#[test]
fn close_linger_udt4_to_ours() {
    let _g = shared();
    let n = 8 * MB;
    let ns = n.to_string();
    let (srv, relay, cli) =
        udt4_via_relay_to_our_server(0.02, 6, &["--bytes", &ns, "--timeout", "200"]);
    let c = cli.wait(Duration::from_secs(150));
    let s = srv.wait(Duration::from_secs(100));
    all_ok(&[&c, &s]);
    relay.stop();
    assert_received(&s, n);
    let cj = c.json();
    record(
        "close_linger_udt4_to_ours",
        json!({"bytes": n, "queue_seconds": cj["queue_seconds"], "close_seconds": cj["close_seconds"]}),
    );
}

// ---------------------------------------------------------------------------------------------
// Broken connections: one side is killed (SIGKILL) mid-transfer; the other must notice within
// about a minute (4.11 declares a silent peer dead after ≈ 46 s) and exit, not hang.

const DETECT_LIMIT: Duration = Duration::from_secs(100);

struct KillOutcome {
    survivor: Finished,
    detect_seconds: f64,
}

/// Starts `server` and then `client`, waits until the UDT4 one of them reports the connection
/// (`udt4_is_server` tells which), lets data flow for 2 s, kills the server (`kill_server`) or
/// the client, and waits for the other one to exit by itself.
fn kill_mid_transfer(
    server: impl FnOnce() -> (Proc, u16),
    client: impl FnOnce(u16) -> Proc,
    udt4_is_server: bool,
    kill_server: bool,
) -> KillOutcome {
    let (mut srv, p) = server();
    wait_bound(p, Duration::from_secs(10));
    let mut cli = client(p);
    let udt4 = if udt4_is_server { &srv } else { &cli };
    if udt4
        .wait_line(Duration::from_secs(10), |l| l.contains("\"connected\""))
        .is_none()
    {
        let (s, c) = (
            srv.wait(Duration::from_secs(1)),
            cli.wait(Duration::from_secs(1)),
        );
        fail("no connection within 10 s", &[&s, &c]);
    }
    thread::sleep(Duration::from_secs(2));
    if !(srv.running() && cli.running()) {
        let (s, c) = (
            srv.wait(Duration::from_secs(1)),
            cli.wait(Duration::from_secs(1)),
        );
        fail("a side stopped before the kill", &[&s, &c]);
    }
    let (mut victim, survivor) = if kill_server { (srv, cli) } else { (cli, srv) };
    victim.kill();
    let t0 = Instant::now();
    let _ = victim.wait(Duration::from_secs(5));
    let survivor = survivor.wait(DETECT_LIMIT);
    KillOutcome {
        detect_seconds: t0.elapsed().as_secs_f64(),
        survivor,
    }
}

fn udt4_server(args: &[&str]) -> (Proc, u16) {
    let p = port();
    let mut v = vec!["server", "--port"];
    let ps = p.to_string();
    v.push(&ps);
    v.extend_from_slice(args);
    (Proc::udt4("udt4 server", &v), p)
}

/// `udt perf server --once --json`, a relay in front of it (`loss`, 1 % reordering, 0.5 %
/// duplicates, `seed`), and the UDT4 peer's client sending through the relay with `args`.
fn udt4_via_relay_to_our_server(loss: f64, seed: u64, args: &[&str]) -> (Proc, Relay, Proc) {
    let (srv, p) = our_server();
    wait_bound(p, Duration::from_secs(10));
    let relay = Relay::start(p, loss, 0.01, 0.005, seed);
    let to = local(relay.port);
    let mut all = vec!["client", to.as_str()];
    all.extend_from_slice(args);
    let cli = Proc::udt4("udt4 client", &all);
    (srv, relay, cli)
}

fn our_server() -> (Proc, u16) {
    let p = port();
    (
        Proc::ours(
            "our server",
            &[
                "perf",
                "server",
                "--port",
                &p.to_string(),
                "--once",
                "--json",
                "--interval",
                "0",
            ],
        ),
        p,
    )
}

/// The UDT4 peer is killed: our sender, then our receiver, must report the broken connection.
#[test]
fn killed_udt4_peer_is_detected_by_ours() {
    let g = exclusive();
    let huge = (1000 * GB).to_string();
    let h1 = {
        let huge = huge.clone();
        thread::spawn(move || {
            kill_mid_transfer(
                || udt4_server(&["--once", "--timeout", "200"]),
                |p| {
                    Proc::ours(
                        "our client",
                        &[
                            "perf",
                            "client",
                            &local(p),
                            "--bytes",
                            &huge,
                            "--json",
                            "--interval",
                            "0",
                        ],
                    )
                },
                true,
                true,
            )
        })
    };
    let h2 = thread::spawn(move || {
        kill_mid_transfer(
            our_server,
            |p| {
                Proc::udt4(
                    "udt4 client",
                    &["client", &local(p), "--bytes", &huge, "--timeout", "200"],
                )
            },
            false,
            false,
        )
    });
    // Data flows only during the first seconds; then the two tests just wait.
    thread::sleep(Duration::from_secs(3));
    drop(g);
    let _g = shared();
    let o1 = h1.join().expect("sender case panicked");
    let o2 = h2.join().expect("receiver case panicked");
    let s1 = &o1.survivor;
    let s2 = &o2.survivor;
    assert!(
        s1.status.is_some(),
        "our sender did not notice the dead peer within {DETECT_LIMIT:?}\n{}",
        s1.dump()
    );
    assert!(
        !s1.success(),
        "our sender reported success although its peer was killed\n{}",
        s1.dump()
    );
    assert!(
        s2.status.is_some(),
        "our receiver did not notice the dead peer within {DETECT_LIMIT:?}\n{}",
        s2.dump()
    );
    // The receiver may report an error, or end of data (then the JSON must not claim more).
    record(
        "killed_udt4_peer_is_detected_by_ours",
        json!({"our_sender_detect_seconds": round2(o1.detect_seconds), "our_sender_exit": format!("{:?}", s1.status),
               "our_sender_error": s1.stderr.lines().last(),
               "our_receiver_detect_seconds": round2(o2.detect_seconds), "our_receiver_exit": format!("{:?}", s2.status),
               "our_receiver_error": s2.stderr.lines().last(), "our_receiver_stdout": s2.stdout.trim()}),
    );
}

/// Our process is killed: the UDT4 receiver, then the UDT4 sender, must notice.
#[test]
fn killed_ours_is_detected_by_udt4() {
    let g = exclusive();
    let huge = (1000 * GB).to_string();
    let h1 = {
        let huge = huge.clone();
        thread::spawn(move || {
            kill_mid_transfer(
                || udt4_server(&["--once", "--timeout", "200"]),
                |p| {
                    Proc::ours(
                        "our client",
                        &[
                            "perf",
                            "client",
                            &local(p),
                            "--bytes",
                            &huge,
                            "--json",
                            "--interval",
                            "0",
                        ],
                    )
                },
                true,
                false,
            )
        })
    };
    let h2 = thread::spawn(move || {
        kill_mid_transfer(
            our_server,
            |p| {
                Proc::udt4(
                    "udt4 client",
                    &["client", &local(p), "--bytes", &huge, "--timeout", "200"],
                )
            },
            false,
            true,
        )
    });
    thread::sleep(Duration::from_secs(3));
    drop(g);
    let _g = shared();
    let o1 = h1.join().expect("receiver case panicked");
    let o2 = h2.join().expect("sender case panicked");
    let s1 = &o1.survivor;
    let s2 = &o2.survivor;
    assert!(
        s1.status.is_some(),
        "the UDT4 receiver did not notice within {DETECT_LIMIT:?}\n{}",
        s1.dump()
    );
    assert!(
        s2.status.is_some(),
        "the UDT4 sender did not notice within {DETECT_LIMIT:?}\n{}",
        s2.dump()
    );
    assert!(
        !s2.success(),
        "the UDT4 sender reported success although we were killed\n{}",
        s2.dump()
    );
    record(
        "killed_ours_is_detected_by_udt4",
        json!({"udt4_receiver_detect_seconds": round2(o1.detect_seconds), "udt4_receiver_report": s1.stdout.trim(),
               "udt4_sender_detect_seconds": round2(o2.detect_seconds), "udt4_sender_error": s2.stderr.lines().last()}),
    );
}

// ---------------------------------------------------------------------------------------------
// Known bugs

/// Forty `udt perf server` processes, each connected to by a UDT4 client the moment its port is
/// bound: every one must answer. Fails today, typically 1 to 10 times in 40: the I/O
/// thread of a new multiplexer (`Mux::bind` in crates/udt/src/mux.rs) can run its first loop
/// iteration before `listen()`/`connect()` has counted the application's handle; it then sees
/// `handles == 0 && connection_count() == 0` and exits, so nothing ever reads the port. The
/// server hangs in accept() (one thread left) and the UDT4 client fails with 1001; the same race
/// makes our clients hang in connect(). It is behind the occasional 1001/hang in other tests.
/// (Confirmed with a copy of the runtime instrumented at that `break`: the failing servers'
/// I/O threads left at their very first iteration.)
#[test]
fn startup_race_udt4_clients_to_our_servers() {
    let _g = exclusive();
    let attempts = 40;
    let mut failed = Vec::new();
    for i in 0..attempts {
        let p = port();
        let srv = Proc::ours(
            "our server",
            &[
                "perf",
                "server",
                "--port",
                &p.to_string(),
                "--once",
                "--json",
                "--interval",
                "0",
            ],
        );
        // Start the client the moment the port is bound: its start-up then competes for the
        // CPUs with the server's, which is what makes the race show.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !udp_bound(p) && Instant::now() < deadline {
            thread::yield_now();
        }
        let cli = Proc::udt4(
            "udt4 client",
            &["client", &local(p), "--bytes", "100000", "--timeout", "20"],
        );
        let c = cli.wait(Duration::from_secs(20));
        let s = srv.wait(Duration::from_secs(if c.success() { 20 } else { 1 }));
        if !(c.success() && s.success()) {
            failed.push(format!("attempt {i}: port {p}: {}", c.stderr.trim()));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {attempts} connections never started:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Encryption (docs/encryption.md): a UDT4 4.11 peer knows nothing of it. With encryption
// preferred it connects in clear, byte-exact; with encryption required it is refused.

fn encryption(mode: udt::EncryptionMode) -> Option<udt::Encryption> {
    Some(udt::Encryption::from_key([0x5A; 32], mode))
}

#[test]
fn encryption_preferred_ours_to_udt4_connects_in_clear() {
    let _g = shared();
    let n = 20 * MB;
    let p = port();
    let srv = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--bytes",
            &n.to_string(),
            "--timeout",
            "60",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let h = bounded("our preferred client", Duration::from_secs(60), move || {
        let sock = builder(SocketKind::Stream)
            .encryption(encryption(udt::EncryptionMode::Preferred))
            .connect(local(p))
            .map_err(|e| e.to_string())?;
        if sock.is_encrypted() {
            return Err("encrypted with a UDT4 peer".to_owned());
        }
        let sent = lib_send(
            &sock,
            SocketKind::Stream,
            n,
            Sizes::Fixed(0),
            None,
            true,
            None,
        )
        .map_err(|e| format!("send failed: {e}"))?;
        sock.close().map_err(|e| format!("close failed: {e}"))?;
        Ok::<_, String>(sent.0)
    });
    let ours = join(h, "our preferred client");
    let s = srv.wait(Duration::from_secs(if ours.is_ok() { 30 } else { 5 }));
    let sent = ours.unwrap_or_else(|e| fail(&e, &[&s]));
    all_ok(&[&s]);
    assert_eq!(sent, n);
    let sj = assert_received(&s, n);
    record(
        "encryption_preferred_ours_to_udt4_connects_in_clear",
        json!({"bytes": n, "udt4_mbps": sj["mbps"]}),
    );
}

#[test]
fn encryption_required_ours_to_udt4_is_refused() {
    let _g = shared();
    let p = port();
    let mut srv = Proc::udt4(
        "udt4 server",
        &[
            "server",
            "--port",
            &p.to_string(),
            "--once",
            "--bytes",
            "1000",
            "--timeout",
            "30",
        ],
    );
    wait_bound(p, Duration::from_secs(10));
    let r = builder(SocketKind::Stream)
        .encryption(encryption(udt::EncryptionMode::Required))
        .connect(local(p));
    let alive = srv.running();
    srv.kill();
    let s = srv.wait(Duration::from_secs(5));
    match r {
        Err(udt::Error::Connect(udt_proto::ConnectError::EncryptionUnavailable)) => {}
        Err(e) => fail(&format!("wrong error: {e}"), &[&s]),
        Ok(_) => fail("required encryption connected to UDT4", &[&s]),
    }
    // UDT4 never saw a second-phase request, so it accepted nothing and is still waiting.
    assert!(alive, "the UDT4 server exited: {}", s.dump());
    assert!(!s.stdout.contains("\"connected\""), "{}", s.dump());
    record(
        "encryption_required_ours_to_udt4_is_refused",
        json!({"refused": true}),
    );
}

#[test]
fn encryption_preferred_udt4_to_ours_connects_in_clear() {
    let _g = shared();
    let n = 20 * MB;
    let listener = builder(SocketKind::Stream)
        .encryption(encryption(udt::EncryptionMode::Preferred))
        .listen("127.0.0.1:0", 4)
        .expect("listen");
    let p = listener.local_addr().port();
    let cli = Proc::udt4(
        "udt4 client",
        &[
            "client",
            &local(p),
            "--bytes",
            &n.to_string(),
            "--timeout",
            "60",
        ],
    );
    let h = bounded("our preferred server", Duration::from_secs(60), move || {
        let (sock, _) = listener.accept().map_err(|e| e.to_string())?;
        let encrypted = sock.is_encrypted();
        let r = lib_recv(&sock, SocketKind::Stream, Some(n), MsgCheck::None);
        Ok::<_, String>((encrypted, r))
    });
    let ours = join(h, "our preferred server");
    let c = cli.wait(Duration::from_secs(if ours.is_ok() { 30 } else { 5 }));
    let (encrypted, r) = ours.unwrap_or_else(|e| fail(&e, &[&c]));
    all_ok(&[&c]);
    assert!(!encrypted, "a UDT4 peer cannot encrypt");
    assert_eq!(
        (r.bytes, r.mismatched, r.end.clone()),
        (n, 0, None),
        "{r:?}"
    );
    record(
        "encryption_preferred_udt4_to_ours_connects_in_clear",
        r.json(),
    );
}

#[test]
fn encryption_required_udt4_to_ours_is_refused() {
    let _g = shared();
    let listener = builder(SocketKind::Stream)
        .encryption(encryption(udt::EncryptionMode::Required))
        .listen("127.0.0.1:0", 4)
        .expect("listen");
    let p = listener.local_addr().port();
    let cli = Proc::udt4(
        "udt4 client",
        &["client", &local(p), "--bytes", "1000", "--timeout", "20"],
    );
    let c = cli.wait(Duration::from_secs(25));
    // Exit 2: connection setup failed (UDT4 reports the rejection, 1002).
    assert_eq!(c.status.and_then(|s| s.code()), Some(2), "{}", c.dump());
    assert!(
        matches!(listener.try_accept(), Err(udt::Error::WouldBlock)),
        "a clear UDT4 connection was accepted"
    );
    record(
        "encryption_required_udt4_to_ours_is_refused",
        json!({"udt4_exit": 2}),
    );
}
