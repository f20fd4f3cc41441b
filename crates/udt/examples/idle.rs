//! The cost of idle connections: N connections to one listener, one UDP port per side.
//!
//! ```text
//! cargo run --release -p udt --example idle -- [--conns N] [--port P] [--client-port Q] [--idle S]
//! ```
//!
//! A listener on 127.0.0.1:P (default 9100) accepts N (default 1000) connections, all made
//! from 127.0.0.1:Q (default 9101): the clients share that port through reuse address (on by
//! default, as `UDT_REUSEADDR` in UDT4) and an explicit local address, so the process has two
//! UDP ports and two multiplexers (I/O threads) whatever N is. Once all N are accepted, the
//! example waits S seconds (default 5) with every connection idle and prints one JSON line:
//! connections, threads and resident memory of the process (from `/proc/self/status`), and the
//! CPU time spent during the idle wait (keep-alives, timers) per second. `bench/udt4_idle.cpp`
//! does the same with UDT4 4.11, and `bench/run.py` runs both side by side.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Options from the command line.
struct Opts {
    /// Connections to open.
    conns: usize,
    /// Listener's UDP port.
    port: u16,
    /// The clients' shared UDP port.
    client_port: u16,
    /// Idle wait before measuring CPU, seconds.
    idle: f64,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        conns: 1000,
        port: 9100,
        client_port: 9101,
        idle: 5.0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--conns" => o.conns = num(&flag, &value)?,
            "--port" => o.port = num(&flag, &value)?,
            "--client-port" => o.client_port = num(&flag, &value)?,
            "--idle" => o.idle = num(&flag, &value)?,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.conns == 0 || o.idle.is_nan() || o.idle < 0.0 {
        return Err("--conns must be positive and --idle non-negative".into());
    }
    Ok(o)
}

fn num<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("bad value for {flag}: {value}"))
}

/// A numeric field of `/proc/self/status` ("Threads", "VmRSS" in kB, "VmHWM" in kB), or -1.
fn status_field(name: &str) -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(-1)
}

/// User + system CPU time of this process, seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: `rusage` is plain integers (all-zero is valid), and getrusage only writes the
    // struct we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = parse().map_err(|e| {
        format!("{e}\nusage: idle [--conns N] [--port P] [--client-port Q] [--idle S]")
    })?;
    let threads_before = status_field("Threads");
    let rss_before = status_field("VmRSS");

    let server: SocketAddr = ([127, 0, 0, 1], o.port).into();
    let client: SocketAddr = ([127, 0, 0, 1], o.client_port).into();
    // A backlog of N: every handshake may arrive before the acceptor catches up.
    let listener = udt::Builder::new().listen(server, o.conns)?;
    let n = o.conns;
    let acceptor = std::thread::spawn(move || -> udt::Result<Vec<udt::Socket>> {
        let mut accepted = Vec::with_capacity(n);
        for _ in 0..n {
            accepted.push(listener.accept()?.0);
        }
        // The listener goes with the thread; the accepted sockets keep its port open.
        Ok(accepted)
    });

    let start = Instant::now();
    let builder = udt::Builder::new().reuse_addr(true).local_addr(client);
    let mut clients = Vec::with_capacity(o.conns);
    for _ in 0..o.conns {
        clients.push(builder.connect(server)?);
    }
    let accepted = acceptor.join().map_err(|_| "acceptor panicked")??;
    let setup = start.elapsed().as_secs_f64();
    let ports: std::collections::BTreeSet<u16> =
        clients.iter().map(|s| s.local_addr().port()).collect();

    let cpu0 = cpu_seconds();
    std::thread::sleep(Duration::from_secs_f64(o.idle));
    let idle_cpu = cpu_seconds() - cpu0;

    println!(
        "{{\"impl\":\"ours\",\"connections\":{},\"accepted\":{},\"udp_ports\":{},\"threads\":{},\
         \"threads_before\":{},\"rss_kb\":{},\"rss_before_kb\":{},\"hwm_kb\":{},\
         \"setup_seconds\":{:.3},\"idle_seconds\":{:.1},\"idle_cpu_per_s\":{:.4}}}",
        clients.len(),
        accepted.len(),
        ports.len() + 1,
        status_field("Threads"),
        threads_before,
        status_field("VmRSS"),
        rss_before,
        status_field("VmHWM"),
        setup,
        o.idle,
        idle_cpu / o.idle.max(1e-9),
    );
    // Leave without closing 2N sockets one by one (each close lingers on its own), as the UDT4
    // twin does; the process's end releases everything.
    std::process::exit(0)
}
