//! [`AsyncPoller`]: a [`Poller`] awaited through its readiness descriptor with tokio's
//! `AsyncFd`, for applications that watch many sockets and listeners epoll-style (as UDT4
//! programs do) from a task instead of a blocked thread.

use std::io;

use ::tokio::io::unix::AsyncFd;
use ::tokio::io::Interest;

use crate::error::Result;
use crate::poll::{PollEvent, Poller};

/// A [`Poller`] for async tasks. Its eventfd — readable exactly while some registration is
/// ready — is registered with the runtime's reactor, so [`wait`](Self::wait) sleeps in the
/// runtime like a socket read and costs no thread.
///
/// The reactor is edge-triggered and the descriptor changes state only when the ready set
/// goes from empty to non-empty and back: `wait` therefore forgets the descriptor's
/// readiness only after the poller itself found nothing ready.
pub struct AsyncPoller {
    fd: AsyncFd<Poller>,
}

impl AsyncPoller {
    /// Wraps `poller`. Fails outside a tokio runtime; like `AsyncFd`, panics in a runtime
    /// built without I/O (`enable_io`).
    pub fn new(poller: Poller) -> io::Result<AsyncPoller> {
        if ::tokio::runtime::Handle::try_current().is_err() {
            return Err(io::Error::other("AsyncPoller::new needs a tokio runtime"));
        }
        // SAFETY: the descriptor is the poller's own eventfd, owned (`OwnedFd`) by state that
        // the `Poller` holds strongly, and `as_raw_fd` always returns it; the `AsyncFd` owns
        // the `Poller`, so the descriptor stays open and the same until the `AsyncFd`, which
        // deregisters it first, is dropped.
        let fd = unsafe { AsyncFd::register_with_interest(poller, Interest::READABLE) }
            .map_err(|e| e.into_parts().1)?;
        Ok(AsyncPoller { fd })
    }

    /// The poller, to add, modify and remove registrations.
    pub fn poller(&self) -> &Poller {
        self.fd.get_ref()
    }

    /// Waits until at least one registration is ready, then replaces the contents of
    /// `events` with every ready registration and returns how many there are (at least one).
    /// Level-triggered, like [`Poller::wait`]. Cancel-safe: readiness is never consumed by
    /// waiting, only by the calls on the sockets themselves.
    pub async fn wait(&self, events: &mut Vec<PollEvent>) -> Result<usize> {
        loop {
            let mut guard = self.fd.readable().await?;
            let n = self
                .fd
                .get_ref()
                .wait(events, Some(std::time::Duration::ZERO))?;
            if n > 0 {
                // Still ready: the next call looks again at once, as level triggering wants.
                return Ok(n);
            }
            // Nothing ready (stale entries were dropped and the descriptor reset): sleep
            // until the next edge. An edge after our look has a newer tick and survives this.
            guard.clear_ready();
        }
    }
}

impl std::fmt::Debug for AsyncPoller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncPoller")
            .field("poller", self.fd.get_ref())
            .finish()
    }
}
