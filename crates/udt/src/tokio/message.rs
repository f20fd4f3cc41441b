//! [`UdtMessageSocket`]: a UDT message connection (`SOCK_DGRAM` in UDT4) for async tasks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use udt_proto::buffer::MsgRead;
use udt_proto::SocketKind;

use super::conn::{self, Conn};
use crate::error::Result;
use crate::socket::{Builder, Socket};

/// A UDT message connection for tokio: whole messages, each delivered entirely or (if its
/// time-to-live passes first) not at all, in order or as they complete.
///
/// Every method takes `&self`: one task may send while another receives (share the socket
/// in an `Arc`).
///
/// **Cancellation**: [`send_msg`](Self::send_msg) and [`recv_msg`](Self::recv_msg) are
/// cancel-safe: a message is queued, or taken, only by the poll that completes the future, so
/// a dropped future sent nothing and lost nothing. [`close`](Self::close) may be cancelled:
/// the close goes on in the background. [`connect`](Self::connect) is not cancel-safe:
/// dropping its future abandons the handshake.
///
/// Dropping the socket closes it gracefully in the background (linger).
///
/// ```
/// use udt::tokio::{UdtListener, UdtMessageSocket};
/// use udt::{Builder, SocketKind};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> udt::Result<()> {
/// let listener =
///     UdtListener::bind_with(&Builder::new().kind(SocketKind::Message), "127.0.0.1:0", 16)
///         .await?;
/// let addr = listener.local_addr();
/// let server = tokio::spawn(async move {
///     let (socket, _peer) = listener.accept_msg().await?;
///     let mut buf = [0u8; 1500];
///     let got = socket.recv_msg(&mut buf).await?;
///     Ok::<_, udt::Error>(buf[..got.copied].to_vec())
/// });
/// let socket = UdtMessageSocket::connect(addr).await?;
/// // Delivered whole within 1 s, or not at all; after every earlier message.
/// socket
///     .send_msg(b"one whole message", Some(std::time::Duration::from_secs(1)), true)
///     .await?;
/// assert_eq!(server.await.unwrap()?, b"one whole message");
/// # Ok(())
/// # }
/// ```
pub struct UdtMessageSocket {
    conn: Arc<Conn>,
}

impl UdtMessageSocket {
    /// Connects to a listener of message sockets at `addr` with default options.
    pub async fn connect(addr: impl ::tokio::net::ToSocketAddrs) -> Result<UdtMessageSocket> {
        Self::connect_with(&Builder::new(), addr).await
    }

    /// Connects with `builder`'s options (its kind is ignored: this is a message socket).
    pub async fn connect_with(
        builder: &Builder,
        addr: impl ::tokio::net::ToSocketAddrs,
    ) -> Result<UdtMessageSocket> {
        let remote = conn::resolve(addr).await?;
        let b = builder.clone().kind(SocketKind::Message);
        Ok(UdtMessageSocket {
            conn: conn::connect(&b, remote).await?,
        })
    }

    /// Meets a peer that connects to us at the same time (rendezvous), with default options:
    /// this side binds `local` (an explicit port), the peer binds `remote`, and each names
    /// the other. Gives up after the connect timeout, at least 30 s for rendezvous (as UDT4).
    pub async fn rendezvous(
        local: SocketAddr,
        remote: impl ::tokio::net::ToSocketAddrs,
    ) -> Result<UdtMessageSocket> {
        Self::rendezvous_with(&Builder::new(), local, remote).await
    }

    /// As [`rendezvous`](Self::rendezvous), with `builder`'s options (its kind is ignored).
    pub async fn rendezvous_with(
        builder: &Builder,
        local: SocketAddr,
        remote: impl ::tokio::net::ToSocketAddrs,
    ) -> Result<UdtMessageSocket> {
        let remote = conn::resolve(remote).await?;
        let b = builder.clone().kind(SocketKind::Message);
        Ok(UdtMessageSocket {
            conn: conn::rendezvous(&b, local, remote).await?,
        })
    }

    /// Drives a blocking message [`Socket`] from async tasks instead. Fails with
    /// [`Error::WrongKind`](crate::Error::WrongKind) for a stream socket.
    pub fn from_socket(socket: Socket) -> Result<UdtMessageSocket> {
        socket.expect_kind(SocketKind::Message)?;
        Ok(Self::from_conn(Arc::new(Conn::new(socket))))
    }

    pub(crate) fn from_conn(conn: Arc<Conn>) -> UdtMessageSocket {
        UdtMessageSocket { conn }
    }

    /// Sends one message: waits until the whole of it fits in the send buffer, then queues
    /// it. `ttl`: discard it if not delivered within this long (`None`: never); `in_order`:
    /// deliver it only after every earlier message. Fails with
    /// [`Error::MessageTooLarge`](crate::Error::MessageTooLarge) if it could never fit.
    /// Cancel-safe.
    pub async fn send_msg(&self, data: &[u8], ttl: Option<Duration>, in_order: bool) -> Result<()> {
        self.conn.expect_kind(SocketKind::Message)?;
        std::future::poll_fn(|cx| self.conn.poll_send_msg(cx, data, ttl, in_order)).await
    }

    /// Receives one message into `buf`. If `buf` is too small the message is cut and the rest
    /// discarded: compare `copied` with `msg_len`. Fails with
    /// [`Error::ConnectionLost`](crate::Error::ConnectionLost) once the connection has ended
    /// and no message is left. Cancel-safe.
    pub async fn recv_msg(&self, buf: &mut [u8]) -> Result<MsgRead> {
        self.conn.expect_kind(SocketKind::Message)?;
        std::future::poll_fn(|cx| self.conn.poll_recv_msg(cx, buf)).await
    }

    /// Closes gracefully: queued messages are still delivered for up to the linger time, then
    /// the peer is told; returns once the connection has ended. Later sends fail with
    /// [`Error::Closed`](crate::Error::Closed).
    pub async fn close(&self) -> Result<()> {
        std::future::poll_fn(|cx| self.conn.poll_close(cx)).await
    }

    /// The underlying socket, for its options, state and statistics. Its blocking calls
    /// would block the runtime's thread: use the async ones.
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
}

impl std::fmt::Debug for UdtMessageSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdtMessageSocket")
            .field("local_addr", &self.local_addr())
            .field("peer_addr", &self.peer_addr().ok())
            .finish()
    }
}
