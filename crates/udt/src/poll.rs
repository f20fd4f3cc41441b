//! An epoll-style poller over many UDT sockets and listeners, possibly on different UDP ports
//! (different multiplexers and I/O threads), with its readiness also exposed as a real file
//! descriptor for C event loops.
//!
//! How readiness flows (`readiness.rs` is its home; a poller is one kind of watcher there):
//! every multiplexer keeps, per watched socket, the pollers that watch it.
//! Whenever something that can change a socket's readiness happens on that multiplexer (an
//! engine event: data arrived, send-buffer space freed, connected, closed, broken; or an
//! application call: send, recv, accept), the multiplexer recomputes the socket's readiness
//! under its lock and pushes it to each watching poller. A poller therefore holds an exact
//! *ready set* (level-triggered: a socket stays in it while it is ready), and
//! [`Poller::wait`] re-checks each entry against its multiplexer before reporting it, so a
//! stale entry is never reported.
//!
//! The poller's file descriptor is an `eventfd` that is readable exactly while the ready set is
//! non-empty: it becomes readable when a registered socket becomes ready and is reset as soon as
//! the last ready socket stops being ready (its data read, its buffer full, its accept queue
//! emptied, or its registration removed) — no [`Poller::wait`] call is needed to reset it.
//! (Should readiness ever end without an engine event or a call on that socket, the next
//! `wait` notices when it re-checks, and resets the descriptor.) Like epoll in level-triggered
//! mode, a socket registered for `WRITE` keeps the descriptor readable for as long as it can
//! be written to.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::task::Waker;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::mux::Mux;
use crate::readiness::{self, Readiness, Target, Watcher};
use crate::socket::{Listener, Socket};

/// One ready registration, as reported by [`Poller::wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollEvent {
    /// The token given at registration.
    pub token: u64,
    /// The conditions that hold, limited to the registration's interest.
    pub readiness: Readiness,
}

/// Something a [`Poller`] can watch: a [`Socket`] or a [`Listener`] (`&socket` and `&listener`
/// convert into it).
#[derive(Clone, Copy)]
pub struct Source<'a> {
    mux: &'a Arc<Mux>,
    target: Target,
}

impl<'a> From<&'a Socket> for Source<'a> {
    fn from(s: &'a Socket) -> Source<'a> {
        let (mux, id) = s.poll_parts();
        Source {
            mux,
            target: Target::Conn(id),
        }
    }
}

impl<'a> From<&'a Listener> for Source<'a> {
    fn from(l: &'a Listener) -> Source<'a> {
        Source {
            mux: l.poll_mux(),
            target: Target::Listener,
        }
    }
}

/// A registration.
struct Reg {
    mux: Arc<Mux>,
    target: Target,
    interest: Readiness,
}

/// The poller's state, under its lock.
struct PollState {
    regs: HashMap<u64, Reg>,
    /// The registered sources, by (multiplexer address, target), to refuse duplicates without a
    /// scan. A registration holds its multiplexer, so the address stays unique while listed.
    sources: HashSet<(usize, Target)>,
    /// Ready registrations: what holds (within the interest) and the update number that set it.
    ready: HashMap<u64, (Readiness, u64)>,
    /// Counts updates, so that `wait` does not drop an entry that changed while it checked.
    generation: u64,
    /// True while the eventfd holds a count (is readable).
    fd_signalled: bool,
}

impl PollState {
    /// Removes registration `token` (and its readiness); returns it.
    fn remove_reg(&mut self, token: u64) -> Option<Reg> {
        let reg = self.regs.remove(&token)?;
        self.sources.remove(&(mux_key(&reg.mux), reg.target));
        self.ready.remove(&token);
        Some(reg)
    }
}

/// A multiplexer's identity for [`PollState::sources`].
fn mux_key(mux: &Arc<Mux>) -> usize {
    Arc::as_ptr(mux) as usize
}

/// The part of a poller that multiplexers notify.
pub(crate) struct PollShared {
    state: Mutex<PollState>,
    cv: Condvar,
    /// Readable exactly while the ready set is non-empty.
    fd: OwnedFd,
}

impl PollShared {
    fn lock(&self) -> MutexGuard<'_, PollState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that registration `token` now has readiness `full` (all conditions; masked here
    /// with the interest). Called by multiplexers under their lock.
    fn set(&self, token: u64, full: Readiness) {
        let mut st = self.lock();
        let Some(reg) = st.regs.get(&token) else {
            return;
        };
        let masked = full & reg.interest;
        st.generation += 1;
        let generation = st.generation;
        if masked.is_empty() {
            st.ready.remove(&token);
        } else {
            st.ready.insert(token, (masked, generation));
        }
        self.sync_fd(&mut st);
        if !masked.is_empty() {
            self.cv.notify_all();
        }
    }

