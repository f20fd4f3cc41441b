//! A listener under a flood of spoofed handshakes, on loopback.
//!
//! ```text
//! cargo run --release -p udt --example flood -- listen  --port P [--secs S]
//! cargo run --release -p udt --example flood -- attack  --to 127.0.0.1:P [--rate N] [--secs S] [--sockets K]
//! cargo run --release -p udt --example flood -- connect --to 127.0.0.1:P [--secs S] [--threads T]
//! ```
//!
//! `listen` accepts connections on 127.0.0.1:P and reads each to its end (a thread per
//! connection); every second it prints a JSON line with its resident memory (`VmRSS`, kB),
//! what the port's endpoint dropped and what it holds per peer ([`udt::Listener::port_stats`]).
//!
//! `attack` sends UDT handshakes to the listener from spoofed sources: `K` UDP sockets (ports)
//! each send with `sendmmsg` and, per datagram, an `IP_PKTINFO` control message naming another
//! source address in 127.1.0.0/16. All of 127.0.0.0/8 is local on Linux, so the kernel accepts
//! those sources without root, raw sockets or `IP_TRANSPARENT`, and the listener sees 65 536 × K
//! distinct (address, port) peers. Half the handshakes are first-phase requests, half
//! second-phase requests with guessed cookies. `--rate 0` (default) sends as fast as the
//! kernel takes them; `--phase first|second` floods with one phase only. The listener's echoes go back to the flooder's sockets, which never read
//! them (their receive buffers stay small and full). Prints the rate achieved.
//!
//! `connect` makes legitimate connections back to back from T threads (each: connect with a
//! 3 s timeout, send 4 KiB, close) and prints attempts, successes and latencies.
//! `scripts/flood-bench.sh` runs the three together.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use udt_proto::wire::{
    Control, ControlPacket, Handshake, PeerAddr, RequestType, SocketType, HANDSHAKE_LEN,
    UDT_VERSION,
};
use udt_proto::{SeqNo, SocketId};

/// Options from the command line.
struct Opts {
    mode: String,
    port: u16,
    to: SocketAddr,
    secs: f64,
    rate: u64,
    sockets: usize,
    threads: usize,
    /// Which handshakes the flood carries: 0 mixed, 1 first phase only, 2 second phase only.
    phase: u8,
}

fn parse() -> Result<Opts, String> {
    let mut args = std::env::args().skip(1);
    let mut o = Opts {
        mode: args.next().ok_or("mode: listen, attack or connect")?,
        port: 9200,
        to: "127.0.0.1:9200".parse().unwrap(),
        secs: 10.0,
        rate: 0,
        sockets: 8,
        threads: 4,
        phase: 0,
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |_| format!("bad value for {flag}: {value}");
        match flag.as_str() {
            "--port" => o.port = value.parse().map_err(bad)?,
            "--to" => o.to = value.parse().map_err(|_| format!("bad address {value}"))?,
            "--secs" => o.secs = value.parse().map_err(|_| format!("bad --secs {value}"))?,
            "--rate" => o.rate = value.parse().map_err(|_| format!("bad --rate {value}"))?,
            "--sockets" => {
                o.sockets = value
                    .parse()
                    .map_err(|_| format!("bad --sockets {value}"))?
            }
            "--threads" => {
                o.threads = value
                    .parse()
                    .map_err(|_| format!("bad --threads {value}"))?
            }
            "--phase" => {
                o.phase = match value.as_str() {
                    "mixed" => 0,
                    "first" => 1,
                    "second" => 2,
                    _ => return Err(format!("--phase: mixed, first or second, not {value}")),
                }
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.secs.is_nan() || o.secs <= 0.0 || o.sockets == 0 || o.threads == 0 {
        return Err("--secs, --sockets and --threads must be positive".into());
    }
    Ok(o)
}

/// `VmRSS` of this process, kB (-1 if unreadable).
fn rss_kb() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(-1)
}

fn listen(o: &Opts) -> Result<(), String> {
    let listener = udt::Builder::new()
        .listen(("127.0.0.1", o.port), 1024)
        .map_err(|e| format!("listen: {e}"))?;
    let listener = Arc::new(listener);
    let accepted = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    {
        let (listener, accepted) = (listener.clone(), accepted.clone());
        std::thread::spawn(move || {
            while let Ok((sock, _)) = listener.accept() {
                accepted.fetch_add(1, Ordering::Relaxed);
                std::thread::spawn(move || {
                    let mut buf = [0u8; 8192];
                    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
                    while matches!(sock.recv(&mut buf), Ok(n) if n > 0) {}
                });
            }
        });
    }
    let start = Instant::now();
    let rss0 = rss_kb();
    let mut max_rss = rss0;
    while start.elapsed().as_secs_f64() < o.secs && !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_secs(1));
        let (st, counts) = listener.port_stats();
        let rss = rss_kb();
        max_rss = max_rss.max(rss);
        println!(
            "{{\"t\":{:.1},\"accepted\":{},\"rss_kb\":{},\"rss0_kb\":{},\"max_rss_kb\":{},\
             \"handshakes_refused\":{},\"replies_dropped\":{},\"malformed\":{},\"unroutable\":{},\
             \"connections\":{},\"accepted_from\":{},\"queued_replies\":{}}}",
            start.elapsed().as_secs_f64(),
            accepted.load(Ordering::Relaxed),
            rss,
            rss0,
            max_rss,
            st.handshakes_refused,
            st.replies_dropped,
            st.malformed,
            st.unroutable,
            counts.connections,
            counts.accepted_from,
            counts.queued_replies
        );
    }
    Ok(())
}

