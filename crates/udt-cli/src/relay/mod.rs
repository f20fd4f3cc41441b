//! `udt relay`: a user-space WAN path emulator for UDP.
//!
//! Datagrams from clients to `--listen` go to `--to`; replies from `--to` go back to the most
//! recent client. Each direction passes through its own emulated path ([`model::Link`]):
//! random loss, duplication, a DropTail bottleneck (rate, queue in packets), a one-way delay
//! with jitter, and reordering. The model is pure and tested with a virtual clock; [`io`]
//! runs it on real sockets with one thread per direction.

mod io;
mod model;
mod parse;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use serde::Serialize;

use io::{Clock, Dest, DirStats, Direction};
use model::{Link, LinkParams};
use parse::{Nanos, Packets, PerDir, Prob, Rate};

const AFTER_HELP: &str = "\
Every impairment flag takes one value for both directions (--delay 50ms) or a per-direction \
form: --delay fwd=50ms,rev=10ms, --rate fwd=1gbit (the other direction keeps the default). \
fwd is client -> --to, rev is --to -> client.

Model of each direction, in order: i.i.d. loss; duplication; a DropTail bottleneck (a packet \
leaves at max(arrival, previous departure) + (payload + --overhead bytes) * 8 / rate; at \
most --queue packets wait or are being sent, more are dropped); the one-way delay, drawn \
uniformly from [delay - jitter, delay + jitter] without reordering; reordering holds a packet \
back by --reorder-delay so that later ones overtake it; --clump releases packets only at \
multiples of its interval, together (at most --clump-max a tick). --queue applies only with \
--rate.

Units: rates bit, kbit, mbit, gbit (SI; a bare number is bit/s); durations ns, us, ms, s; \
probabilities 0.01 or 1%.

Counters are printed every --interval seconds and at exit (Ctrl-C, SIGTERM, --duration). \
'late' is how long after its modelled time a datagram actually left: a few tens of us means \
the emulation is faithful; growing values or kernel drops mean the relay cannot keep up (on a busy machine, try --realtime). Measurements of this machine: docs/relay.md.";

/// Arguments of `udt relay`.
#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct RelayArgs {
    /// Address to receive clients' datagrams on, HOST:PORT (port 0: any free port; the one
    /// chosen is printed on stderr at start).
    #[arg(long, value_name = "HOST:PORT")]
    listen: String,
    /// Address to forward to, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    to: String,
    /// Bottleneck rate (e.g. 500mbit, 1gbit, 64kbit; default unlimited).
    #[arg(long, value_name = "RATE")]
    rate: Option<PerDir<Rate>>,
    /// DropTail queue limit, packets [default: 1000].
    #[arg(long, value_name = "PACKETS")]
    queue: Option<PerDir<Packets>>,
    /// One-way delay (e.g. 50ms, 250us) [default: 0].
    #[arg(long, value_name = "TIME")]
    delay: Option<PerDir<Nanos>>,
    /// Delay variation: each packet's delay is uniform in delay ± jitter [default: 0].
    #[arg(long, value_name = "TIME")]
    jitter: Option<PerDir<Nanos>>,
    /// Probability of losing a datagram (0.01 or 1%) [default: 0].
    #[arg(long, value_name = "P")]
    loss: Option<PerDir<Prob>>,
    /// Probability of holding a datagram back so that later ones overtake it [default: 0].
    #[arg(long, value_name = "P")]
    reorder: Option<PerDir<Prob>>,
    /// How long a reordered datagram is held back [default: 1ms].
    #[arg(long, value_name = "TIME")]
    reorder_delay: Option<PerDir<Nanos>>,
    /// Probability of sending a datagram twice [default: 0].
    #[arg(long, value_name = "P")]
    duplicate: Option<PerDir<Prob>>,
    /// Clumped delivery: datagrams leave only at multiples of this interval, together, as
    /// interrupt coalescing, GRO or a virtual NIC hand them to a host (e.g. 125us); on the
    /// reverse direction this is ACK compression [default: 0, off].
    #[arg(long, value_name = "TIME")]
    clump: Option<PerDir<Nanos>>,
    /// With --clump: at most this many datagrams leave at one tick, the rest at the next
    /// (a NIC's rx-frames) [default: no limit].
    #[arg(long, value_name = "PACKETS")]
    clump_max: Option<PerDir<Packets>>,
    /// Seed of the random decisions (the same seed and traffic give the same decisions).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Bytes added to each datagram's payload when charging it to the rate, so that the rate
    /// is one of IP packets [default: 28 (IPv4 + UDP headers), 48 if --to is IPv6].
    #[arg(long, value_name = "BYTES")]
    overhead: Option<usize>,
    /// Seconds between counter reports (0: only at exit).
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    interval: f64,
    /// Exit after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Print reports as JSON lines on stdout (the last one has "final": true); other messages
    /// go to stderr.
    #[arg(long)]
    json: bool,
    /// Kernel socket buffer size each way, bytes.
    #[arg(long, default_value_t = 32 << 20, value_name = "BYTES")]
    socket_buffer: usize,
    /// Busy-wait this long before a packet is due instead of sleeping (precision vs CPU)
    /// [default: 20us, or 0 with --realtime].
    #[arg(long, value_name = "TIME")]
    spin: Option<Nanos>,
    /// Run the relay threads under real-time scheduling (SCHED_FIFO; needs root or
    /// CAP_SYS_NICE), so that a busy machine does not delay packets.
    #[arg(long)]
    realtime: bool,
}

