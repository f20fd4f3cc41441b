//! The async layer's readiness watcher: the wakers of the tasks waiting on one socket or
//! listener, woken by the multiplexer's readiness pushes (`readiness.rs`) — the same path
//! that feeds the [`Poller`](crate::Poller), with task wakers where the poller has an eventfd
//! and a condition variable. No thread and no timer polls on the tasks' behalf: a task
//! sleeps until the I/O thread of its UDP port handles the event that makes it ready.

use std::sync::{Mutex, MutexGuard};
use std::task::Waker;

use crate::readiness::{Readiness, Watcher};

/// What a waiting task waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Data, a message or an accept ([`Readiness::READ`]), or the end ([`Readiness::ERR`]).
    Read,
    /// Send-buffer space ([`Readiness::WRITE`]), or the end.
    Write,
    /// Any change: the end of a handshake or of a lingering close, which readiness alone does
    /// not tell apart from other states.
    Change,
}

/// The wakers of the tasks waiting, by what they wait for. Several tasks may wait for the
/// same thing (two tasks accepting on one listener); each is kept once.
#[derive(Default)]
struct Slots {
    read: Vec<Waker>,
    write: Vec<Waker>,
    change: Vec<Waker>,
}

/// Wakes the tasks waiting on one socket or listener when its readiness allows them on.
#[derive(Default)]
pub(crate) struct TaskWatcher {
    slots: Mutex<Slots>,
}

impl TaskWatcher {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        // A panic while holding this lock leaves the wakers consistent: recover the guard.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that the task of `waker` waits for `what`. Called with the multiplexer locked
    /// right after an attempt that would have blocked, so that no readiness change is missed.
    pub(crate) fn park(&self, what: Wait, waker: &Waker) {
        let mut s = self.lock();
        let list = match what {
            Wait::Read => &mut s.read,
            Wait::Write => &mut s.write,
            Wait::Change => &mut s.change,
        };
        if !list.iter().any(|w| w.will_wake(waker)) {
            list.push(waker.clone());
        }
    }
}

impl Watcher for TaskWatcher {
    fn update(&self, _token: u64, now: Readiness, wake: &mut Vec<Waker>) {
        let mut s = self.lock();
        if now.intersects(Readiness::READ | Readiness::ERR) {
            wake.append(&mut s.read);
        }
        if now.intersects(Readiness::WRITE | Readiness::ERR) {
            wake.append(&mut s.write);
        }
        wake.append(&mut s.change);
    }

    fn forget(&self, _token: u64) {
        // The socket or listener was closed: every waiting task must see that now.
        let mut s = self.lock();
        let mut all = std::mem::take(&mut s.read);
        all.append(&mut s.write);
        all.append(&mut s.change);
        drop(s);
        for w in all {
            w.wake();
        }
    }
}
