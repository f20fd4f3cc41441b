//! Connect / transfer / close cycles leave nothing behind: no file descriptors, no threads
//! (from `/proc/self/fd` and `/proc/self/task`), and resident memory that stops growing.
//!
//! Alone in its test binary, so that no other test's sockets or threads are counted.
//! `UDT_CYCLES=N` sets the number of cycles (default 500; `scripts/cycles-bench.sh` runs
//! 10 000 in a release build and reports the figures). Only fds and threads are asserted:
//! they are exact counts. RSS is printed (allocator caches make it noisy).

use std::time::{Duration, Instant};

use udt::{Builder, Listener};

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// (fds, threads) once they stop falling: I/O threads exit shortly after their last socket.
fn settled(limit: (usize, usize)) -> (usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = (count("/proc/self/fd"), count("/proc/self/task"));
        if (now.0 <= limit.0 && now.1 <= limit.1) || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One cycle: a client connects, sends `len` bytes, closes; the server reads them to the end.
fn cycle(listener: &Listener, len: usize, round: usize) {
    let server = std::thread::scope(|s| {
        let server = s.spawn(|| {
            let (sock, _) = listener.accept().expect("accept");
            let mut got = Vec::with_capacity(len);
            let mut buf = [0u8; 65_536];
            loop {
                match sock.recv(&mut buf) {
                    Ok(0) | Err(udt::Error::ConnectionLost) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) => panic!("round {round}: recv: {e}"),
                }
            }
            got
        });
        let client = Builder::new()
            .read_timeout(Some(Duration::from_secs(10)))
            .connect(listener.local_addr())
            .expect("connect");
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + round) as u8).collect();
        let mut off = 0;
        while off < len {
            off += client.send(&data[off..]).expect("send");
        }
        client.close().expect("close");
        (server.join().expect("server thread"), data)
    });
    assert!(server.0 == server.1, "round {round}: data differs");
}

#[test]
fn connect_transfer_close_cycles_leave_no_fds_or_threads() {
    let cycles: usize = std::env::var("UDT_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let listener = Builder::new()
        .read_timeout(Some(Duration::from_secs(10)))
        .listen("127.0.0.1:0", 64)
        .expect("listen");
    // Warm-up: the first cycles start the allocator's arenas and the runtime's statics.
    for r in 0..5 {
        cycle(&listener, 1000, r);
    }
    let base = settled((0, 0));
    let base = settled(base);
    let rss0 = rss_kb();
    let start = Instant::now();
    let mut trace = Vec::new();
    for r in 0..cycles {
        // Sizes: empty, one packet, several, and a few hundred kB.
        let len = [0, 1, 1456, 20_000, 300_000][r % 5];
        cycle(&listener, len, r);
        if (r + 1) % (cycles / 10).max(1) == 0 {
            let (fds, threads) = settled(base);
            trace.push((r + 1, fds, threads, rss_kb()));
        }
    }
    let end = settled(base);
    println!(
        "{cycles} cycles in {:.1} s; fds {} -> {}, threads {} -> {}, rss {} kB -> {} kB",
        start.elapsed().as_secs_f64(),
        base.0,
        end.0,
        base.1,
        end.1,
        rss0,
        rss_kb()
    );
    for (n, fds, threads, rss) in &trace {
        println!("after {n:>6} cycles: fds {fds:>3}  threads {threads:>3}  rss {rss:>7} kB");
    }
    assert!(end.0 <= base.0, "fds grew: {} -> {}", base.0, end.0);
    assert!(end.1 <= base.1, "threads grew: {} -> {}", base.1, end.1);
}
