//! [`UdtStream`]: a UDT stream connection with tokio's `AsyncRead` and `AsyncWrite`.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use ::tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use udt_proto::SocketKind;

use super::conn::{self, Conn};
use crate::error::Result;
use crate::socket::{Builder, Socket};

/// A UDT stream connection for tokio: a reliable byte stream, read and written with
/// [`AsyncRead`] and [`AsyncWrite`] (and their `…Ext` helpers).
///
/// The task sleeps while a read finds no data or a write finds the send buffer full; the I/O
/// thread of the connection's UDP port wakes it when that changes. No thread is spent per
/// connection.
///
/// **Cancellation**: `read` and `write` (`poll_read`, `poll_write`) are cancel-safe, as
/// tokio's conventions expect: a dropped `read` future consumed no data and a dropped `write`
/// future queued none. Composite helpers such as `write_all` or `read_exact` are not, as with
/// any tokio stream. [`connect`](Self::connect) is not: dropping its future abandons the
/// handshake and the socket.
///
/// **Closing**: UDT has no half-close. `shutdown` (`poll_shutdown`) closes the whole
/// connection gracefully: queued data is still delivered (for up to the linger time,
/// [`Builder::linger`]), then the peer reads the end of the stream; the future completes once
/// the connection has ended. Reads after it return what had already arrived, then end of
/// stream; writes fail with [`Error::Closed`](crate::Error::Closed). Dropping the stream
/// closes it gracefully too, in the background (the lingering data keeps flowing from the I/O
/// thread).
pub struct UdtStream {
    conn: Arc<Conn>,
}

impl UdtStream {
    /// Connects to a listening UDT socket at `addr` with default options, from a new UDP port.
    pub async fn connect(addr: impl ::tokio::net::ToSocketAddrs) -> Result<UdtStream> {
        Self::connect_with(&Builder::new(), addr).await
    }

    /// Connects with `builder`'s options (buffers, congestion control, linger, connect
    /// timeout, …; its kind is ignored: a stream is a stream). With
    /// [`Builder::local_addr`] on an explicit port, and reuse address on, many connections
    /// share one UDP port and one I/O thread.
    pub async fn connect_with(
        builder: &Builder,
        addr: impl ::tokio::net::ToSocketAddrs,
    ) -> Result<UdtStream> {
        let remote = conn::resolve(addr).await?;
        let b = builder.clone().kind(SocketKind::Stream);
        Ok(UdtStream {
            conn: conn::connect(&b, remote).await?,
        })
    }

    /// Meets a peer that connects to us at the same time (rendezvous): this side binds
    /// `local` (an explicit port), the peer binds `remote`, and each names the other. Gives
    /// up after the connect timeout, at least 30 s for rendezvous (as UDT4).
    pub async fn rendezvous(
        local: SocketAddr,
        remote: impl ::tokio::net::ToSocketAddrs,
    ) -> Result<UdtStream> {
        Self::rendezvous_with(&Builder::new(), local, remote).await
    }

    /// As [`rendezvous`](Self::rendezvous), with `builder`'s options.
    pub async fn rendezvous_with(
        builder: &Builder,
        local: SocketAddr,
        remote: impl ::tokio::net::ToSocketAddrs,
    ) -> Result<UdtStream> {
        let remote = conn::resolve(remote).await?;
        let b = builder.clone().kind(SocketKind::Stream);
        Ok(UdtStream {
            conn: conn::rendezvous(&b, local, remote).await?,
        })
    }

    /// Drives a connected (or connecting) blocking stream [`Socket`] from async tasks
    /// instead, e.g. one accepted by a blocking [`Listener`](crate::Listener). Fails with
    /// [`Error::WrongKind`](crate::Error::WrongKind) for a message socket. The socket's
    /// blocking mode and timeouts no longer matter: async calls never block a thread (wrap
    /// them in `tokio::time::timeout`).
    pub fn from_socket(socket: Socket) -> Result<UdtStream> {
        socket.expect_kind(SocketKind::Stream)?;
        Ok(Self::from_conn(Arc::new(Conn::new(socket))))
    }

    pub(crate) fn from_conn(conn: Arc<Conn>) -> UdtStream {
        UdtStream { conn }
    }

    /// The underlying socket, for its options, state and statistics ([`Socket::stats`],
    /// [`Socket::peer_addr`], [`Socket::set_max_bandwidth`], …). Its blocking calls
    /// (`send`, `recv`, `close`) would block the runtime's thread: use the async ones.
    pub fn socket(&self) -> &Socket {
        self.conn.socket()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddr> {
        self.conn.socket().peer_addr()
    }

    /// The local UDP address.
    pub fn local_addr(&self) -> SocketAddr {
        self.conn.socket().local_addr()
    }

    /// The shared connection, for the halves of [`into_split`](Self::into_split).
    pub(crate) fn into_conn(self) -> Arc<Conn> {
        self.conn
    }

    pub(crate) fn conn(&self) -> &Conn {
        &self.conn
    }
}

impl std::fmt::Debug for UdtStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdtStream")
            .field("local_addr", &self.local_addr())
            .field("peer_addr", &self.peer_addr().ok())
            .finish()
    }
}

impl AsyncRead for UdtStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.conn.poll_read(cx, buf)
    }
}

impl AsyncWrite for UdtStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.conn.poll_send(cx, buf).map_err(io::Error::from)
    }

    /// Ready at once: written bytes are already in the send buffer, from which the I/O thread
    /// sends them (as TCP's flush, this does not wait for the peer).
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Closes the connection gracefully (both directions: UDT has no half-close); ready once
    /// the queued data was delivered or the linger time passed.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.conn.poll_close(cx).map_err(io::Error::from)
    }
}
