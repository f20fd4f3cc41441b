//! The relay's real-network side: UDP sockets with large buffers, batched receive
//! (`recvmmsg`, with the kernel's arrival timestamp and drop counter) and send (`sendmmsg`),
//! and one thread per direction that feeds arrivals to the [`Link`] model and sends each copy
//! when the model releases it.
//!
//! Timing: a direction thread sleeps in `ppoll` on its receiving socket until the next release
//! is due (with 1 ns timer slack), then spins for the last few microseconds (`--spin`), so a
//! packet leaves within a few µs of its modelled time when the machine is not overloaded. How
//! late each packet actually left is measured and reported, so an overloaded relay says so.
//! Arrival times are the kernel's receive timestamps, so batching and wake-up latency do not
//! shift the serialisation model.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::mem::MaybeUninit;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::model::Link;

/// Datagrams moved per system call.
const BATCH: usize = 64;
/// Largest datagram relayed, bytes (the largest UDP payload); longer ones are truncated by the
/// kernel and dropped.
const MAX_DATAGRAM: usize = 65_536;
/// `SO_TIMESTAMPNS` on Linux: a receive timestamp (realtime clock, ns) per datagram.
const SO_TIMESTAMPNS: libc::c_int = 35;
/// `SO_RXQ_OVFL` on Linux: the socket's count of datagrams dropped for lack of buffer space.
const SO_RXQ_OVFL: libc::c_int = 40;
/// `SOL_UDP`: the socket-option level of UDP.
const SOL_UDP: libc::c_int = 17;
/// `UDP_GRO` on Linux: deliver datagrams coalesced into one buffer with their segment size in a
/// control message. A GSO sender's buffers then reach the relay whole: on loopback the
/// kernel does not cut them up on the sender's account, as it must for a socket without GRO
/// (about a tenth of a paced `udt perf` sender's CPU went to that).
const UDP_GRO: libc::c_int = 104;
/// Longest sleep without re-checking the stop flag.
const MAX_SLEEP: Duration = Duration::from_millis(20);
/// Free packet buffers kept for reuse at most (more are returned to the allocator).
const POOL_MAX: usize = 1 << 16;
/// Datagrams held in one direction's delay line at most: bounds memory (about 1.5 GB of
/// 1500-byte datagrams) whatever rate and delay are asked for and whatever arrives. 1 Gbit/s
/// for 10 s is 833 000 datagrams.
const LINE_MAX: usize = 1 << 20;

/// Opens a non-blocking UDP socket bound to `bind` (and connected to `connect`, so that only
/// that peer's datagrams are received), with kernel buffers of `buffer` bytes each way.
/// Returns the socket and the receive buffer the kernel granted, bytes.
pub fn open(
    bind: SocketAddr,
    connect: Option<SocketAddr>,
    buffer: usize,
) -> io::Result<(UdpSocket, usize)> {
    let sock = UdpSocket::bind(bind)?;
    sock.set_nonblocking(true)?;
    let fd = sock.as_raw_fd();
    let size = libc::c_int::try_from(buffer).unwrap_or(libc::c_int::MAX);
    // The *FORCE options pass net.core.rmem_max/wmem_max when we may (root or
    // CAP_NET_ADMIN); otherwise the plain ones get what the limits allow.
    if setsockopt_int(fd, libc::SO_RCVBUFFORCE, size).is_err() {
        setsockopt_int(fd, libc::SO_RCVBUF, size)?;
    }
    if setsockopt_int(fd, libc::SO_SNDBUFFORCE, size).is_err() {
        setsockopt_int(fd, libc::SO_SNDBUF, size)?;
    }
    setsockopt_int(fd, SO_TIMESTAMPNS, 1)?;
    // Not every kernel has it; the drop count is then reported as zero.
    let _ = setsockopt_int(fd, SO_RXQ_OVFL, 1);
    // Nor this one; datagrams then come one per buffer.
    let _ = setsockopt_at(fd, SOL_UDP, UDP_GRO, 1);
    if let Some(peer) = connect {
        sock.connect(peer)?;
    }
    let granted = getsockopt_int(fd, libc::SO_RCVBUF).unwrap_or(0) / 2;
    Ok((sock, granted))
}

