//! Large sends copy the application's bytes into the send buffer outside the multiplexer's
//! lock.
//!
//! The I/O thread needs that lock for every packet it sends. Copying a megabyte under it kept
//! the I/O thread waiting for as long, and since a released `Mutex` can be taken again by the
//! thread that released it, an application writing in large pieces could hold the I/O thread
//! off until the whole send buffer was full: on loopback with 9000-byte packets, a quarter of a
//! second with nothing sent at the start of every transfer. Here the lock is held only to
//! reserve room ([`Connection::reserve_stream`]) and to queue the filled blocks
//! ([`Connection::commit_stream`]); the copy in between runs while the I/O thread sends.
//!
//! [`Connection::reserve_stream`]: udt_proto::Connection::reserve_stream
//! [`Connection::commit_stream`]: udt_proto::Connection::commit_stream

use std::time::Duration;

use udt_proto::buffer::SendSlots;
use udt_proto::{Connection, Instant as EngineInstant};

use super::Socket;
use crate::error::Result;

/// Sends of fewer bytes copy under the lock as before: a reservation and a commit cost two
/// lock round trips, which pays only when the copy takes longer than they do.
pub(crate) const OUTSIDE_LOCK_MIN_BYTES: usize = 64 * 1024;

/// Bytes reserved, copied and committed per round, so that the I/O thread can start on the
/// first megabyte of a large write while the next is copied.
pub(crate) const ROUND_BYTES: usize = 1 << 20;

impl Socket {
    /// Queues stream bytes, copying outside the lock; returns how many were taken. `wait`:
    /// block (as the socket's options say) until the first byte fits, else fail with
    /// [`Error::SendWouldBlock`]. Later rounds never wait: a partial count is returned instead.
    pub(super) fn send_stream_outside_lock(&self, data: &[u8], wait: bool) -> Result<usize> {
        let _one_writer = self.send_serial.lock().unwrap_or_else(|p| p.into_inner());
        let mut taken = 0;
        while taken < data.len() {
            let rest = &data[taken..];
            let reserve = |c: &mut Connection, now| c.reserve_stream(now, rest, ROUND_BYTES);
            let reserved = if wait && taken == 0 {
                self.sending(reserve)
            } else {
                self.attempt(reserve).map_err(Self::send_side)
            };
            let (appended, mut slots) = match reserved {
                Ok(r) => r,
                Err(e) if taken == 0 => return Err(e),
                Err(_) => break,
            };
            taken += appended;
            let wanted = rest.len() - appended;
            let filled = slots.fill(&rest[appended..]);
            match self.commit_stream_slots(slots) {
                Ok(n) => taken += n,
                Err(e) if taken == 0 => return Err(e),
                Err(_) => break,
            }
            if filled < wanted.min(ROUND_BYTES) {
                // The buffer had room for less than a round: it is full for now.
                break;
            }
        }
        Ok(taken)
    }

    /// Queues one message, copying outside the lock (see [`Socket::send_msg`]). `wait` as in
    /// [`send_stream_outside_lock`](Self::send_stream_outside_lock).
    pub(super) fn send_msg_outside_lock(
        &self,
        data: &[u8],
        ttl: Option<Duration>,
        in_order: bool,
        wait: bool,
    ) -> Result<()> {
        let _one_writer = self.send_serial.lock().unwrap_or_else(|p| p.into_inner());
        let reserve = |c: &mut Connection, now| c.reserve_message(now, data.len());
        let mut slots = if wait {
            self.sending(reserve)?
        } else {
            self.attempt(reserve).map_err(Self::send_side)?
        };
        slots.fill(data);
        self.commit(slots, |c, now, s| c.commit_message(now, s, ttl, in_order))
    }

    /// Queues filled stream slots (the second half of a send that copies outside the lock);
    /// returns the bytes queued.
    pub(crate) fn commit_stream_slots(&self, slots: SendSlots) -> Result<usize> {
        self.commit(slots, |c, now, s| c.commit_stream(now, s))
    }

    /// Runs `op` once under the lock with `slots`, never waiting. Slots whose connection is
    /// gone are dropped with it.
    fn commit<R>(
        &self,
        slots: SendSlots,
        op: impl FnOnce(
            &mut Connection,
            EngineInstant,
            SendSlots,
        ) -> std::result::Result<R, udt_proto::Error>,
    ) -> Result<R> {
        self.mux
            .once(self.id, &self.closed, |c, now| op(c, now, slots))
            .map_err(Self::send_side)
    }
}
