//! Benchmarks of the async API (`udt::tokio`), side by side with the blocking API.
//!
//! ```text
//! cargo run --release -p udt --features tokio --example tokio_bench -- throughput [--mb M] [--rounds R]
//! cargo run --release -p udt --features tokio --example tokio_bench -- many [--conns N] [--bytes B]
//! ```
//!
//! `throughput`: one stream of M MB (default 1024) over loopback, receiver checking every
//! byte, first with the blocking API (a writer thread and a reader thread) and then with the
//! async API (a writer task and a reader task on a multi-threaded runtime with two workers),
//! alternating R times (default 5). Prints one JSON line per transfer and a summary with the
//! medians and their ratio. The time is the receiver's, from accept to end of stream; the CPU
//! time is the whole process's (both ends) per GB, from `/proc/self/stat`.
//!
//! `many`: one process, one runtime (two workers), a listener and N connections (default
//! 10 000) from one shared client UDP port, so two I/O threads in all. Connections are made
//! 512 at a time; each then echoes B bytes (default 1000) through the server, and all stay
//! open while the process's threads and memory are read from `/proc/self/status` — before
//! the runtime starts, after the first 1000 connections and with all N open and served.
//! Prints one JSON line.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use udt::tokio::{UdtListener, UdtStream};

/// Bytes per write and per read buffer.
const CHUNK: usize = 1 << 20;

fn pattern(offset: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = ((offset + k as u64) % 251) as u8;
    }
}

/// Verifies that `buf` is the pattern at `offset`, against a reference chunk.
fn verify(offset: u64, buf: &[u8], reference: &[u8]) -> bool {
    // The pattern repeats every 251 bytes: compare against the reference at the same phase.
    let phase = (offset % 251) as usize;
    buf == &reference[phase..phase + buf.len()]
}

/// A pattern chunk long enough for every phase.
fn reference() -> Vec<u8> {
    let mut r = vec![0u8; CHUNK + 251];
    pattern(0, &mut r);
    r
}

/// Status line `key` of `/proc/self/status` (e.g. `Threads`, `VmRSS` in kB).
fn status(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))
                .and_then(|l| l[key.len() + 1..].split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time of the whole process so far (user + system), seconds, from `/proc/self/stat`
/// (clock ticks of 10 ms: fine over transfers of seconds).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// One blocking transfer of `total` bytes: receiver seconds.
fn blocking_once(total: u64) -> f64 {
    use std::io::{Read, Write};
    let listener = udt::Listener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let start = Instant::now();
        let reference = reference();
        let mut buf = vec![0u8; CHUNK];
        let mut got = 0u64;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            assert!(verify(got, &buf[..n], &reference), "corrupt at {got}");
            got += n as u64;
        }
        assert_eq!(got, total);
        start.elapsed().as_secs_f64()
    });
    let mut s = udt::Socket::connect(addr).unwrap();
    let reference = reference();
    let mut sent = 0u64;
    while sent < total {
        let n = CHUNK.min((total - sent) as usize);
        let phase = (sent % 251) as usize;
        s.write_all(&reference[phase..phase + n]).unwrap();
        sent += n as u64;
    }
    s.close().unwrap();
    reader.join().unwrap()
}

/// One async transfer of `total` bytes: receiver seconds.
async fn async_once(total: u64) -> f64 {
    let listener = UdtListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr();
    let reader = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let start = Instant::now();
        let reference = reference();
        let mut buf = vec![0u8; CHUNK];
        let mut got = 0u64;
        loop {
            let n = s.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            assert!(verify(got, &buf[..n], &reference), "corrupt at {got}");
            got += n as u64;
        }
        assert_eq!(got, total);
        start.elapsed().as_secs_f64()
    });
    let mut s = UdtStream::connect(addr).await.unwrap();
    let reference = reference();
    let mut sent = 0u64;
    while sent < total {
        let n = CHUNK.min((total - sent) as usize);
        let phase = (sent % 251) as usize;
        s.write_all(&reference[phase..phase + n]).await.unwrap();
        sent += n as u64;
    }
    s.shutdown().await.unwrap();
    reader.await.unwrap()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn throughput(mb: u64, rounds: usize) {
    let total = mb << 20;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (mut b, mut a) = (Vec::new(), Vec::new());
    let gb = total as f64 / 1e9;
    let (mut bc, mut ac) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let cpu = cpu_seconds();
        let secs = blocking_once(total);
        let cpu_gb = (cpu_seconds() - cpu) / gb;
        let mbps = total as f64 * 8.0 / secs / 1e6;
        println!("{{\"api\":\"blocking\",\"round\":{round},\"bytes\":{total},\"seconds\":{secs:.3},\"mbps\":{mbps:.0},\"cpu_s_per_gb\":{cpu_gb:.2}}}");
        b.push(mbps);
        bc.push(cpu_gb);
        let cpu = cpu_seconds();
        let secs = rt.block_on(async_once(total));
        let cpu_gb = (cpu_seconds() - cpu) / gb;
        let mbps = total as f64 * 8.0 / secs / 1e6;
        println!("{{\"api\":\"async\",\"round\":{round},\"bytes\":{total},\"seconds\":{secs:.3},\"mbps\":{mbps:.0},\"cpu_s_per_gb\":{cpu_gb:.2}}}");
        a.push(mbps);
        ac.push(cpu_gb);
    }
    let (bcm, acm) = (median(&mut bc), median(&mut ac));
    let (mb_, ma) = (median(&mut b), median(&mut a));
    println!(
        "{{\"summary\":\"throughput\",\"rounds\":{rounds},\"blocking_median_mbps\":{mb_:.0},\"async_median_mbps\":{ma:.0},\"async_over_blocking\":{:.3},\"blocking_median_cpu_s_per_gb\":{bcm:.2},\"async_median_cpu_s_per_gb\":{acm:.2}}}",
        ma / mb_
    );
}