/// A handshake datagram: first phase (`second == false`) or second phase with a guessed cookie.
fn handshake(i: u32, second: bool) -> Vec<u8> {
    let hs = Handshake {
        version: UDT_VERSION,
        socket_type: SocketType::STREAM,
        isn: SeqNo::from_masked(i.wrapping_mul(2_654_435_761)),
        mss: 1500,
        flow_window: 8192,
        request: if second {
            RequestType::RESPONSE
        } else {
            RequestType::REQUEST
        },
        socket_id: SocketId(1 + (i & 0x3FFF_FFFF)),
        cookie: if second {
            i.wrapping_mul(0x9E37_79B9)
        } else {
            0
        },
        peer_addr: PeerAddr::default(),
    };
    let mut buf = vec![0u8; 16 + HANDSHAKE_LEN];
    let n = ControlPacket::new(SocketId(0), Control::Handshake(hs))
        .emit(&mut buf)
        .expect("fits");
    buf.truncate(n);
    buf
}

/// Messages per `sendmmsg` call.
const BATCH: usize = 64;
/// Bytes of one `IP_PKTINFO` control message.
const CMSG_SPACE: usize = 32;

/// One flooding socket: sends `BATCH` handshakes per call, each from another 127.1.x.y.
fn attack_socket(
    to: SocketAddrV4,
    first: u32,
    phase: u8,
    sent: &AtomicU64,
    stop: &AtomicBool,
    per_s: u64,
) {
    // SAFETY: plain socket calls on a descriptor this function owns; every pointer passed to the
    // kernel points into the arrays below, which outlive the calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let small: libc::c_int = 4096;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&small as *const libc::c_int).cast(),
            4,
        );
        let mut dst: libc::sockaddr_in = std::mem::zeroed();
        dst.sin_family = libc::AF_INET as libc::sa_family_t;
        dst.sin_port = to.port().to_be();
        dst.sin_addr.s_addr = u32::from(*to.ip()).to_be();
        let mut bodies = vec![[0u8; 16 + HANDSHAKE_LEN]; BATCH];
        let mut iovs: Vec<libc::iovec> = Vec::with_capacity(BATCH);
        let mut cmsgs = vec![[0u64; CMSG_SPACE / 8]; BATCH];
        let mut msgs: Vec<libc::mmsghdr> = vec![std::mem::zeroed(); BATCH];
        for b in bodies.iter_mut() {
            iovs.push(libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            });
        }
        let mut i = first;
        let start = Instant::now();
        let mut total = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if per_s > 0 {
                let due = (start.elapsed().as_secs_f64() * per_s as f64) as u64;
                if total >= due {
                    std::thread::sleep(Duration::from_micros(200));
                    continue;
                }
            }
            for k in 0..BATCH {
                i = i.wrapping_add(1);
                let second = match phase {
                    1 => false,
                    2 => true,
                    _ => i % 2 == 1,
                };
                bodies[k].copy_from_slice(&handshake(i, second));
                let src = Ipv4Addr::new(127, 1, (i >> 8) as u8, i as u8);
                let c = cmsgs[k].as_mut_ptr().cast::<libc::cmsghdr>();
                (*c).cmsg_level = libc::IPPROTO_IP;
                (*c).cmsg_type = libc::IP_PKTINFO;
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::in_pktinfo>() as u32) as _;
                let info = libc::CMSG_DATA(c).cast::<libc::in_pktinfo>();
                let mut pi: libc::in_pktinfo = std::mem::zeroed();
                pi.ipi_spec_dst.s_addr = u32::from(src).to_be();
                info.write_unaligned(pi);
                let h = &mut msgs[k].msg_hdr;
                h.msg_name = (&mut dst as *mut libc::sockaddr_in).cast();
                h.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
                h.msg_iov = &mut iovs[k];
                h.msg_iovlen = 1;
                h.msg_control = cmsgs[k].as_mut_ptr().cast();
                h.msg_controllen =
                    libc::CMSG_SPACE(std::mem::size_of::<libc::in_pktinfo>() as u32) as _;
            }
            let n = libc::sendmmsg(fd, msgs.as_mut_ptr(), BATCH as u32, 0);
            if n > 0 {
                total += n as u64;
                sent.fetch_add(n as u64, Ordering::Relaxed);
            } else {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINVAL) {
                    panic!("sendmmsg with IP_PKTINFO refused: {e}");
                }
                std::thread::yield_now();
            }
        }
        libc::close(fd);
    }
}

