//! [`UdtListener`]: accepts UDT connections from async tasks.

use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use udt_proto::SocketKind;

use super::conn::{self, Conn};
use super::message::UdtMessageSocket;
use super::stream::UdtStream;
use super::watcher::{TaskWatcher, Wait};
use crate::error::{Error, Result};
use crate::readiness::Watcher;
use crate::socket::{Builder, Listener, Socket};

/// Backlog of [`UdtListener::bind`]: connections queued before they are accepted.
const DEFAULT_BACKLOG: usize = 1024;

/// A listening UDT socket for tokio. Every connection it accepts shares its UDP port and I/O
/// thread, so a server's threads do not grow with its clients.
///
/// **Cancellation**: [`accept`](Self::accept) is cancel-safe: a connection is taken from the
/// queue only by the poll that returns it, so a dropped `accept` future (say, the losing
/// branch of `tokio::select!`) leaves it queued for the next call. Several tasks may accept
/// on one listener at once. Dropping the listener stops listening; connections already
/// accepted go on.
pub struct UdtListener {
    listener: Listener,
    watcher: Arc<TaskWatcher>,
}

impl UdtListener {
    /// Listens on `addr` with default options (stream sockets) and a backlog of 1024.
    pub async fn bind(addr: impl ::tokio::net::ToSocketAddrs) -> Result<UdtListener> {
        Self::bind_with(&Builder::new(), addr, DEFAULT_BACKLOG).await
    }

    /// Listens on `addr` with `builder`'s options, which accepted sockets inherit (its kind
    /// decides whether stream or message peers are accepted, see
    /// [`Builder::accept_any_kind`]), queueing up to `backlog` connections.
    pub async fn bind_with(
        builder: &Builder,
        addr: impl ::tokio::net::ToSocketAddrs,
        backlog: usize,
    ) -> Result<UdtListener> {
        let addr = conn::resolve(addr).await?;
        Ok(Self::from_listener(builder.listen(addr, backlog)?))
    }

    /// Accepts from a blocking [`Listener`] in async tasks instead. Its blocking mode no
    /// longer matters.
    pub fn from_listener(listener: Listener) -> UdtListener {
        let watcher = Arc::new(TaskWatcher::default());
        let weak: Weak<TaskWatcher> = Arc::downgrade(&watcher);
        let weak: Weak<dyn Watcher> = weak;
        listener.add_watcher(weak, 0);
        UdtListener { listener, watcher }
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// The underlying listener, for its options. Its blocking `accept` would block the
    /// runtime's thread: use [`accept`](Self::accept).
    pub fn listener(&self) -> &Listener {
        &self.listener
    }

    /// Waits for the next established connection: the socket, of whichever kind the peer
    /// is, and the peer's address. Cancel-safe.
    pub fn poll_accept_socket(&self, cx: &mut Context<'_>) -> Poll<Result<(Socket, SocketAddr)>> {
        match self
            .listener
            .accept_or_park(|| self.watcher.park(Wait::Read, cx.waker()))
        {
            Err(Error::WouldBlock) => Poll::Pending,
            other => Poll::Ready(other),
        }
    }

    /// Waits for the next stream connection. A message connection (possible only with
    /// [`Builder::accept_any_kind`]) is closed and reported as
    /// [`Error::WrongKind`]; use [`accept_any`](Self::accept_any) to serve both. Cancel-safe.
    pub async fn accept(&self) -> Result<(UdtStream, SocketAddr)> {
        let (socket, peer) = std::future::poll_fn(|cx| self.poll_accept_socket(cx)).await?;
        Ok((UdtStream::from_socket(socket)?, peer))
    }

    /// Waits for the next message connection (a listener made with
    /// `Builder::kind(SocketKind::Message)`); a stream connection is closed and reported as
    /// [`Error::WrongKind`]. Cancel-safe.
    pub async fn accept_msg(&self) -> Result<(UdtMessageSocket, SocketAddr)> {
        let (socket, peer) = std::future::poll_fn(|cx| self.poll_accept_socket(cx)).await?;
        Ok((UdtMessageSocket::from_socket(socket)?, peer))
    }

    /// Waits for the next connection of either kind. Cancel-safe.
    pub async fn accept_any(&self) -> Result<(Accepted, SocketAddr)> {
        let (socket, peer) = std::future::poll_fn(|cx| self.poll_accept_socket(cx)).await?;
        let conn = Arc::new(Conn::new(socket));
        let accepted = match conn.socket().kind() {
            SocketKind::Stream => Accepted::Stream(UdtStream::from_conn(conn)),
            SocketKind::Message => Accepted::Message(UdtMessageSocket::from_conn(conn)),
        };
        Ok((accepted, peer))
    }
}

/// A connection from [`UdtListener::accept_any`], by the peer's socket kind.
#[derive(Debug)]
pub enum Accepted {
    /// A byte stream.
    Stream(UdtStream),
    /// A message connection.
    Message(UdtMessageSocket),
}

impl std::fmt::Debug for UdtListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdtListener")
            .field("local_addr", &self.local_addr())
            .finish()
    }
}