/// A client that echoes `bytes` through the server and keeps its stream open.
async fn echo_client(b: udt::Builder, server: SocketAddr, bytes: usize) -> UdtStream {
    let mut s = UdtStream::connect_with(&b, server).await.unwrap();
    let data = vec![0x5au8; bytes];
    s.write_all(&data).await.unwrap();
    let mut back = vec![0u8; bytes];
    s.read_exact(&mut back).await.unwrap();
    assert_eq!(back, data);
    s
}

fn many(conns: usize, bytes: usize) {
    let threads_before = status("Threads");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let listener = UdtListener::bind_with(&udt::Builder::new(), "127.0.0.1:0", conns)
            .await
            .unwrap();
        let server = listener.local_addr();
        let echoed = Arc::new(AtomicU64::new(0));
        let served = Arc::clone(&echoed);
        // Accepted streams echo until the client closes; the server keeps their tasks.
        tokio::spawn(async move {
            loop {
                let (s, _) = listener.accept().await.unwrap();
                let served = Arc::clone(&served);
                tokio::spawn(async move {
                    let (mut r, mut w) = s.into_split();
                    let n = tokio::io::copy(&mut r, &mut w).await.unwrap_or(0);
                    served.fetch_add(n, Ordering::Relaxed);
                });
            }
        });
        let threads_runtime = status("Threads");
        let rss_runtime = status("VmRSS");
        let port = udt::Builder::new().bind("127.0.0.1:0").unwrap();
        let b = udt::Builder::new().local_addr(port.local_addr());
        let start = Instant::now();
        let mut streams = Vec::with_capacity(conns);
        let mut threads_at_1000 = 0;
        for wave in (0..conns).step_by(512) {
            let n = 512.min(conns - wave);
            let tasks: Vec<_> = (0..n)
                .map(|_| tokio::spawn(echo_client(b.clone(), server, bytes)))
                .collect();
            for t in tasks {
                streams.push(t.await.unwrap());
            }
            if threads_at_1000 == 0 && streams.len() >= 1000.min(conns) {
                threads_at_1000 = status("Threads");
            }
        }
        let setup = start.elapsed().as_secs_f64();
        let threads_all = status("Threads");
        let rss_all = status("VmRSS");
        // Idle a second with everything open: keep-alives flow, the runtime stays put.
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let threads_idle = status("Threads");
        let open = streams
            .iter()
            .filter(|s| s.socket().state() == udt::ConnectionState::Connected)
            .count();
        let start = Instant::now();
        let closers: Vec<_> = streams
            .into_iter()
            .map(|mut s| tokio::spawn(async move { s.shutdown().await.is_ok() }))
            .collect();
        let mut closed = 0;
        for c in closers {
            closed += usize::from(c.await.unwrap());
        }
        let close_secs = start.elapsed().as_secs_f64();
        println!(
            "{{\"summary\":\"many\",\"conns\":{conns},\"echo_bytes\":{bytes},\"connected_and_echoed\":{open},\"setup_seconds\":{setup:.2},\"threads_before_runtime\":{threads_before},\"threads_runtime_started\":{threads_runtime},\"threads_after_1000\":{threads_at_1000},\"threads_all_open\":{threads_all},\"threads_after_1s_idle\":{threads_idle},\"rss_kb_runtime_started\":{rss_runtime},\"rss_kb_all_open\":{rss_all},\"rss_kb_per_connection_pair\":{:.1},\"closed\":{closed},\"close_seconds\":{close_secs:.2}}}",
            (rss_all.saturating_sub(rss_runtime)) as f64 / conns as f64
        );
        drop(port);
    });
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let mut mb = 1024u64;
    let mut rounds = 5usize;
    let mut conns = 10_000usize;
    let mut bytes = 1000usize;
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--mb" => mb = value.parse().expect("--mb: a number"),
            "--rounds" => rounds = value.parse().expect("--rounds: a number"),
            "--conns" => conns = value.parse().expect("--conns: a number"),
            "--bytes" => bytes = value.parse().expect("--bytes: a number"),
            _ => panic!("unknown option {flag}"),
        }
    }
    match mode.as_str() {
        "throughput" => throughput(mb, rounds.max(1)),
        "many" => many(conns.max(1), bytes.max(1)),
        _ => {
            eprintln!("usage: tokio_bench throughput [--mb M] [--rounds R] | many [--conns N] [--bytes B]");
            std::process::exit(64);
        }
    }
}
