//! One connection as the async types hold it: the blocking [`Socket`] (which owns the UDT
//! connection and closes it on drop) and the [`TaskWatcher`] its readiness is pushed to, with
//! the poll functions every async type is written with.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use ::tokio::io::ReadBuf;
use udt_proto::buffer::MsgRead;
use udt_proto::{ConnectionState, SocketKind};

use super::watcher::{TaskWatcher, Wait};
use crate::error::{Error, Result};
use crate::readiness::Watcher;
use crate::socket::{bulk_recv, bulk_send, Builder, Socket};

/// A connection driven by async tasks.
pub(crate) struct Conn {
    socket: Socket,
    watcher: Arc<TaskWatcher>,
    /// Set by [`Conn::poll_close`]: the connection is closing at our request, so that reads
    /// report the end of the stream once what arrived before is read, and writes fail.
    shut: AtomicBool,
    /// Once the close has ended the connection: the I/O pass count after which its last
    /// datagrams (the Shutdown) have left (0: not yet known).
    flushed_at: AtomicU64,
}

impl Conn {
    /// Wraps `socket`, registering for its readiness.
    pub(crate) fn new(socket: Socket) -> Conn {
        let watcher = Arc::new(TaskWatcher::default());
        let weak: Weak<TaskWatcher> = Arc::downgrade(&watcher);
        let weak: Weak<dyn Watcher> = weak;
        socket.add_watcher(weak, 0);
        Conn {
            socket,
            watcher,
            shut: AtomicBool::new(false),
            flushed_at: AtomicU64::new(0),
        }
    }

    /// The blocking socket underneath.
    pub(crate) fn socket(&self) -> &Socket {
        &self.socket
    }

    /// Fails with [`Error::WrongKind`] unless the connection is of kind `want`.
    pub(crate) fn expect_kind(&self, want: SocketKind) -> Result<()> {
        self.socket.expect_kind(want)
    }

    /// Runs `op` once; `Pending` (with the task registered for `what`) when it would block.
    fn poll_op<R>(
        &self,
        cx: &mut Context<'_>,
        what: Wait,
        op: impl FnOnce(
            &mut udt_proto::Connection,
            udt_proto::Instant,
        ) -> std::result::Result<R, udt_proto::Error>,
    ) -> Poll<Result<R>> {
        match self
            .socket
            .attempt_or_park(op, || self.watcher.park(what, cx.waker()))
        {
            Err(Error::WouldBlock) => Poll::Pending,
            other => Poll::Ready(other),
        }
    }

    /// Waits until the handshake has ended: `Ok(())` once connected, else the
    /// [`Error::Connect`] that ended it.
    pub(crate) fn poll_connected(&self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let r = self.poll_op(cx, Wait::Change, |c, _| {
            if c.state() == ConnectionState::Connecting {
                Err(udt_proto::Error::WouldBlock)
            } else {
                Ok(())
            }
        });
        match r {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(()) | Err(Error::ConnectionLost)) => {
                match self.socket.connect_result() {
                    Some(Err(e)) => Poll::Ready(Err(e)),
                    _ => Poll::Ready(Ok(())),
                }
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        }
    }

