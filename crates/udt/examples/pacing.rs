//! Pacing precision: how close the achieved sending rate comes to a fixed maximum bandwidth
//! (`UDT_MAXBW`) on loopback.
//!
//! ```text
//! cargo run --release -p udt --example pacing -- [SECONDS] [RATE_MBIT ...]
//! ```
//!
//! For each rate (default 100, 300 and 500 Mbit/s) a client sends to a listener in the same
//! process for SECONDS (default 3) after a 1 s warm-up, with `max_bandwidth` set to the rate.
//! The maximum bandwidth fixes the packet send period at `MSS / rate` (MSS = 1500 bytes
//! counted with IP and UDP headers, as UDT4 does), so the achieved rate is measured the same
//! way: packets sent (new and retransmitted, from the sender's statistics) × MSS × 8 / elapsed
//! time. Payload goodput at the receiver is printed too.
//!
//! As in UDT4, every 16th new packet opens a probing pair: the packet after it leaves at once
//! instead of one period later (the receiver's capacity estimate needs back-to-back pairs).
//! Unlike UDT4, the packet after the pair waits one period more, so perfect pacing sends the
//! set rate itself (UDT4 sends 16/15 of it).

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MSS: u64 = 1500;

struct Figures {
    set_mbps: f64,
    wire_mbps: f64,
    goodput_mbps: f64,
    retransmitted: u64,
    /// Share of samples in which congestion control's own period was longer than the
    /// maximum-bandwidth period, i.e. it, not the cap, limited the rate.
    cc_limited: f64,
    /// Share of samples in which the packets in flight filled the receiver's flow window, i.e.
    /// the receiving side (starved of CPU, say) limited the rate.
    window_limited: f64,
    /// CPU time of the whole process (sender, receiver, both I/O threads) per wall second.
    cpu_per_sec: f64,
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

fn measure(rate_mbit: f64, seconds: f64) -> udt::Result<Figures> {
    let listener = udt::Listener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr();
    let received = Arc::new(AtomicU64::new(0));
    let rx = Arc::clone(&received);
    let receiver = std::thread::spawn(move || -> udt::Result<()> {
        let (mut conn, _) = listener.accept()?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = conn.read(&mut buf).map_err(udt::Error::Io)?;
            if n == 0 {
                return Ok(());
            }
            rx.fetch_add(n as u64, Ordering::Relaxed);
        }
    });
    let bytes_per_sec = (rate_mbit * 1e6 / 8.0) as u64;
    let mut client = udt::Builder::new()
        .max_bandwidth(Some(bytes_per_sec))
        .linger(None)
        .connect(addr)?;
    let chunk = vec![0x42u8; 1 << 20];

    // Warm up (congestion control leaves slow start), then measure.
    let warm_until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < warm_until {
        client.write_all(&chunk).map_err(udt::Error::Io)?;
    }
    client.stats(true)?;
    let got0 = received.load(Ordering::Relaxed);
    let start = Instant::now();
    let cpu0 = cpu_seconds();
    let end = start + Duration::from_secs_f64(seconds);
    let cap_period_us = 1e6 * MSS as f64 / bytes_per_sec as f64;
    let (mut samples, mut limited, mut windowed) = (0u32, 0u32, 0u32);
    while Instant::now() < end {
        client.write_all(&chunk).map_err(udt::Error::Io)?;
        let st = client.stats(false)?;
        samples += 1;
        if st.us_pkt_snd_period > cap_period_us {
            limited += 1;
        }
        if st.pkt_flight_size >= st.pkt_flow_window {
            windowed += 1;
        }
    }
    let s = client.stats(false)?;
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let got = received.load(Ordering::Relaxed) - got0;
    drop(client);
    // The receiver sees the end of the stream (or the connection drop) and exits.
    let _ = receiver.join();
    Ok(Figures {
        set_mbps: rate_mbit,
        wire_mbps: s.pkt_sent as f64 * MSS as f64 * 8.0 / elapsed / 1e6,
        goodput_mbps: got as f64 * 8.0 / elapsed / 1e6,
        retransmitted: s.pkt_retrans,
        cc_limited: f64::from(limited) / f64::from(samples.max(1)),
        window_limited: f64::from(windowed) / f64::from(samples.max(1)),
        cpu_per_sec: cpu / elapsed,
    })
}

fn main() -> udt::Result<()> {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let mut rates: Vec<f64> = args.filter_map(|a| a.parse().ok()).collect();
    if rates.is_empty() {
        rates = vec![100.0, 300.0, 500.0];
    }
    println!(
        "| set (Mbit/s) | achieved, MSS-counted (Mbit/s) | vs. set | payload goodput (Mbit/s) \
         | retransmitted pkts | CC-limited samples | window-limited samples | CPU s / s |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rates {
        let f = measure(r, seconds)?;
        println!(
            "| {:.0} | {:.1} | {:+.2} % | {:.1} | {} | {:.0} % | {:.0} % | {:.2} |",
            f.set_mbps,
            f.wire_mbps,
            (f.wire_mbps / f.set_mbps - 1.0) * 100.0,
            f.goodput_mbps,
            f.retransmitted,
            f.cc_limited * 100.0,
            f.window_limited * 100.0,
            f.cpu_per_sec,
        );
    }
    Ok(())
}