fn setsockopt_int(fd: RawFd, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    setsockopt_at(fd, libc::SOL_SOCKET, opt, v)
}

fn setsockopt_at(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: setsockopt with a pointer to a live c_int and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt_int(fd: RawFd, opt: libc::c_int) -> io::Result<usize> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into the live c_int.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(usize::try_from(v).unwrap_or(0))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A monotonic clock in nanoseconds from the relay's start.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock that reads 0 now.
    pub fn new() -> Self {
        Clock {
            origin: Instant::now(),
        }
    }

    /// Nanoseconds since the origin.
    pub fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Counters of one direction, shared with the reporting thread.
#[derive(Debug, Default)]
pub struct DirStats {
    /// Datagrams received from the sending side.
    pub received: AtomicU64,
    /// Payload bytes received.
    pub received_bytes: AtomicU64,
    /// Datagrams (copies included) sent on.
    pub forwarded: AtomicU64,
    /// Payload bytes sent on.
    pub forwarded_bytes: AtomicU64,
    /// Dropped because the emulated queue was full.
    pub dropped_queue: AtomicU64,
    /// Dropped by the emulated random loss.
    pub dropped_loss: AtomicU64,
    /// Extra copies made.
    pub duplicated: AtomicU64,
    /// Held back to be overtaken.
    pub reordered: AtomicU64,
    /// Sends the kernel refused (e.g. nobody listening at `--to`), or replies with no client
    /// to go to yet.
    pub send_errors: AtomicU64,
    /// Datagrams the kernel dropped before the relay read them (receive buffer full: the
    /// relay could not keep up), from `SO_RXQ_OVFL`.
    pub kernel_dropped: AtomicU64,
    /// Copies dropped because the delay line already held [`LINE_MAX`] datagrams.
    pub dropped_line_full: AtomicU64,
    /// Copies accepted by the model and not yet sent.
    pub in_flight: AtomicU64,
    /// Sum over sent datagrams of how late each left compared with the model, ns.
    pub late_sum_ns: AtomicU64,
    /// The latest any datagram left compared with the model, ns.
    pub late_max_ns: AtomicU64,
}

/// Where a direction sends: its socket is connected (towards `--to`), or it sends to the
/// latest client seen on the listening socket.
#[derive(Clone, Debug)]
pub enum Dest {
    /// The socket is connected to the destination.
    Connected,
    /// The most recent client address (set by the forward direction).
    Client(Arc<Mutex<Option<SocketAddr>>>),
}

/// Everything one direction thread needs.
pub struct Direction {
    /// Socket the direction receives on.
    pub rx: Arc<UdpSocket>,
    /// Socket the direction sends from.
    pub tx: Arc<UdpSocket>,
    /// Where it sends.
    pub dest: Dest,
    /// Where to record the sender of each datagram received (forward direction only).
    pub record_client: Option<Arc<Mutex<Option<SocketAddr>>>>,
    /// The path model.
    pub link: Link,
    /// Shared counters.
    pub stats: Arc<DirStats>,
    /// Set to stop; the thread reads what is already waiting, then returns.
    pub stop: Arc<AtomicBool>,
    /// The relay's clock.
    pub clock: Clock,
    /// Busy-wait this long before a due release instead of sleeping, ns.
    pub spin_ns: u64,
    /// Run under `SCHED_FIFO` so that other processes cannot delay releases.
    pub realtime: bool,
}

/// A copy waiting in the delay line.
#[derive(Debug)]
struct Pending {
    release: u64,
    seq: u64,
    data: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.release, self.seq) == (o.release, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    /// By release time, then by arrival order (so equal times keep their order).
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.release, self.seq).cmp(&(o.release, o.seq))
    }
}

