//! # udt
//!
//! UDT over real UDP, on the sans-IO engine `udt-proto`: blocking and non-blocking stream
//! sockets with `std::io::Read`/`Write`, a listener, and rendezvous connections.
//!
//! ```no_run
//! use std::io::{Read, Write};
//!
//! let listener = udt::Listener::bind("127.0.0.1:9000")?;
//! std::thread::spawn(move || -> udt::Result<()> {
//!     let (mut conn, _peer) = listener.accept()?;
//!     let mut buf = Vec::new();
//!     conn.read_to_end(&mut buf)?;
//!     Ok(())
//! });
//! let mut stream = udt::Socket::connect("127.0.0.1:9000")?;
//! stream.write_all(b"hello over UDT")?;
//! stream.close()?;
//! # Ok::<(), udt::Error>(())
//! ```
//!
//! Each bound UDP port is served by one I/O thread that paces sending to the congestion
//! control's period with microsecond precision and moves datagrams in batches
//! (`recvmmsg`/`sendmmsg`) with a kernel timestamp per datagram.
//!
//! A [`Poller`] waits on many sockets and listeners at once (UDT4's epoll), also through a file
//! descriptor that C event loops can watch; [`Builder`] holds UDT4's socket options, including
//! reuse address (several sockets sharing one UDP port).
//!
//! With the cargo feature `tokio`, the module `udt::tokio` offers the same sockets to async
//! tasks: `UdtListener`, `UdtStream` (tokio's `AsyncRead`/`AsyncWrite`) and
//! `UdtMessageSocket`, woken by the I/O threads' readiness events.
#![warn(missing_docs)]

mod bsd_socket;
mod clock;
mod error;
mod file;
mod mux;
mod poll;
mod readiness;
mod socket;
mod sockopt;
#[cfg(feature = "tokio")]
pub mod tokio;
mod udp;

pub use bsd_socket::{BsdSocket, Family, Udt4Status};
pub use error::{Error, Result};
pub use file::{FILE_BLOCK_SIZE, PIPELINE_BLOCKS};
pub use poll::{PollEvent, Poller, Source};
pub use readiness::Readiness;
pub use socket::{
    default_udp_recv_buffer, Bound, Builder, Listener, Socket, DEFAULT_UDP_RECV_BUFFER,
    DEFAULT_UDP_SEND_BUFFER, MAX_DEFAULT_UDP_RECV_BUFFER,
};
pub use sockopt::{OptType, OptValue, SockOpt};
pub use udp::{BufferSizes, IoStats};
pub use udt_proto::buffer::MsgRead;
pub use udt_proto::stats::PerfStats;
pub use udt_proto::{cc, Cipher, ConnectionState, Encryption, EncryptionMode, SocketKind};

/// The README's examples (the `udt` and `udt-proto` libraries), compiled and run as
/// documentation tests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