    /// Reads stream bytes into `buf`: `Ok(0)` at the end of the stream (the peer closed, or
    /// we did and everything that had arrived is read).
    pub(crate) fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let read = if buf.len() >= bulk_recv::OUTSIDE_LOCK_MIN_BYTES {
            // Large reads copy with the lock released (see `socket/bulk_recv.rs`).
            match self.poll_op(cx, Wait::Read, |c, _| bulk_recv::locked_read(c, buf)) {
                Poll::Ready(Ok(locked)) => Poll::Ready(Ok(self.socket.finish_read(locked, buf))),
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            }
        } else {
            self.poll_op(cx, Wait::Read, |c, _| c.recv(buf))
        };
        match read {
            Poll::Pending if self.shut.load(Ordering::Acquire) => Poll::Ready(Ok(0)),
            Poll::Ready(Err(Error::ConnectionLost))
                if self.shut.load(Ordering::Acquire) || self.socket.closed_by_peer() =>
            {
                Poll::Ready(Ok(0))
            }
            other => other,
        }
    }

    /// `AsyncRead::poll_read` of every type that reads through a connection.
    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        match self.poll_recv(cx, buf.initialize_unfilled()) {
            Poll::Ready(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Queues stream bytes from `buf`; returns how many were taken (at least one).
    pub(crate) fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<Result<usize>> {
        if self.shut.load(Ordering::Acquire) {
            return Poll::Ready(Err(Error::Closed));
        }
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if buf.len() < bulk_send::OUTSIDE_LOCK_MIN_BYTES {
            return self
                .poll_op(cx, Wait::Write, |c, now| c.send(now, buf))
                .map_err(Socket::send_side);
        }
        // Large writes copy with the lock released, one round per call (see
        // `socket/bulk_send.rs`).
        let reserve =
            |c: &mut udt_proto::Connection, now| c.reserve_stream(now, buf, bulk_send::ROUND_BYTES);
        let (appended, mut slots) = match self.poll_op(cx, Wait::Write, reserve) {
            Poll::Ready(Ok(r)) => r,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(Socket::send_side(e))),
            Poll::Pending => return Poll::Pending,
        };
        slots.fill(&buf[appended..]);
        Poll::Ready(match self.socket.commit_stream_slots(slots) {
            Ok(n) => Ok(appended + n),
            Err(_) if appended > 0 => Ok(appended),
            Err(e) => Err(e),
        })
    }

    /// Queues one message once the whole of it fits in the send buffer.
    pub(crate) fn poll_send_msg(
        &self,
        cx: &mut Context<'_>,
        data: &[u8],
        ttl: Option<Duration>,
        in_order: bool,
    ) -> Poll<Result<()>> {
        if self.shut.load(Ordering::Acquire) {
            return Poll::Ready(Err(Error::Closed));
        }
        self.poll_op(cx, Wait::Write, |c, now| {
            c.send_msg(now, data, ttl, in_order)
        })
        .map_err(Socket::send_side)
    }

    /// Takes one whole message (cut to `buf`'s length).
    pub(crate) fn poll_recv_msg(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<Result<MsgRead>> {
        match self.poll_op(cx, Wait::Read, |c, _| c.recv_msg(buf)) {
            Poll::Pending if self.shut.load(Ordering::Acquire) => {
                Poll::Ready(Err(Error::ConnectionLost))
            }
            other => other,
        }
    }

    /// Closes gracefully: queued data keeps flowing for the linger time, then the peer is
    /// sent a Shutdown; ready once the connection has ended and the Shutdown has left (so
    /// that a program may exit right after). UDT has no half-close, so this ends both
    /// directions.
    pub(crate) fn poll_close(&self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if !self.shut.swap(true, Ordering::AcqRel) {
            self.socket.start_close();
        }
        let mut target = self.flushed_at.load(Ordering::Acquire);
        if target == 0 {
            match self.poll_op(cx, Wait::Change, |c, _| {
                if c.is_connected() {
                    Err(udt_proto::Error::WouldBlock)
                } else {
                    Ok(())
                }
            }) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(()) | Err(Error::ConnectionLost) | Err(Error::Closed)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            }
            // The engine has queued its last datagrams: they must reach the kernel before we
            // report the close done, or a program that exits now leaves the peer waiting for
            // its timeout (the blocking `close` flushes the same way).
            target = self.socket.flush_target().max(1);
            self.flushed_at.store(target, Ordering::Release);
        }
        if self.socket.poll_flushed(target, cx) {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }
}

/// Resolves `addr` on the runtime (a literal address costs nothing; a name is looked up
/// without blocking the task's thread).
pub(crate) async fn resolve(addr: impl ::tokio::net::ToSocketAddrs) -> Result<SocketAddr> {
    ::tokio::net::lookup_host(addr)
        .await?
        .next()
        .ok_or(Error::InvalidOperation("address resolves to nothing"))
}

/// Connects with `builder`'s options to `addr`, without blocking the task: the handshake runs
/// on the I/O thread and the task sleeps until it ends.
pub(crate) async fn connect(builder: &Builder, addr: SocketAddr) -> Result<Arc<Conn>> {
    // Opening the UDP port is a few system calls; the handshake is what takes time.
    let socket = builder.connect_nonblocking(addr)?;
    finish_connect(socket).await
}

/// Meets a rendezvous peer at `remote` from the local address `local`.
pub(crate) async fn rendezvous(
    builder: &Builder,
    local: SocketAddr,
    remote: SocketAddr,
) -> Result<Arc<Conn>> {
    let bound = builder.bind(local)?;
    let socket = builder.rendezvous_bound(bound, remote, false)?;
    finish_connect(socket).await
}

/// Waits for the handshake of `socket`; dropping the future closes it.
async fn finish_connect(socket: Socket) -> Result<Arc<Conn>> {
    let conn = Arc::new(Conn::new(socket));
    std::future::poll_fn(|cx| conn.poll_connected(cx)).await?;
    Ok(conn)
}
