//! A multiplexer: one UDP socket, one I/O thread, and the [`Endpoint`] that holds every UDT
//! connection (and the listener) on that port.
//!
//! The I/O thread is the only one that touches the socket. It sleeps until the endpoint's next
//! deadline or until a datagram or a wake-up arrives, reads datagrams in batches, and sends
//! whatever the endpoint has due. Application threads call into the endpoint under the same
//! lock, wake the I/O thread when their call moved a deadline earlier, and block on a
//! per-connection condition variable that the I/O thread signals when the connection reports
//! an event. Threads therefore do not grow with connections: one per UDP port.
//!
//! Readiness: the state keeps a [`Registry`] of the watchers of each watched socket or
//! listener (pollers, async tasks; weakly). Engine events and application calls on a watched
//! target recompute its readiness under the lock and push it to them (see `readiness.rs`).
//! Task wakers they hand back are woken once the lock is released.
//!
//! Reuse address (`UDT_REUSEADDR`): every multiplexer is entered in a process-wide registry by
//! IP version and port. A socket bound explicitly to a port that a reusable multiplexer of the
//! same IP version already serves joins that multiplexer (4.11 compares only the port, not the
//! IP, §6.1), so a listener, client and rendezvous sockets can share one UDP port and one I/O
//! thread. Port 0 and implicit binds always open a new UDP socket.
//!
//! [`Poller`]: crate::Poller
//!
//! Pacing: by default paced data leaves in bursts. The thread sleeps in `ppoll` (never spins)
//! until the next send time, but wakes for a connection's paced sends at most once per its
//! burst quantum ([`udt_proto::Connection::burst_quantum_us`]: 1/40 of the path's RTT,
//! 50–250 µs); at each such wake-up it sends every packet that fell due since, back to back,
//! and the engine's lateness debt keeps the average rate exact (the engine catches up to 5 ms
//! of lateness). A burst is then a fortieth of a BDP at the link's rate, so that even a
//! shallow queue holds several; at 100 ms it holds 21 packets at 1 Gbit/s and 208 at
//! 10 Gbit/s, which GSO hands to the kernel in few buffers; probing pairs stay back to back
//! inside it. At rates where one packet's period exceeds the quantum, each packet still
//! leaves at its own time. `UDT_PACING_QUANTUM_US=N` fixes the quantum for every connection
//! (for comparisons); `=0` restores per-packet pacing to the microsecond, with 1 µs timer
//! slack and a short spin before each send (costly: a core at 1 Gbit/s on a VM, see
//! `docs/benchmarks.md`). Timers are waited for in `ppoll` alone.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::task::Waker as TaskWaker;
use std::time::Duration;

use udt_proto::{Connection, Endpoint, EndpointConfig, Event, Instant, SocketId};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::readiness::{Registry, Target, Watcher};
use crate::udp::{BufferSizes, IoCounters, IoStats, RecvBatch, SendBatch, UdpPort, BATCH};

/// With per-packet pacing (quantum 0): below this much time to the next paced send the I/O
/// thread spins instead of sleeping, µs.
const SPIN_US: u64 = 60;

/// The pacing quantum set by `UDT_PACING_QUANTUM_US` (µs, capped at 1 ms, well inside the
/// engine's 5 ms of catch-up; 0 = per-packet pacing), for comparisons. Without it each
/// connection's own quantum applies ([`udt_proto::Connection::burst_quantum_us`]: 1/40 of
/// its path's RTT, 50–250 µs, so that a burst is a small share of any queue sized in BDPs).
fn pacing_quantum_override() -> Option<u64> {
    std::env::var("UDT_PACING_QUANTUM_US")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|q| q.min(1_000))
}

/// Sets the I/O thread's timer slack for a pacing quantum of `quantum_us`: per-packet
/// pacing needs the timer to the microsecond; burst pacing lets the kernel fold our wake-up
/// into others up to half a quantum late (the debt absorbs it).
fn set_timer_slack(quantum_us: u64) {
    let slack_ns = if quantum_us == 0 {
        1_000
    } else {
        quantum_us * 500
    };
    // SAFETY: prctl with an integer argument; affects only this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, slack_ns as libc::c_ulong, 0, 0, 0);
    }
}

/// While datagrams stream in (a pass read at least [`COALESCE_MIN_BATCH`] of them) and no
/// connection paces data ([`Endpoint::has_paced_sends`]), the I/O thread lets this long pass,
/// µs, before it reads again, instead of waking for every few datagrams: the batches grow and
/// the wake-ups of the I/O and reader threads shrink. The kernel stamps each datagram's arrival, so the delay does not distort the
/// arrival rate or packet pairs; it delays ACKs and delivery by at most this much, and the
/// socket buffer holds the datagrams meanwhile (100 µs at 10 Gbit/s is 125 kB).
const COALESCE_US: u64 = 100;