/// Set by SIGINT/SIGTERM.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

fn install_signal_handlers() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

fn resolve(s: &str, what: &str) -> anyhow::Result<SocketAddr> {
    s.to_socket_addrs()
        .with_context(|| format!("cannot resolve {what} address {s:?}"))?
        .next()
        .with_context(|| format!("{what} address {s:?} resolves to nothing"))
}

/// The impairments of both directions from the flags.
fn link_params(a: &RelayArgs, overhead: usize) -> (LinkParams, LinkParams) {
    let d = LinkParams::default();
    let (rate_f, rate_r) = PerDir::resolve(&a.rate, Rate(d.rate_bps));
    let (queue_f, queue_r) = PerDir::resolve(&a.queue, Packets(d.queue_pkts));
    let (delay_f, delay_r) = PerDir::resolve(&a.delay, Nanos(d.delay_ns));
    let (jitter_f, jitter_r) = PerDir::resolve(&a.jitter, Nanos(d.jitter_ns));
    let (loss_f, loss_r) = PerDir::resolve(&a.loss, Prob(d.loss));
    let (reord_f, reord_r) = PerDir::resolve(&a.reorder, Prob(d.reorder));
    let (rdel_f, rdel_r) = PerDir::resolve(&a.reorder_delay, Nanos(d.reorder_delay_ns));
    let (dup_f, dup_r) = PerDir::resolve(&a.duplicate, Prob(d.duplicate));
    let (clump_f, clump_r) = PerDir::resolve(&a.clump, Nanos(d.clump_ns));
    let (cmax_f, cmax_r) = PerDir::resolve(&a.clump_max, Packets(d.clump_max));
    let fwd = LinkParams {
        rate_bps: rate_f.0,
        queue_pkts: queue_f.0,
        overhead_bytes: overhead,
        delay_ns: delay_f.0,
        jitter_ns: jitter_f.0,
        loss: loss_f.0,
        reorder: reord_f.0,
        reorder_delay_ns: rdel_f.0,
        duplicate: dup_f.0,
        clump_ns: clump_f.0,
        clump_max: cmax_f.0,
    };
    let rev = LinkParams {
        rate_bps: rate_r.0,
        queue_pkts: queue_r.0,
        overhead_bytes: overhead,
        delay_ns: delay_r.0,
        jitter_ns: jitter_r.0,
        loss: loss_r.0,
        reorder: reord_r.0,
        reorder_delay_ns: rdel_r.0,
        duplicate: dup_r.0,
        clump_ns: clump_r.0,
        clump_max: cmax_r.0,
    };
    (fwd, rev)
}

fn describe(p: &LinkParams) -> String {
    let mut s = format!(
        "rate {}, queue {} pkt, delay {} us",
        Rate(p.rate_bps),
        p.queue_pkts,
        p.delay_ns as f64 / 1e3
    );
    if p.jitter_ns > 0 {
        s += &format!(", jitter {} us", p.jitter_ns as f64 / 1e3);
    }
    if p.clump_ns > 0 {
        s += &format!(", clumped every {} us", p.clump_ns as f64 / 1e3);
        if p.clump_max > 0 {
            s += &format!(" (at most {} pkt)", p.clump_max);
        }
    }
    for (name, v) in [
        ("loss", p.loss),
        ("reorder", p.reorder),
        ("duplicate", p.duplicate),
    ] {
        if v > 0.0 {
            s += &format!(", {name} {v}");
        }
    }
    s
}