/// Runs one direction until its stop flag is set.
pub fn run_direction(mut d: Direction) {
    // SAFETY: prctl with an integer argument; it only sets this thread's timer slack, so that
    // ppoll wakes when asked rather than up to 50 µs later.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
    if d.realtime {
        if let Err(e) = set_realtime() {
            eprintln!("udt relay: warning: cannot use real-time scheduling ({e}); continuing");
        }
    }
    let mut rx = RecvBatch::new();
    let mut tx = SendBatch::new();
    let mut line: BinaryHeap<Reverse<Pending>> = BinaryHeap::new();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut seq = 0u64;
    let mut last_arrival = 0u64;
    let mut last_client: Option<SocketAddr> = None;
    let mut due: Vec<Pending> = Vec::with_capacity(BATCH);
    let rx_fd = d.rx.as_raw_fd();
    // No datagram can be due sooner than the minimum one-way delay after it arrived, and the
    // model uses kernel arrival stamps: so with a delay, arrivals need only be read every
    // half minimum delay (at most every millisecond), in large batches, instead of waking
    // for each one. Without a delay, the thread wakes on every arrival.
    let p = d.link.params();
    let read_every = (p.delay_ns.saturating_sub(p.jitter_ns) / 2).min(1_000_000);
    let coalesce = read_every >= 20_000;
    let mut next_read = 0u64;
    let tx_fd = d.tx.as_raw_fd();
    loop {
        let stopping = d.stop.load(Ordering::Relaxed);
        // Everything that arrived.
        let mut read_now = !coalesce || stopping || d.clock.now() >= next_read;
        if read_now {
            next_read = d.clock.now().saturating_add(read_every);
        }
        while read_now {
            let read = rx.recv(rx_fd);
            if read == 0 {
                break;
            }
            let now = d.clock.now();
            let wall = SystemTime::now();
            for i in 0..rx.got.len() {
                let got = rx.got[i];
                // The kernel stamped the arrival on the wall clock: how long ago that was,
                // taken off now, is the arrival on our clock; kept monotonic for the model.
                let ago = got
                    .stamp
                    .and_then(|s| wall.duration_since(s).ok())
                    .map_or(0, |a| u64::try_from(a.as_nanos()).unwrap_or(u64::MAX));
                let t = now.saturating_sub(ago).max(last_arrival);
                last_arrival = t;
                if let Some(rec) = &d.record_client {
                    if last_client != Some(got.from) {
                        last_client = Some(got.from);
                        *rec.lock().unwrap_or_else(|p| p.into_inner()) = Some(got.from);
                    }
                }
                // The datagrams of a GRO buffer share its arrival stamp.
                for bytes in rx.segments(i) {
                    for &release in d.link.offer(t, bytes.len()).as_slice() {
                        if line.len() >= LINE_MAX {
                            d.stats.dropped_line_full.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        let mut data = pool.pop().unwrap_or_default();
                        data.clear();
                        data.extend_from_slice(bytes);
                        line.push(Reverse(Pending { release, seq, data }));
                        seq += 1;
                    }
                }
            }
            read_now = read == BATCH;
        }
        d.stats
            .kernel_dropped
            .store(u64::from(rx.kernel_drops), Ordering::Relaxed);
        if stopping {
            publish(&d, line.len());
            return;
        }
        // Everything due.
        loop {
            let now = d.clock.now();
            while due.len() < BATCH && line.peek().is_some_and(|p| p.0.release <= now) {
                if let Some(Reverse(p)) = line.pop() {
                    due.push(p);
                }
            }
            if due.is_empty() {
                break;
            }
            let to = match &d.dest {
                Dest::Connected => None,
                Dest::Client(c) => match *c.lock().unwrap_or_else(|p| p.into_inner()) {
                    Some(a) => Some(a),
                    None => {
                        // No client has spoken yet: nowhere to send a reply.
                        d.stats
                            .send_errors
                            .fetch_add(due.len() as u64, Ordering::Relaxed);
                        pool.extend(due.drain(..).map(|p| p.data));
                        continue;
                    }
                },
            };
            let mut late_sum = 0u64;
            let mut late_max = 0u64;
            let mut bytes = 0u64;
            for p in &due {
                let late = now.saturating_sub(p.release);
                late_sum += late;
                late_max = late_max.max(late);
                bytes += p.data.len() as u64;
            }
            let refused = tx.send(tx_fd, &due, to);
            let s = &d.stats;
            s.forwarded
                .fetch_add((due.len() - refused) as u64, Ordering::Relaxed);
            s.forwarded_bytes.fetch_add(bytes, Ordering::Relaxed);
            s.send_errors.fetch_add(refused as u64, Ordering::Relaxed);
            s.late_sum_ns.fetch_add(late_sum, Ordering::Relaxed);
            s.late_max_ns.fetch_max(late_max, Ordering::Relaxed);
            let room = POOL_MAX.saturating_sub(pool.len());
            pool.extend(due.drain(..).map(|p| p.data).take(room));
            due.clear();
            // A relay that fell behind must not stop reading while it catches up, or the
            // kernel would drop arrivals: go back to reading when a read is due.
            if !coalesce || d.clock.now() >= next_read {
                break;
            }
        }
        publish(&d, line.len());
        let next_release = line.peek().map(|p| p.0.release);
        if coalesce {
            // Sleep until the next release or the next read, without waking for arrivals.
            // Only a release needs the spin's precision.
            let (until, spin) = match next_release {
                Some(r) if r <= next_read => (r, d.spin_ns),
                _ => (next_read, 0),
            };
            wait(-1, &d.clock, Some(until), spin);
        } else {
            wait(rx_fd, &d.clock, next_release, d.spin_ns);
        }
    }
}

/// Puts the calling thread under `SCHED_FIFO` at a low real-time priority: it then runs as
/// soon as it wakes, ahead of ordinary processes, as netem runs in the kernel. The thread
/// sleeps between releases and spins only briefly, and the kernel's real-time throttling
/// (`sched_rt_runtime_us`) still leaves the others some CPU.
fn set_realtime() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: sched_setscheduler on this thread (tid 0) with a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Copies the model's counters into the shared ones.
fn publish(d: &Direction, in_flight: usize) {
    let c = d.link.counters();
    let s = &d.stats;
    s.received.store(c.received, Ordering::Relaxed);
    s.received_bytes.store(c.received_bytes, Ordering::Relaxed);
    s.dropped_queue.store(c.dropped_queue, Ordering::Relaxed);
    s.dropped_loss.store(c.dropped_loss, Ordering::Relaxed);
    s.duplicated.store(c.duplicated, Ordering::Relaxed);
    s.reordered.store(c.reordered, Ordering::Relaxed);
    s.in_flight.store(in_flight as u64, Ordering::Relaxed);
}

/// Sleeps until `deadline` (ns on `clock`) or until `fd` is readable (a negative `fd`: only
/// until `deadline`): `ppoll` while more than `spin_ns` remain, then a busy wait, because
/// waking from a sleep takes tens of µs.
fn wait(fd: RawFd, clock: &Clock, deadline: Option<u64>, spin_ns: u64) {
    let now = clock.now();
    let sleep = match deadline {
        Some(d) if d <= now => return,
        Some(d) if d - now <= spin_ns => {
            while clock.now() < d {
                std::hint::spin_loop();
            }
            return;
        }
        Some(d) => Duration::from_nanos(d - now - spin_ns).min(MAX_SLEEP),
        None => MAX_SLEEP,
    };
    let timeout = libc::timespec {
        tv_sec: sleep.as_secs() as libc::time_t,
        tv_nsec: sleep.subsec_nanos() as libc::c_long,
    };
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd and a valid timespec; the signal mask is left unchanged.
    unsafe {
        libc::ppoll(&mut p, 1, &timeout, std::ptr::null());
    }
}

/// One received buffer's metadata; its datagrams are [`RecvBatch::segments`].
#[derive(Clone, Copy, Debug)]
struct Received {
    from: SocketAddr,
    len: usize,
    /// Size of each coalesced datagram (the last may be shorter), or 0 for one datagram.
    seg: usize,
    stamp: Option<SystemTime>,
}

/// Reusable buffers for `recvmmsg`.
struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    addrs: Vec<MaybeUninit<libc::sockaddr_storage>>,
    cmsgs: Vec<[u64; 12]>,
    /// Compacted to the datagrams kept, in arrival order.
    got: Vec<Received>,
    /// Where each kept datagram's bytes are.
    slot: Vec<usize>,
    /// The socket's cumulative drop count, as last reported by the kernel.
    kernel_drops: u32,
    /// Scratch headers for the system call, refilled before each call (kept to avoid two
    /// allocations per call when the thread wakes for every datagram).
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl RecvBatch {
    fn new() -> Self {
        RecvBatch {
            bufs: (0..BATCH).map(|_| vec![0u8; MAX_DATAGRAM]).collect(),
            addrs: vec![MaybeUninit::zeroed(); BATCH],
            cmsgs: vec![[0u64; 12]; BATCH],
            got: Vec::with_capacity(BATCH),
            slot: Vec::with_capacity(BATCH),
            kernel_drops: 0,
            iovs: Vec::with_capacity(BATCH),
            msgs: Vec::with_capacity(BATCH),
        }
    }

    /// The datagrams of received buffer `i`, in arrival order: one (possibly empty) unless
    /// GRO coalesced several.
    fn segments(&self, i: usize) -> impl Iterator<Item = &[u8]> {
        let r = self.got[i];
        let data = &self.bufs[self.slot[i]][..r.len];
        let seg = if r.seg == 0 { r.len.max(1) } else { r.seg };
        let count = r.len.div_ceil(seg).max(1);
        (0..count).map(move |k| &data[(k * seg).min(r.len)..((k + 1) * seg).min(r.len)])
    }

    /// Reads up to [`BATCH`] datagrams without blocking; returns how many were read (0 when
    /// none was waiting or the socket reported an error, such as an ICMP unreachable). The
    /// ones kept (not truncated, from an IP address) are in `got`.
    fn recv(&mut self, fd: RawFd) -> usize {
        self.got.clear();
        self.slot.clear();
        self.iovs.clear();
        self.iovs.extend(self.bufs.iter_mut().map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        }));
        self.msgs.clear();
        for i in 0..BATCH {
            // SAFETY: mmsghdr is plain data; all-zero is valid and is filled in below.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_name = self.addrs[i].as_mut_ptr().cast();
            m.msg_hdr.msg_namelen =
                std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            m.msg_hdr.msg_iov = &mut self.iovs[i];
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = self.cmsgs[i].as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = std::mem::size_of::<[u64; 12]>() as _;
            self.msgs.push(m);
        }
        // SAFETY: every header points into heap buffers owned by `self` (`bufs`, `addrs`,
        // `cmsgs`, `iovs`), alive and not resized during the call; the kernel writes at most
        // the lengths given.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n <= 0 {
            return 0;
        }
        for (i, m) in self.msgs.iter().enumerate().take(n as usize) {
            let hdr = &m.msg_hdr;
            let (stamp, drops, seg) = control(hdr);
            if let Some(d) = drops {
                self.kernel_drops = self.kernel_drops.max(d);
            }
            if hdr.msg_flags & libc::MSG_TRUNC != 0 {
                continue;
            }
            // SAFETY: the kernel filled the sockaddr_storage this header points to.
            let storage = unsafe { &*hdr.msg_name.cast::<libc::sockaddr_storage>() };
            let Some(from) = to_socket_addr(storage) else {
                continue;
            };
            self.got.push(Received {
                from,
                len: m.msg_len as usize,
                seg: seg.unwrap_or(0),
                stamp,
            });
            self.slot.push(i);
        }
        n as usize
    }
}

