//! Readiness: what "ready" means for a socket or listener, and who hears when it changes.
//!
//! This is the one home of readiness. A multiplexer (`mux.rs`) keeps a [`Registry`] of the
//! [`Watcher`]s of each [`Target`] on its port; whenever something that can change a target's
//! readiness happens (an engine event: data arrived, send-buffer space freed, connected,
//! closed, broken; or an application call: send, recv, accept), it recomputes the readiness
//! with [`of`] under its lock and pushes it to every watcher of that target. Two kinds of
//! watcher exist: the [`Poller`](crate::Poller) (`poll.rs`), which keeps a level-triggered
//! ready set and an eventfd for C event loops, and the async layer's task watcher
//! (`tokio/watcher.rs`), which wakes the tasks that wait for a condition. Neither depends on
//! the other, and this module depends on neither nor on the multiplexer: the modules above
//! it import it, it imports only the engine.

use std::collections::HashMap;
use std::ops::{BitAnd, BitOr, BitOrAssign};
use std::sync::Weak;
use std::task::Waker;

use udt_proto::{ConnectionState, Endpoint, SocketId};

/// A set of readiness conditions; the same bits as UDT4's `UDT_EPOLL_IN`, `UDT_EPOLL_OUT` and
/// `UDT_EPOLL_ERR`. Used both as the interest of a registration and as what
/// [`Poller::wait`](crate::Poller::wait) reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Readiness(u8);

impl Readiness {
    /// Readable: a socket has data (stream) or a whole message to read, or its connection has
    /// ended (a read returns end-of-stream or an error without blocking); a listener has a
    /// connection waiting in its accept queue.
    pub const READ: Readiness = Readiness(0x1);
    /// Writable: a connected socket has send-buffer space, or its connection has ended (a write
    /// fails without blocking).
    pub const WRITE: Readiness = Readiness(0x4);
    /// Error: the connection is broken or closed (by the peer, a timeout, or locally), or the
    /// listener no longer listens.
    pub const ERR: Readiness = Readiness(0x8);
    /// Every condition.
    pub const ALL: Readiness = Readiness(0x1 | 0x4 | 0x8);

    /// No condition.
    pub const fn empty() -> Readiness {
        Readiness(0)
    }

    /// True when no condition is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// True when every condition of `other` is set in `self`.
    pub const fn contains(self, other: Readiness) -> bool {
        self.0 & other.0 == other.0
    }

    /// True when at least one condition of `other` is set in `self`.
    pub const fn intersects(self, other: Readiness) -> bool {
        self.0 & other.0 != 0
    }

    /// True when [`READ`](Self::READ) is set.
    pub const fn is_readable(self) -> bool {
        self.contains(Self::READ)
    }

    /// True when [`WRITE`](Self::WRITE) is set.
    pub const fn is_writable(self) -> bool {
        self.contains(Self::WRITE)
    }

    /// True when [`ERR`](Self::ERR) is set.
    pub const fn is_error(self) -> bool {
        self.contains(Self::ERR)
    }

    /// The UDT4 bit mask (`UDT_EPOLL_IN` = 1, `UDT_EPOLL_OUT` = 4, `UDT_EPOLL_ERR` = 8).
    pub const fn bits(self) -> u8 {
        self.0
    }
}

impl BitOr for Readiness {
    type Output = Readiness;
    fn bitor(self, rhs: Readiness) -> Readiness {
        Readiness(self.0 | rhs.0)
    }
}

impl BitOrAssign for Readiness {
    fn bitor_assign(&mut self, rhs: Readiness) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for Readiness {
    type Output = Readiness;
    fn bitand(self, rhs: Readiness) -> Readiness {
        Readiness(self.0 & rhs.0)
    }
}

/// What a multiplexer can report readiness about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    /// A connection, by socket ID.
    Conn(SocketId),
    /// The multiplexer's listener.
    Listener,
}

/// The readiness of `target` on endpoint `ep`, every condition (not limited to an interest).
pub(crate) fn of(ep: &mut Endpoint, target: Target) -> Readiness {
    let ended = Readiness::READ | Readiness::WRITE | Readiness::ERR;
    match target {
        Target::Listener => {
            if !ep.is_listening() {
                Readiness::ERR
            } else if ep.pending_accepts() > 0 {
                Readiness::READ
            } else {
                Readiness::empty()
            }
        }
        Target::Conn(id) => match ep.connection_mut(id) {
            // Freed: closed and gone.
            None => ended,
            Some(mut c) => match c.state() {
                ConnectionState::Connecting => Readiness::empty(),
                ConnectionState::Connected => {
                    let mut r = Readiness::empty();
                    if c.is_readable() {
                        r |= Readiness::READ;
                    }
                    if c.is_writable() {
                        r |= Readiness::WRITE;
                    }
                    r
                }
                ConnectionState::Closing | ConnectionState::Broken | ConnectionState::Closed => {
                    ended
                }
            },
        },
    }
}

/// Something that hears a target's readiness. Both methods are called by a multiplexer with
/// its lock held, so they must not lock a multiplexer (lock order: multiplexer, then watcher).
pub(crate) trait Watcher: Send + Sync {
    /// Registration `token` of this watcher now has readiness `now` (every condition, not
    /// limited to an interest). Called after every event or call that may have changed it,
    /// so also when nothing changed. Task wakers to wake go into `wake`: the multiplexer wakes
    /// them once it has released its lock, so that the woken task does not at once block on
    /// it.
    fn update(&self, token: u64, now: Readiness, wake: &mut Vec<Waker>);

    /// The application handle of registration `token`'s target went away.
    fn forget(&self, token: u64);
}

/// One registration as a multiplexer keeps it: the watcher (weakly: a dropped watcher is
/// forgotten at the next update) and its token.
type Entry = (Weak<dyn Watcher>, u64);

/// The watchers of every watched target of one multiplexer.
#[derive(Default)]
pub(crate) struct Registry {
    map: HashMap<Target, Vec<Entry>>,
}

impl Registry {
    /// True when nothing is watched: the multiplexer then skips all readiness work.
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Registers `watcher`'s registration `token` as watching `target`.
    pub(crate) fn watch(&mut self, target: Target, watcher: Weak<dyn Watcher>, token: u64) {
        self.map.entry(target).or_default().push((watcher, token));
    }

    /// Removes `watcher`'s registration `token` on `target`.
    pub(crate) fn unwatch(&mut self, target: Target, watcher: &Weak<dyn Watcher>, token: u64) {
        if let Some(list) = self.map.get_mut(&target) {
            list.retain(|(w, t)| !(Weak::ptr_eq(w, watcher) && *t == token));
            if list.is_empty() {
                self.map.remove(&target);
            }
        }
    }

    /// The application handle of `target` went away: every watcher forgets it.
    pub(crate) fn unwatch_all(&mut self, target: Target) {
        if let Some(list) = self.map.remove(&target) {
            for (w, token) in list {
                if let Some(w) = w.upgrade() {
                    w.forget(token);
                }
            }
        }
    }

    /// Recomputes `target`'s readiness on `ep` and pushes it to its watchers; task wakers to
    /// wake are added to `wake`.
    pub(crate) fn refresh(&mut self, ep: &mut Endpoint, target: Target, wake: &mut Vec<Waker>) {
        let Some(list) = self.map.get_mut(&target) else {
            return;
        };
        let r = of(ep, target);
        list.retain(|(w, token)| match w.upgrade() {
            Some(w) => {
                w.update(*token, r, wake);
                true
            }
            None => false,
        });
        if list.is_empty() {
            self.map.remove(&target);
        }
    }
}