/// Datagrams sent per pass of the I/O thread at most, before it reads what arrived.
const TX_PER_PASS: usize = 2 * BATCH;

/// A receive pass with at least this many datagrams marks a stream worth coalescing.
const COALESCE_MIN_BATCH: usize = 8;

/// While no connection paces data, deadlines are rounded up to this grid, µs, so that the
/// timers of many connections expire in one wake-up: 1000 idle connections would otherwise
/// wake the thread for each keep-alive. Late by at most this much is immaterial for timers
/// of 10 ms and more, and a busy thread runs them at every pass anyway.
const TIMER_GRID_US: u64 = 1_000;

/// An eventfd that wakes the I/O thread.
#[derive(Debug)]
struct Waker {
    fd: OwnedFd,
}

impl Waker {
    fn new() -> io::Result<Self> {
        // SAFETY: eventfd returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        Ok(Waker {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd; failure (counter full) means a
        // wake-up is already pending, which is all we want.
        unsafe {
            libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
    }

    fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64 from our non-blocking eventfd.
        unsafe {
            libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8);
        }
    }
}

/// A condition variable that application threads wait on for one connection, with a count of
/// its sleepers: signalling is a system call, and the I/O thread would otherwise make one for
/// every pass that delivers data to a reader who is busy and not waiting. Sleepers are counted
/// under the [`State`] lock and the I/O thread looks at the count under it too, so no wake-up
/// is lost; it signals after releasing the lock, so that the woken thread does not at once
/// block on it.
#[derive(Debug, Default)]
pub(crate) struct Waiter {
    cv: Condvar,
    sleepers: AtomicUsize,
}

impl Waiter {
    /// Sleeps until signalled (or spuriously), releasing `st` meanwhile.
    pub(crate) fn wait<'a>(&self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.sleepers.fetch_add(1, Ordering::Relaxed);
        let st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        st
    }

    /// Sleeps until signalled or `limit` has passed, releasing `st` meanwhile.
    pub(crate) fn wait_timeout<'a>(
        &self,
        st: MutexGuard<'a, State>,
        limit: Duration,
    ) -> MutexGuard<'a, State> {
        self.sleepers.fetch_add(1, Ordering::Relaxed);
        let st = self
            .cv
            .wait_timeout(st, limit)
            .unwrap_or_else(|p| p.into_inner())
            .0;
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        st
    }

    /// Whether a thread sleeps on this waiter; read with the [`State`] lock held.
    fn has_sleepers(&self) -> bool {
        self.sleepers.load(Ordering::Relaxed) > 0
    }

    /// Wakes every sleeper. Safe without the lock, provided [`Waiter::has_sleepers`] was
    /// checked under it: a thread counted there is already waiting on the condition variable.
    fn notify(&self) {
        self.cv.notify_all();
    }
}

/// State shared by the I/O thread and the application's sockets, under one lock.
pub(crate) struct State {
    pub(crate) ep: Endpoint,
    /// Condition variables of connections that application threads wait on.
    waiters: HashMap<SocketId, Arc<Waiter>>,
    /// Signalled when a connection is queued for `accept`.
    pub(crate) accept_cv: Arc<Condvar>,
    /// Live application handles (sockets, listeners) on this multiplexer.
    pub(crate) handles: usize,
    /// The deadline the I/O thread currently sleeps towards.
    io_deadline: Option<Instant>,
    /// Connections whose last event the application has not seen, by kind.
    pub(crate) connect_results: HashMap<SocketId, std::result::Result<(), udt_proto::ConnectError>>,
    /// Pollers and async tasks watching each target.
    watchers: Registry,
    /// Task wakers that readiness updates asked for, to be woken once the lock is released
    /// (by the I/O thread) or at the end of an application call.
    task_wake: Vec<TaskWaker>,
    /// Set by the I/O thread when it exits: the multiplexer can no longer be joined.
    finished: bool,
    /// Waiters with sleepers that events have concerned, to be signalled once the lock is
    /// released (a thread woken while the lock is held would at once block on it again).
    wake: Vec<Arc<Waiter>>,
}

impl State {
    /// The condition variable of connection `id`.
    pub(crate) fn waiter(&mut self, id: SocketId) -> Arc<Waiter> {
        self.waiters.entry(id).or_default().clone()
    }