/// The receive timestamp, the socket's drop count and the GRO segment size from a buffer's
/// control messages.
fn control(hdr: &libc::msghdr) -> (Option<SystemTime>, Option<u32>, Option<usize>) {
    let mut stamp = None;
    let mut drops = None;
    let mut seg = None;
    // SAFETY: CMSG_* walk the control buffer the kernel filled, within `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET {
                if (*c).cmsg_type == SO_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                    stamp = Some(
                        SystemTime::UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
                    );
                } else if (*c).cmsg_type == SO_RXQ_OVFL {
                    drops = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
                }
            } else if (*c).cmsg_level == SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let s = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                seg = usize::try_from(s).ok().filter(|&s| s > 0);
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    (stamp, drops, seg)
}

/// Reads an IPv4 or IPv6 address out of a `sockaddr_storage` the kernel filled.
fn to_socket_addr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::new(ip.into(), u16::from_be(a.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                std::net::Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Writes `addr` as a `sockaddr_storage`; returns it and its length.
fn to_sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe {
                std::ptr::write(
                    (&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>(),
                    sin,
                );
            }
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe {
                std::ptr::write(
                    (&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>(),
                    sin6,
                );
            }
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Reusable headers for `sendmmsg`.
struct SendBatch {
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl SendBatch {
    fn new() -> Self {
        SendBatch {
            iovs: Vec::with_capacity(BATCH),
            msgs: Vec::with_capacity(BATCH),
        }
    }

    /// Sends every datagram of `pkts` (to `to`, or on the connected socket when `None`),
    /// waiting for room in the socket buffer when it is full; returns how many the kernel
    /// refused (skipped: UDP may drop anyway).
    fn send(&mut self, fd: RawFd, pkts: &[Pending], to: Option<SocketAddr>) -> usize {
        let mut dest = to.map(to_sockaddr);
        let mut start = 0;
        let mut refused = 0;
        while start < pkts.len() {
            self.iovs.clear();
            self.msgs.clear();
            for p in &pkts[start..] {
                self.iovs.push(libc::iovec {
                    iov_base: p.data.as_ptr() as *mut libc::c_void,
                    iov_len: p.data.len(),
                });
            }
            for iov in self.iovs.iter_mut() {
                // SAFETY: plain data, zero is valid; the fields used are filled in below.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                if let Some((storage, len)) = dest.as_mut() {
                    m.msg_hdr.msg_name = (storage as *mut libc::sockaddr_storage).cast();
                    m.msg_hdr.msg_namelen = *len;
                }
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                self.msgs.push(m);
            }
            // SAFETY: every header points at buffers alive for the call (`pkts`, `dest`,
            // `self.iovs`); the kernel only reads them.
            let n = unsafe {
                libc::sendmmsg(
                    fd,
                    self.msgs.as_mut_ptr(),
                    self.msgs.len() as libc::c_uint,
                    0,
                )
            };
            if n > 0 {
                start += n as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => wait_writable(fd),
                _ => {
                    // E.g. ECONNREFUSED after an ICMP unreachable: skip this datagram.
                    refused += 1;
                    start += 1;
                }
            }
        }
        refused
    }
}

/// Blocks up to 1 ms until `fd` is writable.
fn wait_writable(fd: RawFd) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe {
        libc::poll(&mut p, 1, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_round_trip() {
        for a in ["127.0.0.1:9000", "[::1]:65535", "[fe80::1%2]:1"] {
            let addr: SocketAddr = a.parse().unwrap();
            let (storage, _) = to_sockaddr(addr);
            assert_eq!(to_socket_addr(&storage), Some(addr));
        }
    }

    #[test]
    fn delay_line_orders_by_release_then_arrival() {
        let mut h = BinaryHeap::new();
        for (release, seq) in [(5, 0), (3, 1), (5, 2), (1, 3)] {
            h.push(Reverse(Pending {
                release,
                seq,
                data: Vec::new(),
            }));
        }
        let order: Vec<u64> = std::iter::from_fn(|| h.pop().map(|p| p.0.seq)).collect();
        assert_eq!(order, [3, 1, 0, 2]);
    }
}