fn attack(o: &Opts) -> Result<(), String> {
    let SocketAddr::V4(to) = o.to else {
        return Err("attack: --to must be an IPv4 address".into());
    };
    let sent = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let per_socket = o.rate / o.sockets as u64;
    let threads: Vec<_> = (0..o.sockets)
        .map(|k| {
            let (sent, stop, phase) = (sent.clone(), stop.clone(), o.phase);
            std::thread::spawn(move || {
                attack_socket(to, (k as u32) << 24, phase, &sent, &stop, per_socket)
            })
        })
        .collect();
    let start = Instant::now();
    let mut last = 0;
    while start.elapsed().as_secs_f64() < o.secs {
        std::thread::sleep(Duration::from_secs(1));
        let now = sent.load(Ordering::Relaxed);
        eprintln!("flood: {} handshakes/s", now - last);
        last = now;
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().map_err(|_| "a flooding thread panicked")?;
    }
    let secs = start.elapsed().as_secs_f64();
    let total = sent.load(Ordering::Relaxed);
    println!(
        "{{\"sent\":{total},\"secs\":{secs:.2},\"per_s\":{:.0},\"sockets\":{}}}",
        total as f64 / secs,
        o.sockets
    );
    Ok(())
}

fn connect(o: &Opts) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    let to = o.to;
    let threads: Vec<_> = (0..o.threads)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let (mut ok, mut failed, mut lat) = (0u64, 0u64, Vec::new());
                let payload = [0x5Au8; 4096];
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let r = udt::Builder::new()
                        .connect_timeout(Duration::from_secs(3))
                        .linger(Some(Duration::from_secs(3)))
                        .connect(to)
                        .and_then(|s| {
                            let mut off = 0;
                            while off < payload.len() {
                                off += s.send(&payload[off..])?;
                            }
                            s.close()
                        });
                    match r {
                        Ok(()) => {
                            ok += 1;
                            lat.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                        Err(e) => {
                            failed += 1;
                            eprintln!("connect failed: {e}");
                        }
                    }
                }
                (ok, failed, lat)
            })
        })
        .collect();
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(o.secs));
    stop.store(true, Ordering::Relaxed);
    let (mut ok, mut failed, mut lat) = (0, 0, Vec::new());
    for t in threads {
        let (a, b, l) = t.join().map_err(|_| "a client thread panicked")?;
        ok += a;
        failed += b;
        lat.extend(l);
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!(
        "{{\"attempts\":{},\"ok\":{ok},\"failed\":{failed},\"success\":{:.4},\"per_s\":{:.1},\
         \"ms_p50\":{:.2},\"ms_p99\":{:.2},\"ms_max\":{:.2}}}",
        ok + failed,
        ok as f64 / (ok + failed).max(1) as f64,
        ok as f64 / secs,
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
    Ok(())
}

fn main() {
    let r = parse().and_then(|o| match o.mode.as_str() {
        "listen" => listen(&o),
        "attack" => attack(&o),
        "connect" => connect(&o),
        m => Err(format!("unknown mode {m}")),
    });
    if let Err(e) = r {
        eprintln!("flood: {e}");
        std::process::exit(2);
    }
}