    /// Wakes every thread blocked on connection `id` (its socket was closed by another
    /// thread; they see the closed flag and return).
    pub(crate) fn interrupt(&mut self, id: SocketId) {
        if let Some(w) = self.waiters.get(&id) {
            if !self.wake.iter().any(|x| Arc::ptr_eq(x, w)) {
                self.wake.push(Arc::clone(w));
            }
        }
    }

    /// Registers `watcher`'s registration `token` as watching `target`.
    pub(crate) fn watch(&mut self, target: Target, watcher: Weak<dyn Watcher>, token: u64) {
        self.watchers.watch(target, watcher, token);
    }

    /// Removes `watcher`'s registration `token` on `target`.
    pub(crate) fn unwatch(&mut self, target: Target, watcher: &Weak<dyn Watcher>, token: u64) {
        self.watchers.unwatch(target, watcher, token);
    }

    /// The application handle of `target` went away: every watcher forgets it.
    pub(crate) fn unwatch_all(&mut self, target: Target) {
        self.watchers.unwatch_all(target);
    }

    /// Recomputes `target`'s readiness and pushes it to the watchers of it.
    pub(crate) fn refresh(&mut self, target: Target) {
        if self.watchers.is_empty() {
            return;
        }
        self.watchers
            .refresh(&mut self.ep, target, &mut self.task_wake);
    }

    /// Hands out the endpoint's events: records connect results, updates pollers and collects
    /// the waiting threads to wake in `self.wake`.
    fn dispatch_events(&mut self) {
        let mut touched: Vec<SocketId> = Vec::new();
        let mut listener_touched = false;
        while let Some((id, ev)) = self.ep.poll_event() {
            if !self.watchers.is_empty() {
                touched.push(id);
            }
            match ev {
                Event::Connected => {
                    self.connect_results.insert(id, Ok(()));
                    // An accepted connection is ready for accept(); the listener's readiness
                    // changes only here and in accept().
                    self.accept_cv.notify_all();
                    listener_touched = true;
                }
                Event::ConnectFailed(e) => {
                    self.connect_results.insert(id, Err(e));
                }
                _ => {}
            }
            if let Some(w) = self.waiters.get(&id) {
                if w.has_sleepers() && !self.wake.iter().any(|x| Arc::ptr_eq(x, w)) {
                    self.wake.push(Arc::clone(w));
                }
            }
        }
        if !self.watchers.is_empty() {
            touched.dedup();
            for id in touched {
                self.refresh(Target::Conn(id));
            }
            if listener_touched {
                self.refresh(Target::Listener);
            }
        }
        // Forget waiters of connections the endpoint has freed.
        if self.waiters.len() > self.ep.connection_count() {
            let ep = &self.ep;
            self.waiters.retain(|id, _| ep.connection(*id).is_some());
            self.connect_results
                .retain(|id, _| ep.connection(*id).is_some());
        }
    }
}

/// The multiplexer shared by the sockets of one UDP port.
pub(crate) struct Mux {
    state: Mutex<State>,
    pub(crate) clock: Clock,
    waker: Waker,
    local: SocketAddr,
    pub(crate) buffers: BufferSizes,
    /// What the UDP port moved and by which path.
    counters: Arc<IoCounters>,
    /// Whether other sockets may join this multiplexer (`UDT_REUSEADDR` of its creator).
    pub(crate) reusable: bool,
    /// Signalled after each pass of the I/O thread that sent everything due (and when it exits)
    /// while some thread waits in [`Mux::flush`].
    flushed: Condvar,
    /// Passes of the I/O thread that handed everything the endpoint had due to the kernel.
    tx_passes: AtomicU64,
    /// Threads waiting in [`Mux::flush`]; without any, a pass costs no lock and no futex call.
    flush_waiters: AtomicUsize,
    /// Async tasks waiting for passes (`Mux::poll_flushed`), woken after each pass.
    pass_wakers: Mutex<Vec<TaskWaker>>,
    /// Length of `pass_wakers`, read without its lock by the I/O thread after each pass.
    pass_waiting: AtomicUsize,
}

/// The process's multiplexers by (IPv6?, port), for reuse address. Entries of finished
/// multiplexers are replaced when their port is bound again.
static REGISTRY: Mutex<Vec<(bool, u16, Weak<Mux>)>> = Mutex::new(Vec::new());