    /// Forgets registration `token`, whose socket went away. Called by multiplexers under their
    /// lock.
    fn drop_reg(&self, token: u64) {
        let mut st = self.lock();
        st.remove_reg(token);
        self.sync_fd(&mut st);
    }

    /// Makes the eventfd readable iff the ready set is non-empty.
    fn sync_fd(&self, st: &mut PollState) {
        let want = !st.ready.is_empty();
        if want == st.fd_signalled {
            return;
        }
        let fd = self.fd.as_raw_fd();
        let mut v: u64 = 1;
        // SAFETY: 8-byte reads and writes of a live u64 on our own non-blocking eventfd. A
        // failed write means the counter is already non-zero, a failed read that it is already
        // zero: either way the descriptor ends in the state we want.
        unsafe {
            if want {
                libc::write(fd, (&v as *const u64).cast(), 8);
            } else {
                libc::read(fd, (&mut v as *mut u64).cast(), 8);
            }
        }
        st.fd_signalled = want;
    }
}

impl Watcher for PollShared {
    fn update(&self, token: u64, now: Readiness, _wake: &mut Vec<Waker>) {
        // Threads blocked in `wait` sleep on our condition variable, not on a task waker.
        self.set(token, now);
    }

    fn forget(&self, token: u64) {
        self.drop_reg(token);
    }
}

/// This poller as the multiplexers' registries hold it.
fn as_watcher(shared: &Arc<PollShared>) -> Weak<dyn Watcher> {
    let w: Weak<PollShared> = Arc::downgrade(shared);
    w
}

/// An epoll-style, level-triggered poller over [`Socket`]s and [`Listener`]s, which may be on
/// different UDP ports. Like UDT4's `epoll_*` calls: register with an interest and a token,
/// then [`wait`](Self::wait) for `(token, readiness)` events.
///
/// [`as_raw_fd`](Self::as_raw_fd) gives a file descriptor that is readable exactly while some
/// registered socket is ready, for C event loops (`poll`, `epoll`, `select`); it is reset by
/// itself when readiness is consumed (see the module notes in the source). Dropping a socket
/// removes its registrations, as closing a file descriptor does in epoll.
pub struct Poller {
    shared: Arc<PollShared>,
}

