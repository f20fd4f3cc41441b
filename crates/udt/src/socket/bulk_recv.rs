//! Large stream reads copy out of the receive buffer outside the multiplexer's lock.
//!
//! The I/O thread needs that lock for every batch of datagrams it files into the receive
//! buffer. A reader that copied a megabyte under it held the I/O thread off for as long, while
//! the kernel's socket buffer filled and, at 9000-byte packets on loopback, overflowed. Here
//! the lock is held only to move whole packets' payload buffers out
//! ([`Connection::take_stream`]) and to hand them back ([`Connection::give_back`]); the copy
//! in between runs while the I/O thread receives.
//!
//! [`Connection::take_stream`]: udt_proto::Connection::take_stream
//! [`Connection::give_back`]: udt_proto::Connection::give_back

use udt_proto::buffer::TakenStream;
use udt_proto::Connection;

use super::Socket;
use crate::error::Result;

/// Reads into smaller buffers copy under the lock as before: moving the buffers out and back
/// costs two lock round trips, which pays only when the copy takes longer.
pub(crate) const OUTSIDE_LOCK_MIN_BYTES: usize = 64 * 1024;

/// What the locked half of a read did.
pub(crate) enum LockedRead {
    /// Copied under the lock: the first packet's unread bytes alone exceed the caller's buffer.
    Copied(usize),
    /// Moved out whole packets, to be copied with the lock released.
    Taken(TakenStream),
}

/// The locked half of a read into `out`: whole packets that fit are moved out, else the
/// bytes are copied at once.
pub(crate) fn locked_read(
    c: &mut Connection,
    out: &mut [u8],
) -> std::result::Result<LockedRead, udt_proto::Error> {
    let taken = c.take_stream(out.len())?;
    if taken.is_empty() {
        c.recv(out).map(LockedRead::Copied)
    } else {
        Ok(LockedRead::Taken(taken))
    }
}

impl Socket {
    /// Reads stream bytes into `out`, copying outside the lock; as [`Socket::recv`] when `wait`,
    /// else as [`Socket::try_recv`], but ending errors are passed on unmapped.
    pub(super) fn recv_stream_outside_lock(&self, out: &mut [u8], wait: bool) -> Result<usize> {
        let locked = if wait {
            self.receiving(|c, _| locked_read(c, out))?
        } else {
            self.attempt(|c, _| locked_read(c, out))?
        };
        Ok(self.finish_read(locked, out))
    }

    /// The unlocked half of a read: copies what was taken into `out` and hands the buffers
    /// back. Returns the bytes now in `out`.
    pub(crate) fn finish_read(&self, locked: LockedRead, out: &mut [u8]) -> usize {
        match locked {
            LockedRead::Copied(n) => n,
            LockedRead::Taken(taken) => {
                let n = taken.copy_to(out);
                // If the connection or the socket is gone by now, the buffers go with it.
                let _ = self.mux.once(self.id, &self.closed, |c, _| {
                    c.give_back(taken);
                    Ok(())
                });
                n
            }
        }
    }
}
