//! `udt demo`: a file transfer across an emulated long, fast path, on this machine alone.
//!
//! It runs the same programs a user would, as child processes of this binary: `udt recv`
//! (receiving into a temporary directory), `udt relay` (the path: rate, one-way delay, DropTail
//! queue of one bandwidth-delay product, a little random loss) and `udt send` with its progress
//! bar. Afterwards it compares the received file with the original byte for byte (on top of
//! the BLAKE3 check `udt send`/`udt recv` always make) and reports what the transfer achieved
//! against the emulated link.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use serde_json::Value;

/// Arguments of `udt demo` (all optional).
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Size of the generated file, MB (10^6 bytes).
    #[arg(long, default_value_t = 300)]
    size_mb: u64,
    /// Bottleneck rate of the emulated path, Mbit/s.
    #[arg(long, default_value_t = 300.0)]
    rate_mbit: f64,
    /// Round-trip time of the emulated path, ms (half of it each way).
    #[arg(long, default_value_t = 100.0)]
    rtt_ms: f64,
    /// Random loss on the path, each direction (a fraction: 0.00001 = 0.001 %). UDT's native
    /// control takes every loss as congestion, so more than this costs much of the rate.
    #[arg(long, default_value_t = 0.00001)]
    loss: f64,
    /// Keep the generated and received files in this directory instead of a temporary one.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
}

/// Bytes per datagram on the path, for the queue size (a full UDT packet with IP/UDP headers).
const PACKET_BYTES: f64 = 1500.0;
/// How long each child gets to come up (bind its port).
const START_LIMIT: Duration = Duration::from_secs(10);