impl Mux {
    /// A multiplexer for a socket bound to `addr`: an existing reusable one on the same port
    /// and IP version when `reuse` is on and the port is explicit, else a new UDP socket with
    /// the given kernel buffers (bytes). Either way it is returned holding one application
    /// handle, which the caller must take over (a socket or listener) or release.
    pub(crate) fn open(
        addr: SocketAddr,
        reuse: bool,
        udp_recv_buf: usize,
        udp_send_buf: usize,
    ) -> Result<Arc<Mux>> {
        let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        let v6 = addr.is_ipv6();
        // A multiplexer of ours on this port that no socket uses any more is shutting down: its
        // I/O thread may not have closed the UDP socket yet, so a bind failing with "in use" is
        // worth retrying for a moment.
        let ours_closing = addr.port() != 0
            && reg.iter().any(|(f, p, m)| {
                *f == v6
                    && *p == addr.port()
                    && m.upgrade().is_none_or(|m| {
                        let st = m.lock();
                        st.finished || st.handles == 0
                    })
            });
        reg.retain(|(_, _, m)| m.strong_count() > 0);
        if reuse && addr.port() != 0 {
            let existing = reg
                .iter()
                .filter(|(f, p, _)| *f == v6 && *p == addr.port())
                .find_map(|(_, _, m)| m.upgrade());
            if let Some(m) = existing.filter(|m| m.reusable) {
                let mut st = m.lock();
                if !st.finished {
                    st.handles += 1;
                    drop(st);
                    return Ok(m);
                }
            }
        }
        let mut attempt = 0;
        let mux = loop {
            match Mux::bind(addr, reuse, udp_recv_buf, udp_send_buf) {
                Err(Error::AddrInUse(_)) if ours_closing && attempt < 20 => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(5));
                }
                r => break r?,
            }
        };
        let port = mux.local.port();
        reg.retain(|(f, p, _)| !(*f == v6 && *p == port));
        reg.push((v6, port, Arc::downgrade(&mux)));
        Ok(mux)
    }

    /// A multiplexer on a UDP socket the application made (UDT4's `bind2`), registered for
    /// reuse address like one [`Mux::open`] makes. Returned holding one application handle.
    pub(crate) fn adopt(
        udp: std::net::UdpSocket,
        reuse: bool,
        udp_recv_buf: usize,
        udp_send_buf: usize,
    ) -> Result<Arc<Mux>> {
        let port = UdpPort::adopt(udp, udp_recv_buf, udp_send_buf)?;
        let mux = Mux::start(port, reuse)?;
        let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        let (v6, port) = (mux.local.is_ipv6(), mux.local.port());
        reg.retain(|(f, p, m)| m.strong_count() > 0 && !(*f == v6 && *p == port));
        reg.push((v6, port, Arc::downgrade(&mux)));
        Ok(mux)
    }

    /// Opens a UDP socket on `addr` and starts its I/O thread, holding one handle.
    fn bind(
        addr: SocketAddr,
        reusable: bool,
        udp_recv_buf: usize,
        udp_send_buf: usize,
    ) -> Result<Arc<Mux>> {
        let port = UdpPort::bind(addr, udp_recv_buf, udp_send_buf).map_err(|e| {
            if e.kind() == io::ErrorKind::AddrInUse {
                Error::AddrInUse(addr)
            } else {
                Error::Io(e)
            }
        })?;
        Mux::start(port, reusable)
    }

    /// Starts the I/O thread of a multiplexer on `port`, holding one handle.
    fn start(port: UdpPort, reusable: bool) -> Result<Arc<Mux>> {
        let mut seed = [0u8; 8];
        getrandom::fill(&mut seed).map_err(|e| Error::Io(io::Error::other(e.to_string())))?;
        // Ephemeral keys of encrypted connections need more than the 64-bit seed.
        let mut entropy = [0u8; 32];
        getrandom::fill(&mut entropy).map_err(|e| Error::Io(io::Error::other(e.to_string())))?;
        let ep = Endpoint::new(EndpointConfig {
            seed: u64::from_le_bytes(seed),
            entropy,
            ..Default::default()
        });
        let mux = Arc::new(Mux {
            state: Mutex::new(State {
                ep,
                waiters: HashMap::new(),
                accept_cv: Arc::new(Condvar::new()),
                // The caller's handle, counted before the I/O thread starts: otherwise the
                // thread could find no handle and no connection on its first pass and exit
                // before the caller registers (a race the interop suite caught).
                handles: 1,
                io_deadline: None,
                connect_results: HashMap::new(),
                watchers: Registry::default(),
                task_wake: Vec::new(),
                finished: false,
                wake: Vec::new(),
            }),
            flushed: Condvar::new(),
            tx_passes: AtomicU64::new(0),
            flush_waiters: AtomicUsize::new(0),
            pass_wakers: Mutex::new(Vec::new()),
            pass_waiting: AtomicUsize::new(0),
            clock: Clock::new(),
            waker: Waker::new()?,
            local: port.local_addr(),
            buffers: port.buffers,
            counters: Arc::clone(&port.counters),
            reusable,
        });
        let m = Arc::clone(&mux);
        std::thread::Builder::new()
            .name(format!("udt-io-{}", port.local_addr().port()))
            .spawn(move || io_loop(m, port))?;
        Ok(mux)
    }

    /// The bound local address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What the UDP port has moved, and by which path (GSO, GRO or one datagram per entry).
    pub(crate) fn io_stats(&self) -> IoStats {
        self.counters.snapshot()
    }

    /// Locks the shared state.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock poisons it; the state is still consistent enough to
        // close sockets, so recover the guard rather than cascade the panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After an application call: hand out events, and wake the I/O thread if the endpoint now
    /// needs it sooner than it planned.
    pub(crate) fn after_app_call(&self, st: &mut State) {
        st.dispatch_events();
        for w in st.wake.drain(..) {
            w.notify();
        }
        // Under the lock, unlike the I/O thread's wake-ups: the caller holds it. An
        // application call rarely makes another task ready (a read that frees window space
        // does not make the same socket writable), so this is seldom more than a check.
        for w in st.task_wake.drain(..) {
            w.wake();
        }
        let due = st.ep.poll_timeout();
        if let Some(t) = due {
            if st.io_deadline.is_none_or(|d| t < d) {
                st.io_deadline = Some(t);
                self.waker.wake();
            }
        }
    }

    /// Wakes the I/O thread unconditionally (e.g. when the last handle goes away).
    pub(crate) fn wake(&self) {
        self.waker.wake();
    }

    /// Waits (at most `limit`) until the I/O thread has handed to the kernel every datagram
    /// the endpoint had queued when this was called — e.g. the Shutdown of a connection that
    /// was just closed, which would otherwise be lost if the process exits right away.
    pub(crate) fn flush(&self, limit: Duration) {
        self.flush_waiters.fetch_add(1, Ordering::SeqCst);
        let mut st = self.lock();
        // A pass that had already taken its datagrams when we looked may miss ours; the one
        // after it cannot.
        let target = self.tx_passes.load(Ordering::SeqCst) + 2;
        let deadline = std::time::Instant::now() + limit;
        while self.tx_passes.load(Ordering::SeqCst) < target && !st.finished {
            self.waker.wake();
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            st = self
                .flushed
                .wait_timeout(st, left.min(Duration::from_millis(10)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        self.flush_waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// The pass count [`Mux::poll_flushed`] must reach for every datagram queued now to have
    /// been handed to the kernel (as in [`Mux::flush`]: the pass under way may have missed
    /// them, the next cannot). Wakes the I/O thread so that the passes come at once.
    #[cfg(feature = "tokio")]
    pub(crate) fn flush_target(&self) -> u64 {
        let target = self.tx_passes.load(Ordering::SeqCst) + 2;
        self.waker.wake();
        target
    }

    /// The async [`Mux::flush`]: ready once the I/O thread has made `target` passes (see
    /// [`Mux::flush_target`]); until then the task is woken after each pass.
    #[cfg(feature = "tokio")]
    pub(crate) fn poll_flushed(&self, target: u64, cx: &mut std::task::Context<'_>) -> bool {
        if self.tx_passes.load(Ordering::SeqCst) >= target {
            return true;
        }
        {
            let mut w = self.pass_wakers.lock().unwrap_or_else(|p| p.into_inner());
            if !w.iter().any(|x| x.will_wake(cx.waker())) {
                w.push(cx.waker().clone());
                self.pass_waiting.store(w.len(), Ordering::SeqCst);
            }
        }
        // A pass that ended between the first look and the registration did not see the
        // waker: look again.
        if self.tx_passes.load(Ordering::SeqCst) >= target {
            return true;
        }
        self.waker.wake();
        false
    }

    /// Runs `op` on connection `id`, waiting while it reports `WouldBlock` — on the
    /// connection's condition variable, until `deadline` if given — unless `nonblocking`.
    /// `closed` is the socket's closed flag: once set (and the waiter interrupted, see
    /// [`State::interrupt`]), the call returns [`Error::Closed`].
    pub(crate) fn blocking<R>(
        &self,
        id: SocketId,
        nonblocking: bool,
        deadline: Option<std::time::Instant>,
        closed: &AtomicBool,
        mut op: impl FnMut(&mut Connection, Instant) -> std::result::Result<R, udt_proto::Error>,
    ) -> Result<R> {
        let mut st = self.lock();
        let cv = st.waiter(id);
        loop {
            if closed.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            let now = self.clock.now();
            let r = match st.ep.connection_mut(id) {
                Some(mut c) => op(&mut c, now),
                None => Err(udt_proto::Error::ConnectionLost),
            };
            st.refresh(Target::Conn(id));
            self.after_app_call(&mut st);
            match r {
                Err(udt_proto::Error::WouldBlock) if !nonblocking => {
                    st = match deadline {
                        None => cv.wait(st),
                        Some(d) => {
                            let left = d.saturating_duration_since(std::time::Instant::now());
                            if left.is_zero() {
                                return Err(Error::Timeout);
                            }
                            cv.wait_timeout(st, left)
                        }
                    };
                }
                other => return other.map_err(Error::from),
            }
        }
    }

    /// Runs `op` on connection `id` once, never waiting; `closed` as in [`Mux::blocking`].
    pub(crate) fn once<R>(
        &self,
        id: SocketId,
        closed: &AtomicBool,
        op: impl FnOnce(&mut Connection, Instant) -> std::result::Result<R, udt_proto::Error>,
    ) -> Result<R> {
        self.attempt_or_park(id, closed, op, || {})
    }

    /// Runs `op` on connection `id` once, never waiting. If it reports `WouldBlock`, `park`
    /// runs before the lock is released: it registers the caller's interest (an async task's
    /// waker, see `tokio/watcher.rs`), and since every later change of the connection's
    /// readiness is pushed under this same lock, none can slip between the attempt and the
    /// registration. `closed` as in [`Mux::blocking`].
    pub(crate) fn attempt_or_park<R>(
        &self,
        id: SocketId,
        closed: &AtomicBool,
        op: impl FnOnce(&mut Connection, Instant) -> std::result::Result<R, udt_proto::Error>,
        park: impl FnOnce(),
    ) -> Result<R> {
        let mut st = self.lock();
        if closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let now = self.clock.now();
        let r = match st.ep.connection_mut(id) {
            Some(mut c) => op(&mut c, now),
            None => Err(udt_proto::Error::ConnectionLost),
        };
        st.refresh(Target::Conn(id));
        if matches!(r, Err(udt_proto::Error::WouldBlock)) {
            park();
        }
        self.after_app_call(&mut st);
        r.map_err(Error::from)
    }
}

/// The I/O thread.
fn io_loop(mux: Arc<Mux>, port: UdpPort) {
    let fixed_quantum = pacing_quantum_override();
    let mut slack_for =
        fixed_quantum.unwrap_or(udt_proto::connection::BURST_QUANTUM_UNKNOWN_RTT_US);
    set_timer_slack(slack_for);
    let mut last_paced_wake: Option<Instant> = None;
    let mut rb = RecvBatch::new();
    let mut sb = SendBatch::new();
    let mut last_stamp = Instant::ZERO;
    let mut wake = Vec::new();
    let mut task_wake = Vec::new();
    let mut streaming = false;
    loop {
        // Timers and transmissions due now.
        let (deadline, paced, sending, exit, quantum) = {
            let mut st = mux.lock();
            let now = mux.clock.now();
            st.ep.handle_timeout(now);
            transmit(&mut st, now, &port, &mut sb);
            st.dispatch_events();
            std::mem::swap(&mut st.wake, &mut wake);
            std::mem::swap(&mut st.task_wake, &mut task_wake);
            let d = st.ep.poll_timeout();
            let paced_quantum = st.ep.paced_timeout_quantum_us();
            let paced = paced_quantum.is_some();
            let sending = st.ep.has_paced_sends();
            st.io_deadline = d;
            // Decided after the transmissions above, so that the last datagrams of the last
            // connection (its Shutdown) still leave. Under the lock, so that `Mux::open` never
            // joins a multiplexer that is gone.
            let exit = st.handles == 0 && st.ep.connection_count() == 0;
            st.finished |= exit;
            let quantum = fixed_quantum.or(paced_quantum).unwrap_or(slack_for);
            (d, paced, sending, exit, quantum)
        };
        wake_all(&mut wake);
        wake_tasks(&mut task_wake);
        port.send(&mut sb);
        mux.passed();
        if exit {
            break;
        }
        // Delaying a wake-up (the grid, coalescing) is fine only while no connection paces
        // data: otherwise a paced send due just after a timer would be late.
        let idle;
        if streaming && !sending {
            coalesce(&mux, deadline);
            idle = false;
        } else if paced && quantum > 0 {
            if quantum != slack_for {
                slack_for = quantum;
                set_timer_slack(quantum);
            }
            // Burst pacing: not sooner than one quantum after the last paced wake-up. A send
            // already due (the pass stopped at TX_PER_PASS, or the thread is behind) goes at
            // once: waiting would only add to the lateness.
            let now = mux.clock.now();
            let d = deadline.map(|d| match last_paced_wake {
                Some(w) if d > now => d.max(w.plus_micros(quantum)),
                _ => d,
            });
            // Arriving datagrams end the wait too. Letting them wait for the burst when it
            // was due within a quantum saved about 7 % of the paced sender's CPU through
            // `udt relay` (1 Gb/s, 100 ms, one BDP), but at 1 % loss the flow delivered
            // 762 Mb/s (median of 10 runs) against 774-784 (medians of 5) without it. It
            // delays NAKs and ACK2s by up to a quantum; which of the two cost the throughput
            // was not traced.
            let end = wait(&mux, &port, d, false, false);
            if let WaitEnd::Deadline { .. } = end {
                last_paced_wake = Some(mux.clock.now());
                IoCounters::add(&mux.counters.paced_wakeups, 1);
            }
            idle = end == WaitEnd::Deadline { socket_idle: true };
        } else {
            let end = wait(&mux, &port, deadline, paced, !sending);
            idle = end == WaitEnd::Deadline { socket_idle: true };
        }
        // Everything that arrived: nothing, when the wait just saw the socket empty (a paced
        // sender at 1 Gbit/s wakes 4 000 times a second, and most of those wake-ups would
        // spend a `recvmmsg` on finding so).
        let mut received = 0;
        if !idle {
            loop {
                // An error (e.g. an ICMP error queued on the socket) means nothing to read.
                let n = port.recv(&mut rb).unwrap_or_default();
                received += rb.got.iter().map(|r| r.datagrams()).sum::<usize>();
                if n == 0 {
                    break;
                }
                let mut st = mux.lock();
                let now = mux.clock.now();
                let wall = crate::clock::wall_now_ns();
                for i in 0..n {
                    let r = rb.got[i];
                    // Kernel timestamps keep each datagram's true arrival time (packet pairs!);
                    // they are kept monotonic in case the wall clock stepped. The datagrams of a
                    // GRO buffer share its stamp (see `udp/recv.rs`).
                    let t = r
                        .stamp
                        .map_or(now, |s| Clock::from_wall(now, wall, s))
                        .max(last_stamp);
                    last_stamp = t;
                    for datagram in rb.segments(i) {
                        st.ep.handle_datagram(t, r.from, datagram);
                    }
                }
                st.ep.handle_timeout(now);
                transmit(&mut st, now, &port, &mut sb);
                st.dispatch_events();
                std::mem::swap(&mut st.wake, &mut wake);
                std::mem::swap(&mut st.task_wake, &mut task_wake);
                drop(st);
                wake_all(&mut wake);
                wake_tasks(&mut task_wake);
                port.send(&mut sb);
                mux.passed();
                if n < BATCH {
                    break;
                }
            }
        }
        streaming = received >= COALESCE_MIN_BATCH;
    }
}

/// Sleeps [`COALESCE_US`] (less if `deadline` comes sooner) while datagrams gather in the
/// socket; an application call (the waker) ends it early.
fn coalesce(mux: &Mux, deadline: Option<Instant>) {
    let now = mux.clock.now().as_micros();
    let left = deadline.map_or(COALESCE_US, |d| d.as_micros().saturating_sub(now));
    let us = left.min(COALESCE_US);
    if us == 0 {
        return;
    }
    let mut fds = [libc::pollfd {
        fd: mux.waker.fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    let timeout = libc::timespec {
        tv_sec: 0,
        tv_nsec: (us * 1_000) as libc::c_long,
    };
    // SAFETY: one valid pollfd and a valid timespec; no signal mask change.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), 1, &timeout, std::ptr::null()) };
    if rc > 0 {
        mux.waker.drain();
    }
}

/// Wakes the application threads that events concerned, once the lock is released.
fn wake_all(wake: &mut Vec<Arc<Waiter>>) {
    for w in wake.drain(..) {
        w.notify();
    }
}

/// Wakes the async tasks that readiness updates concerned, once the lock is released.
fn wake_tasks(wake: &mut Vec<TaskWaker>) {
    for w in wake.drain(..) {
        w.wake();
    }
}

impl Mux {
    /// Counts a pass of the I/O thread that sent everything due (see [`Mux::flush`]).
    fn passed(&self) {
        self.tx_passes.fetch_add(1, Ordering::SeqCst);
        // SeqCst against `poll_flushed`: either it sees this pass, or this sees its waker.
        if self.pass_waiting.load(Ordering::SeqCst) > 0 {
            let wakers = {
                let mut w = self.pass_wakers.lock().unwrap_or_else(|p| p.into_inner());
                self.pass_waiting.store(0, Ordering::SeqCst);
                std::mem::take(&mut *w)
            };
            for w in wakers {
                w.wake();
            }
        }
        if self.flush_waiters.load(Ordering::SeqCst) > 0 {
            // Under the lock, so that a waiter between its check and its wait cannot miss it.
            let _st = self.lock();
            self.flushed.notify_all();
        }
    }
}

/// Moves the datagrams the endpoint has due into the batch, sending full batches, but at most
/// [`TX_PER_PASS`] of them: a sender that cannot keep up with its rate always has packets due,
/// and without the bound it would push a whole window before reading the ACKs waiting for it
/// (on loopback that inflated the RTT to tens of milliseconds). What is left stays due, so the
/// next pass comes at once.
fn transmit(st: &mut State, now: Instant, port: &UdpPort, sb: &mut SendBatch) {
    // GSO buffers for every connection while at most one sends data, and for those whose
    // peer is ours whatever the others do (see `SendBatch::push`).
    let alone = st.ep.paced_connection_count() <= 1;
    for _ in 0..TX_PER_PASS {
        let Some(t) = st.ep.poll_transmit(now, sb.next_buf()) else {
            return;
        };
        sb.push(t.len, t.destination, alone || t.peer_takes_bursts);
        if sb.is_full() {
            port.send(sb);
        }
    }
}

/// How [`wait`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaitEnd {
    /// The deadline passed. `socket_idle`: the `ppoll` that slept until it found no datagram
    /// waiting, so reading the socket now would find nothing (or only what arrived in the
    /// microseconds since, which the next pass reads: the socket stays readable).
    Deadline { socket_idle: bool },
    /// A datagram, a wake-up, or the end of a wait without a deadline.
    Woken,
}

/// Sleeps until `deadline`, a datagram, or a wake-up: `ppoll` for most of the time, then,
/// if `spin` (a paced send under per-packet pacing), a short spin for microsecond precision.
/// Timers (ACK, keep-alive, ...) get no spin and, when `lazy` (no connection paces data), are
/// rounded up to [`TIMER_GRID_US`]: with many idle connections their deadlines are frequent,
/// and spinning or waking for each would cost more CPU than all the real work.
fn wait(mux: &Mux, port: &UdpPort, deadline: Option<Instant>, spin: bool, lazy: bool) -> WaitEnd {
    let deadline = match deadline {
        Some(d) if lazy => Some(Instant::from_micros(
            d.as_micros().div_ceil(TIMER_GRID_US) * TIMER_GRID_US,
        )),
        d => d,
    };
    // Whether the last `ppoll` found the socket empty when it timed out.
    let mut socket_idle = false;
    loop {
        let now = mux.clock.now();
        let left_us = deadline.map(|d| d.as_micros().saturating_sub(now.as_micros()));
        if left_us == Some(0) {
            return WaitEnd::Deadline { socket_idle };
        }
        let mut fds = [
            libc::pollfd {
                fd: port.fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: mux.waker.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let margin = if spin { SPIN_US } else { 0 };
        let spin_now = spin && left_us.is_some_and(|l| l <= SPIN_US);
        let timeout = match left_us {
            _ if spin_now => libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            Some(l) => {
                let d = Duration::from_micros(l - margin);
                libc::timespec {
                    tv_sec: d.as_secs() as libc::time_t,
                    tv_nsec: d.subsec_nanos() as libc::c_long,
                }
            }
            None => libc::timespec {
                tv_sec: 1,
                tv_nsec: 0,
            },
        };
        // SAFETY: two valid pollfds and a valid timespec; no signal mask change.
        let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &timeout, std::ptr::null()) };
        if rc > 0 {
            if fds[1].revents != 0 {
                mux.waker.drain();
            }
            return WaitEnd::Woken;
        }
        if deadline.is_none() {
            // Nothing scheduled: re-check the exit condition now and then.
            return WaitEnd::Woken;
        }
        socket_idle = rc == 0;
        if spin_now {
            std::hint::spin_loop();
        }
    }
}