/// Counters of one direction at one moment, as printed.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct DirReport {
    received: u64,
    received_bytes: u64,
    forwarded: u64,
    forwarded_bytes: u64,
    dropped_queue: u64,
    dropped_loss: u64,
    duplicated: u64,
    reordered: u64,
    send_errors: u64,
    kernel_dropped: u64,
    dropped_line_full: u64,
    in_flight: u64,
    /// Mean lateness of sends against the model, µs.
    late_mean_us: f64,
    /// Largest lateness, µs.
    late_max_us: f64,
    /// Rate forwarded, counting --overhead bytes per datagram, Mbit/s (over the interval, or
    /// over the whole run in the final report).
    mbps: f64,
}

impl DirReport {
    fn read(s: &DirStats) -> Self {
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let forwarded = g(&s.forwarded);
        DirReport {
            received: g(&s.received),
            received_bytes: g(&s.received_bytes),
            forwarded,
            forwarded_bytes: g(&s.forwarded_bytes),
            dropped_queue: g(&s.dropped_queue),
            dropped_loss: g(&s.dropped_loss),
            duplicated: g(&s.duplicated),
            reordered: g(&s.reordered),
            send_errors: g(&s.send_errors),
            kernel_dropped: g(&s.kernel_dropped),
            dropped_line_full: g(&s.dropped_line_full),
            in_flight: g(&s.in_flight),
            late_mean_us: if forwarded == 0 {
                0.0
            } else {
                g(&s.late_sum_ns) as f64 / forwarded as f64 / 1e3
            },
            late_max_us: g(&s.late_max_ns) as f64 / 1e3,
            mbps: 0.0,
        }
    }

    /// Fills in the rate since `before`, over `secs` seconds.
    fn with_rate(mut self, before: &DirReport, secs: f64, overhead: usize) -> Self {
        let pkts = self.forwarded.saturating_sub(before.forwarded);
        let bytes = self.forwarded_bytes.saturating_sub(before.forwarded_bytes);
        let wire = bytes + pkts * overhead as u64;
        self.mbps = if secs > 0.0 {
            wire as f64 * 8.0 / secs / 1e6
        } else {
            0.0
        };
        self
    }

    fn line(&self) -> String {
        format!(
            "{:8.2} Mbit/s fwd {} qdrop {} loss {} dup {} reord {} kdrop {} late {:.0}/{:.0} us",
            self.mbps,
            self.forwarded,
            self.dropped_queue,
            self.dropped_loss,
            self.duplicated,
            self.reordered,
            self.kernel_dropped,
            self.late_mean_us,
            self.late_max_us
        )
    }
}

/// One report: periodic, or the final one.
#[derive(Debug, Serialize)]
struct Report {
    /// Seconds since start.
    t: f64,
    #[serde(rename = "final")]
    is_final: bool,
    listen: String,
    to: String,
    fwd: DirReport,
    rev: DirReport,
}