impl Poller {
    /// A poller with no registrations.
    pub fn new() -> Result<Poller> {
        // SAFETY: eventfd returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::Io(io::Error::last_os_error()));
        }
        Ok(Poller {
            shared: Arc::new(PollShared {
                state: Mutex::new(PollState {
                    regs: HashMap::new(),
                    sources: HashSet::new(),
                    ready: HashMap::new(),
                    generation: 0,
                    fd_signalled: false,
                }),
                cv: Condvar::new(),
                // SAFETY: `fd` is a fresh descriptor we own.
                fd: unsafe { OwnedFd::from_raw_fd(fd) },
            }),
        })
    }

    /// Watches `source` (a `&Socket` or `&Listener`) for the conditions in `interest`,
    /// reporting them under `token`. Fails with [`Error::InvalidPoll`] if the token is
    /// taken or the source is already registered with this poller, and with
    /// [`Error::InvalidOption`] for an empty interest.
    pub fn add<'a>(
        &self,
        source: impl Into<Source<'a>>,
        interest: Readiness,
        token: u64,
    ) -> Result<()> {
        register(&self.shared, source.into(), interest, token)
    }

    /// The part of the poller that sockets hold (weakly) to register later.
    pub(crate) fn shared(&self) -> &Arc<PollShared> {
        &self.shared
    }

    /// Changes the interest of registration `token`.
    pub fn modify(&self, token: u64, interest: Readiness) -> Result<()> {
        if interest.is_empty() {
            return Err(Error::InvalidOption("empty poll interest"));
        }
        let (mux, target) = {
            let mut st = self.shared.lock();
            let reg = st
                .regs
                .get_mut(&token)
                .ok_or(Error::InvalidPoll("poll token not registered"))?;
            reg.interest = interest;
            (Arc::clone(&reg.mux), reg.target)
        };
        let mut ms = mux.lock();
        ms.refresh(target);
        mux.after_app_call(&mut ms);
        Ok(())
    }

    /// Stops watching registration `token`.
    pub fn remove(&self, token: u64) -> Result<()> {
        let reg = {
            let mut st = self.shared.lock();
            let reg = st
                .remove_reg(token)
                .ok_or(Error::InvalidPoll("poll token not registered"))?;
            self.shared.sync_fd(&mut st);
            reg
        };
        reg.mux
            .lock()
            .unwatch(reg.target, &as_watcher(&self.shared), token);
        Ok(())
    }

    /// Number of registrations.
    pub fn len(&self) -> usize {
        self.shared.lock().regs.len()
    }

    /// True without registrations.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits until at least one registration is ready, or `timeout` passes (`None`: no limit;
    /// `Some(Duration::ZERO)`: just check). Replaces the contents of `events` with every ready
    /// registration and returns how many there are (0 on timeout). Level-triggered: a socket
    /// that stays ready is reported again by the next call.
    pub fn wait(&self, events: &mut Vec<PollEvent>, timeout: Option<Duration>) -> Result<usize> {
        events.clear();
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            // Candidates: the ready set, copied out so that no multiplexer is locked while we
            // hold our lock (multiplexers lock in the other order).
            let candidates: Vec<(u64, u64, Arc<Mux>, Target)> = {
                let mut st = self.shared.lock();
                while st.ready.is_empty() {
                    st = match deadline {
                        None => self.shared.cv.wait(st).unwrap_or_else(|p| p.into_inner()),
                        Some(d) => {
                            let left = d.saturating_duration_since(std::time::Instant::now());
                            if left.is_zero() {
                                return Ok(0);
                            }
                            self.shared
                                .cv
                                .wait_timeout(st, left)
                                .unwrap_or_else(|p| p.into_inner())
                                .0
                        }
                    };
                }
                let st = &mut *st;
                // Entries always have a registration (removal clears both); dropping any
                // orphan here keeps this loop from spinning on it.
                st.ready.retain(|token, _| st.regs.contains_key(token));
                st.ready
                    .iter()
                    .filter_map(|(&token, &(_, generation))| {
                        let reg = st.regs.get(&token)?;
                        Some((token, generation, Arc::clone(&reg.mux), reg.target))
                    })
                    .collect()
            };
            // Re-check each against its multiplexer.
            let mut checked = Vec::with_capacity(candidates.len());
            for (token, generation, mux, target) in candidates {
                let mut ms = mux.lock();
                let now = readiness::of(&mut ms.ep, target);
                mux.after_app_call(&mut ms);
                checked.push((token, generation, now));
            }
            let mut st = self.shared.lock();
            for (token, generation, now) in checked {
                let Some(interest) = st.regs.get(&token).map(|r| r.interest) else {
                    continue;
                };
                match st.ready.get(&token).copied() {
                    // Unchanged since we copied it: our check is the latest word.
                    Some((_, g)) if g == generation => {
                        let masked = now & interest;
                        if masked.is_empty() {
                            st.ready.remove(&token);
                        } else {
                            st.ready.insert(token, (masked, generation));
                            events.push(PollEvent {
                                token,
                                readiness: masked,
                            });
                        }
                    }
                    // Updated meanwhile by its multiplexer: that update is newer than our check.
                    Some((r, _)) => events.push(PollEvent {
                        token,
                        readiness: r,
                    }),
                    None => {}
                }
            }
            self.shared.sync_fd(&mut st);
            if !events.is_empty() {
                return Ok(events.len());
            }
            // Every candidate was stale: wait again.
        }
    }
}

impl AsRawFd for Poller {
    /// The readiness descriptor: readable (`POLLIN`) exactly while some registered socket is
    /// ready. Do not read from it or close it; it stays owned by the poller.
    fn as_raw_fd(&self) -> RawFd {
        self.shared.fd.as_raw_fd()
    }
}

impl AsFd for Poller {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.shared.fd.as_fd()
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        let regs: Vec<(u64, Reg)> = {
            let mut st = self.shared.lock();
            st.sources.clear();
            st.ready.clear();
            st.regs.drain().collect()
        };
        let me = as_watcher(&self.shared);
        for (token, reg) in regs {
            reg.mux.lock().unwatch(reg.target, &me, token);
        }
    }
}

impl std::fmt::Debug for Poller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poller")
            .field("fd", &self.shared.fd.as_raw_fd())
            .field("registrations", &self.len())
            .finish()
    }
}

/// Registers `src` with the poller `shared` (see [`Poller::add`]).
pub(crate) fn register(
    shared: &Arc<PollShared>,
    src: Source<'_>,
    interest: Readiness,
    token: u64,
) -> Result<()> {
    if interest.is_empty() {
        return Err(Error::InvalidOption("empty poll interest"));
    }
    {
        let mut st = shared.lock();
        if st.regs.contains_key(&token) {
            return Err(Error::InvalidPoll("poll token already registered"));
        }
        if !st.sources.insert((mux_key(src.mux), src.target)) {
            return Err(Error::InvalidPoll("source already registered"));
        }
        st.regs.insert(
            token,
            Reg {
                mux: Arc::clone(src.mux),
                target: src.target,
                interest,
            },
        );
    }
    let mut ms = src.mux.lock();
    ms.watch(src.target, as_watcher(shared), token);
    // Initial readiness, pushed to us like any later change.
    ms.refresh(src.target);
    src.mux.after_app_call(&mut ms);
    Ok(())
}