/// Runs the demo.
pub fn run(a: DemoArgs) -> anyhow::Result<()> {
    if a.size_mb == 0 || a.size_mb > 100_000 {
        bail!("--size-mb must be between 1 and 100000");
    }
    if !(a.rate_mbit.is_finite() && a.rate_mbit > 0.0 && a.rate_mbit <= 100_000.0) {
        bail!("--rate-mbit must be a positive number of Mbit/s");
    }
    if !(a.rtt_ms.is_finite() && (0.0..=10_000.0).contains(&a.rtt_ms)) {
        bail!("--rtt-ms must be between 0 and 10000");
    }
    if !(a.loss.is_finite() && (0.0..1.0).contains(&a.loss)) {
        bail!("--loss must be a fraction in [0, 1)");
    }
    let exe = std::env::current_exe().context("cannot find the udt executable")?;
    let work = Workdir::new(a.keep.clone())?;
    let (src, dst) = (work.path.join("send"), work.path.join("received"));
    std::fs::create_dir_all(&src).with_context(|| format!("cannot create {}", src.display()))?;
    std::fs::create_dir_all(&dst).with_context(|| format!("cannot create {}", dst.display()))?;

    let bytes = a.size_mb * 1_000_000;
    let file = src.join("demo.bin");
    println!(
        "udt demo: {} MB across an emulated {} Mbit/s path with {} ms RTT and {} % loss (all on \
         this machine)",
        a.size_mb,
        a.rate_mbit,
        a.rtt_ms,
        a.loss * 100.0
    );
    print!("  generating {} ... ", file.display());
    std::io::stdout().flush().ok();
    generate(&file, bytes)?;
    println!("done");

    let recv_port = free_port()?;
    let relay_port = free_port()?;
    let bdp_pkts = (a.rate_mbit * 1e6 * a.rtt_ms / 1e3 / 8.0 / PACKET_BYTES).ceil() as u64;
    let queue = bdp_pkts.max(100);
    let one_way = format!("{}us", (a.rtt_ms * 500.0).round() as u64);
    let rate = format!("{}", (a.rate_mbit * 1e6).round() as u64);

    let mut recv = Child2::spawn(
        "receiver",
        Command::new(&exe)
            .args([
                "recv",
                "--bind",
                "127.0.0.1",
                "--port",
                &recv_port.to_string(),
            ])
            .arg("--dir")
            .arg(&dst)
            .args(["--once", "--json"]),
    )?;
    let mut relay = Child2::spawn(
        "relay",
        Command::new(&exe).args([
            "relay",
            "--listen",
            &format!("127.0.0.1:{relay_port}"),
            "--to",
            &format!("127.0.0.1:{recv_port}"),
            "--rate",
            &rate,
            "--queue",
            &queue.to_string(),
            "--delay",
            &one_way,
            "--loss",
            &a.loss.to_string(),
            "--interval",
            "0",
            "--json",
        ]),
    )?;
    wait_bound(recv_port, &mut recv)?;
    wait_bound(relay_port, &mut relay)?;
    println!(
        "  receiver on 127.0.0.1:{recv_port}, relay on 127.0.0.1:{relay_port} \
         (queue {queue} packets = one bandwidth-delay product)"
    );

    let summary_path = work.path.join("send-summary.json");
    let t0 = Instant::now();
    let status = Command::new(&exe)
        .arg("send")
        .arg(&file)
        .arg(format!("127.0.0.1:{relay_port}"))
        .arg("--summary-file")
        .arg(&summary_path)
        .stdin(Stdio::null())
        .status()
        .context("cannot run udt send")?;
    let wall = t0.elapsed().as_secs_f64();
    let recv_out = recv.finish(Duration::from_secs(30))?;
    let relay_out = relay.stop()?;
    if !status.success() {
        bail!(
            "udt send failed ({status}); receiver said: {}",
            recv_out.trim()
        );
    }

    let received = dst.join("demo.bin");
    print!("  comparing {} with the original ... ", received.display());
    std::io::stdout().flush().ok();
    let identical = same_contents(&file, &received)?;
    println!("{}", if identical { "identical" } else { "DIFFERENT" });
    if !identical {
        bail!("the received file differs from the original");
    }

    let send: Value = std::fs::read_to_string(&summary_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let relay_final = last_json(&relay_out);
    let mbps = send["mbps"]
        .as_f64()
        .unwrap_or(bytes as f64 * 8.0 / wall / 1e6);
    let fwd = &relay_final["fwd"];
    println!();
    println!("  result");
    println!(
        "    throughput      {:.1} Mbit/s of file data ({} MB in {:.1} s)",
        mbps,
        a.size_mb,
        send["seconds"].as_f64().unwrap_or(wall)
    );
    println!(
        "    link use        {:.1} % of the {} Mbit/s bottleneck (file data only; headers and \
         start-up count against it)",
        mbps / a.rate_mbit * 100.0,
        a.rate_mbit
    );
    println!(
        "    retransmitted   {} packets; the path dropped {} at random and {} at the full queue",
        send["retransmitted"].as_u64().unwrap_or(0),
        fwd["dropped_loss"].as_u64().unwrap_or(0),
        fwd["dropped_queue"].as_u64().unwrap_or(0)
    );
    println!(
        "    RTT             {:.1} ms measured by UDT (path: {} ms)",
        send["rtt_ms"].as_f64().unwrap_or(0.0),
        a.rtt_ms
    );
    println!("    verified        BLAKE3 by udt send/recv, and byte for byte here");
    if let Some(dir) = &a.keep {
        println!("  files kept in {}", dir.display());
    }
    Ok(())
}

/// The demo's directory: temporary (removed at the end) unless `--keep` names one.
struct Workdir {
    path: PathBuf,
    remove: bool,
}

impl Workdir {
    fn new(keep: Option<PathBuf>) -> anyhow::Result<Workdir> {
        match keep {
            Some(path) => Ok(Workdir {
                path,
                remove: false,
            }),
            None => {
                let path = std::env::temp_dir().join(format!("udt-demo-{}", std::process::id()));
                Ok(Workdir { path, remove: true })
            }
        }
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Writes `bytes` of pseudo-random data (xorshift64*, not compressible, not all zeros).
fn generate(path: &Path, bytes: u64) -> anyhow::Result<()> {
    let mut f = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut block = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        for chunk in block.chunks_exact_mut(8) {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            chunk.copy_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])
            .with_context(|| format!("cannot write {}", path.display()))?;
        left -= n as u64;
    }
    f.sync_all().ok();
    Ok(())
}

/// True if the two files have the same bytes.
fn same_contents(a: &Path, b: &Path) -> anyhow::Result<bool> {
    let open = |p: &Path| File::open(p).with_context(|| format!("cannot open {}", p.display()));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = read_full(&mut fa, &mut ba)?;
        if read_full(&mut fb, &mut bb[..n])? != n || ba[..n] != bb[..n] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// A UDP port on 127.0.0.1 that was free a moment ago.
fn free_port() -> anyhow::Result<u16> {
    let s = UdpSocket::bind("127.0.0.1:0").context("cannot find a free UDP port")?;
    Ok(s.local_addr()?.port())
}

/// Waits until a child has bound `port` (a bind of our own then fails), or fails if the child
/// exits first.
fn wait_bound(port: u16, child: &mut Child2) -> anyhow::Result<()> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let t0 = Instant::now();
    while t0.elapsed() < START_LIMIT {
        if UdpSocket::bind(addr).is_err() {
            return Ok(());
        }
        if child.exited() {
            bail!("the {} exited before it was ready", child.name);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("the {} did not start within {START_LIMIT:?}", child.name)
}

/// The last JSON object among `text`'s lines.
fn last_json(text: &str) -> Value {
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .unwrap_or(Value::Null)
}

/// A child process whose stdout is collected by a thread; killed if dropped while running.
struct Child2 {
    name: &'static str,
    child: Child,
    out: Option<std::thread::JoinHandle<String>>,
}

impl Child2 {
    fn spawn(name: &'static str, cmd: &mut Command) -> anyhow::Result<Child2> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start the {name}"))?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                s.push_str(&line);
                s.push('\n');
            }
            s
        });
        Ok(Child2 {
            name,
            child,
            out: Some(out),
        })
    }

    fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `limit` for the child to exit by itself and returns its output.
    fn finish(mut self, limit: Duration) -> anyhow::Result<String> {
        let t0 = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                let out = self.output();
                if !status.success() {
                    bail!("the {} failed ({status}): {}", self.name, out.trim());
                }
                return Ok(out);
            }
            if t0.elapsed() > limit {
                bail!("the {} did not finish within {limit:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Asks the child to stop (SIGTERM) and returns its output.
    fn stop(mut self) -> anyhow::Result<String> {
        // SAFETY: plain kill(2) of our own child.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let t0 = Instant::now();
        while self.child.try_wait()?.is_none() {
            if t0.elapsed() > Duration::from_secs(5) {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(self.output())
    }

    fn output(&mut self) -> String {
        self.out
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Child2 {
    fn drop(&mut self) {
        if self.out.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