/// Runs the relay until a signal or `--duration`, then prints the final counters.
pub fn run(args: RelayArgs) -> anyhow::Result<()> {
    if !(args.interval >= 0.0 && args.interval.is_finite()) {
        bail!("--interval must be a non-negative number of seconds");
    }
    if let Some(d) = args.duration {
        if !(d >= 0.0 && d.is_finite()) {
            bail!("--duration must be a non-negative number of seconds");
        }
    }
    let listen = resolve(&args.listen, "--listen")?;
    let to = resolve(&args.to, "--to")?;
    let overhead = args.overhead.unwrap_or(if to.is_ipv4() { 28 } else { 48 });
    let (fwd_params, rev_params) = link_params(&args, overhead);

    let (down, down_buf) = io::open(listen, None, args.socket_buffer)
        .with_context(|| format!("cannot listen on {listen}"))?;
    let any: IpAddr = if to.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        Ipv6Addr::UNSPECIFIED.into()
    };
    let (up, up_buf) = io::open(SocketAddr::new(any, 0), Some(to), args.socket_buffer)
        .with_context(|| format!("cannot open a socket towards {to}"))?;
    let local = down.local_addr().context("listening socket address")?;
    eprintln!("udt relay: listening on {local}, forwarding to {to}");
    eprintln!("udt relay: fwd: {}", describe(&fwd_params));
    eprintln!("udt relay: rev: {}", describe(&rev_params));
    if down_buf < args.socket_buffer.min(1 << 30) || up_buf < args.socket_buffer.min(1 << 30) {
        eprintln!(
            "udt relay: warning: socket buffers granted {down_buf} / {up_buf} bytes of {} \
             asked (raise net.core.rmem_max)",
            args.socket_buffer
        );
    }

    // A real-time thread wakes within a few µs, and one that spins through most of each
    // second is throttled by the kernel for tens of ms (sched_rt_runtime_us): no spin then.
    let spin_ns = args
        .spin
        .map_or(if args.realtime { 0 } else { 20_000 }, |s| s.0);
    install_signal_handlers();
    let down = Arc::new(down);
    let up = Arc::new(up);
    let client = Arc::new(Mutex::new(None));
    let stop = Arc::new(AtomicBool::new(false));
    let clock = Clock::new();
    let fwd_stats = Arc::new(DirStats::default());
    let rev_stats = Arc::new(DirStats::default());
    let spawn = |name: &str, d: Direction| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || io::run_direction(d))
            .context("cannot start a relay thread")
    };
    let dir =
        |rx: &Arc<UdpSocket>, tx: &Arc<UdpSocket>, params, seed, stats: &Arc<DirStats>| Direction {
            rx: rx.clone(),
            tx: tx.clone(),
            dest: Dest::Connected,
            record_client: None,
            link: Link::new(params, seed),
            stats: stats.clone(),
            stop: stop.clone(),
            clock,
            spin_ns,
            realtime: args.realtime,
        };
    let mut fwd = dir(&down, &up, fwd_params, args.seed, &fwd_stats);
    fwd.record_client = Some(client.clone());
    // A different stream for the other direction, fixed by the same seed.
    let mut rev = dir(
        &up,
        &down,
        rev_params,
        args.seed ^ 0xD1B5_4A32_D192_ED03,
        &rev_stats,
    );
    rev.dest = Dest::Client(client);
    let threads = [spawn("relay-fwd", fwd)?, spawn("relay-rev", rev)?];

    let start = Instant::now();
    let deadline = args.duration.map(|d| start + Duration::from_secs_f64(d));
    let interval = (args.interval > 0.0).then(|| Duration::from_secs_f64(args.interval));
    let mut next_report = interval.map(|i| start + i);
    let mut last = (DirReport::default(), DirReport::default(), start);
    let report = |t: Instant, is_final: bool, last: &(DirReport, DirReport, Instant)| {
        let secs = t.duration_since(last.2).as_secs_f64();
        let fwd = DirReport::read(&fwd_stats).with_rate(&last.0, secs, overhead);
        let rev = DirReport::read(&rev_stats).with_rate(&last.1, secs, overhead);
        let r = Report {
            t: t.duration_since(start).as_secs_f64(),
            is_final,
            listen: local.to_string(),
            to: to.to_string(),
            fwd,
            rev,
        };
        if args.json {
            match serde_json::to_string(&r) {
                Ok(s) => println!("{s}"),
                Err(e) => eprintln!("udt relay: cannot encode a report: {e}"),
            }
        } else if is_final {
            println!("udt relay: {:.2} s", r.t);
            println!(
                "  dir  received  forwarded  queue-drop  loss-drop  duplicated  reordered  \
                 in-flight  kernel-drop  send-err  avg-Mbit/s  late-avg-us  late-max-us"
            );
            for (name, d) in [("fwd", &r.fwd), ("rev", &r.rev)] {
                println!(
                    "  {name}  {:8}  {:9}  {:10}  {:9}  {:10}  {:9}  {:9}  {:11}  {:8}  {:10.2}  \
                     {:11.1}  {:11.1}",
                    d.received,
                    d.forwarded,
                    d.dropped_queue,
                    d.dropped_loss,
                    d.duplicated,
                    d.reordered,
                    d.in_flight,
                    d.kernel_dropped,
                    d.send_errors,
                    d.mbps,
                    d.late_mean_us,
                    d.late_max_us
                );
                if d.dropped_line_full > 0 {
                    println!(
                        "  {name}: {} datagrams dropped because the delay line was full",
                        d.dropped_line_full
                    );
                }
            }
        } else {
            println!(
                "[{:7.2} s] fwd {} | rev {}",
                r.t,
                r.fwd.line(),
                r.rev.line()
            );
        }
        (fwd, rev, t)
    };
    loop {
        let now = Instant::now();
        if SIGNALLED.load(Ordering::SeqCst) || deadline.is_some_and(|d| now >= d) {
            break;
        }
        if let (Some(at), Some(i)) = (next_report, interval) {
            if now >= at {
                last = report(now, false, &last);
                next_report = Some(at + i);
            }
        }
        let mut sleep = Duration::from_millis(20);
        for t in [deadline, next_report].into_iter().flatten() {
            sleep = sleep.min(t.saturating_duration_since(now));
        }
        std::thread::sleep(sleep);
    }
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        if t.join().is_err() {
            bail!("a relay thread panicked");
        }
    }
    // The final report covers the whole run.
    report(
        Instant::now(),
        true,
        &(DirReport::default(), DirReport::default(), start),
    );
    Ok(())
}
