//! The async API on tokio (cargo feature `tokio`): [`UdtListener`], [`UdtStream`] (tokio's
//! `AsyncRead` and `AsyncWrite`, [`into_split`](UdtStream::into_split), rendezvous,
//! [`sendfile`](UdtStream::sendfile)/[`recvfile`](UdtStream::recvfile) on
//! `tokio::fs::File`) and [`UdtMessageSocket`].
//!
//! ```
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! use udt::tokio::{UdtListener, UdtStream};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let listener = UdtListener::bind("127.0.0.1:0").await?;
//! let addr = listener.local_addr();
//! let server = tokio::spawn(async move {
//!     let (mut conn, _peer) = listener.accept().await?;
//!     let mut got = Vec::new();
//!     conn.read_to_end(&mut got).await?; // until the client closes
//!     Ok::<_, udt::Error>(got)
//! });
//! let mut stream = UdtStream::connect(addr).await?;
//! stream.write_all(b"hello over UDT").await?;
//! stream.shutdown().await?; // delivers what is queued, then closes
//! assert_eq!(server.await??, b"hello over UDT");
//! # Ok(())
//! # }
//! ```
//!
//! # How tasks are woken
//!
//! UDT runs over UDP in user space: each UDP port has one I/O thread (see the crate's
//! architecture notes) that runs the protocol for every connection on that port. When an
//! event changes a connection's readiness (data arrived, send-buffer space freed, connected,
//! closed), that thread pushes the new readiness to the connection's watchers — the same path
//! that feeds the [`Poller`](crate::Poller) and its readiness descriptor — and here a watcher
//! wakes the tasks that wait for it, through their `Waker`s. A task whose read finds no data
//! registers its waker under the same lock as the attempt, so no wake-up is lost in between.
//! There is no thread per connection and no polling loop: threads are the runtime's workers
//! plus one I/O thread per UDP port. A server's accepted connections share its port; clients
//! share one with [`Builder::local_addr`](crate::Builder::local_addr) on an explicit port
//! (reuse address, on by default).
//!
//! The [`Poller`](crate::Poller)'s readiness descriptor itself can be awaited too:
//! [`AsyncPoller`] registers it with the runtime's reactor (`tokio::io::unix::AsyncFd`), for
//! programs that watch many blocking-API sockets epoll-style from one task.
//!
//! # Cancellation and timeouts
//!
//! Reads, writes, `accept`, `send_msg` and `recv_msg` are cancel-safe (each type's docs say
//! so): wrap them in `tokio::time::timeout` or `tokio::select!` freely. The async calls never
//! consult the socket's blocking timeouts (`Builder::read_timeout`, …); time limits are
//! tokio's. `connect` and `rendezvous` give up after the builder's connect timeout.
//!
//! # Closing
//!
//! Dropping a stream or message socket closes it gracefully: queued data keeps flowing from
//! the I/O thread for up to the linger time. `shutdown` (streams) and `close` (message
//! sockets) do the same and complete once the connection has ended. UDT has no half-close:
//! the peer then reads the end of the stream, and this side can no longer send.

mod conn;
mod file;
mod listener;
mod message;
mod poller;
mod split;
mod stream;
mod watcher;

pub use listener::{Accepted, UdtListener};
pub use message::UdtMessageSocket;
pub use poller::AsyncPoller;
pub use split::{ReuniteError, UdtReadHalf, UdtWriteHalf};
pub use stream::UdtStream;
