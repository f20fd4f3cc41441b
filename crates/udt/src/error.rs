//! Errors of the socket API, in UDT4's categories (spec §14.5).
//!
//! Every variant maps to one UDT4 error code ([`Error::udt4_code`]), so that the C, C++,
//! Python and Java front ends report the codes UDT4 applications expect from one table here.

use std::io;
use std::net::SocketAddr;

use thiserror::Error;
use udt_proto::{ConnectError, EndpointError, SocketKind};

/// Why a socket operation failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// Connection setup failed: timed out (1001), rejected (1002), failed the ISN check (1004)
    /// or closed while connecting (1000).
    #[error("connection setup failed: {0}")]
    Connect(ConnectError),
    /// The connection was broken: the peer closed it, or went silent too long (2001).
    #[error("connection was lost")]
    ConnectionLost,
    /// The socket is not connected (2002).
    #[error("socket is not connected")]
    NotConnected,
    /// The local UDP address is already in use: by another process, or by one of our sockets
    /// that does not share its port (reuse address off on either side) (1003).
    #[error("local address {0} is already in use")]
    AddrInUse(SocketAddr),
    /// A system call failed: socket creation, buffer setup, … (3000).
    #[error("system error: {0}")]
    Io(#[from] io::Error),
    /// Reading or writing a file for `sendfile`/`recvfile` failed (4000 `EFILE`).
    #[error("file error: {0}")]
    File(io::Error),
    /// An option value is out of range or inconsistent with the others (5003 `EINVPARAM`).
    #[error("invalid option value: {0}")]
    InvalidOption(&'static str),
    /// The operation is not valid in this state or with these arguments (5000 `EINVOP`).
    #[error("invalid operation: {0}")]
    InvalidOperation(&'static str),
    /// The socket is already bound, and the operation (bind, or an option that must be set
    /// before binding) needs an unbound one (5001 `EBOUNDSOCK`).
    #[error("socket is already bound")]
    AlreadyBound,
    /// The socket is connected (or connecting, or listening), and the operation needs one that
    /// is not (5002 `ECONNSOCK`).
    #[error("socket is already connected or listening")]
    AlreadyConnected,
    /// The socket was closed; nothing can be done with it any more (5004 `EINVSOCK`).
    #[error("socket is closed")]
    Closed,
    /// `listen` on a socket that is not bound (5005 `EUNBOUNDSOCK`).
    #[error("socket is not bound")]
    NotBound,
    /// `accept` on a socket that does not listen (5006 `ENOLISTEN`).
    #[error("socket is not listening")]
    NotListening,
    /// `listen` on a rendezvous socket (5007 `ERDVNOSERV`).
    #[error("rendezvous sockets cannot listen")]
    RendezvousListen,
    /// A rendezvous `connect` on a socket that was not bound first (5008 `ERDVUNBOUND`).
    #[error("rendezvous connect needs a bound socket")]
    RendezvousUnbound,
    /// A message operation on a stream socket (5009 `ESTREAMILL`) or a stream operation on a
    /// message socket (5010 `EDGRAMILL`); the value is the socket's kind.
    #[error("operation not supported by a {0:?} socket")]
    WrongKind(SocketKind),
    /// Another socket already listens on this UDP port (5011 `EDUPLISTEN`).
    #[error("another socket already listens on this port")]
    AlreadyListening,
    /// The message is larger than the whole send buffer (5012 `ELARGEMSG`).
    #[error("message larger than the send buffer")]
    MessageTooLarge,
    /// A poller, or a registration in one, that does not exist (5013 `EINVPOLLID`).
    #[error("invalid poller or registration: {0}")]
    InvalidPoll(&'static str),
    /// Non-blocking mode and a send would have to wait for buffer space (6001 `EASYNCSND`).
    #[error("send would block")]
    SendWouldBlock,
    /// Non-blocking mode and a receive or accept would have to wait (6002 `EASYNCRCV`).
    #[error("operation would block")]
    WouldBlock,
    /// A blocking operation ran out of time (6003).
    #[error("operation timed out")]
    Timeout,
    /// The peer reported an error, e.g. it failed to write a received file (7000).
    #[error("the peer reported an error")]
    PeerError,
}

impl Error {
    /// The UDT4 error code of this error (major × 1000 + minor).
    pub fn udt4_code(&self) -> i32 {
        match self {
            Error::Connect(e) => e.udt4_code(),
            Error::ConnectionLost => 2001,
            Error::NotConnected => 2002,
            Error::AddrInUse(_) => 1003,
            Error::Io(_) => 3000,
            Error::File(_) => 4000,
            Error::InvalidOperation(_) => 5000,
            Error::AlreadyBound => 5001,
            Error::AlreadyConnected => 5002,
            Error::InvalidOption(_) => 5003,
            Error::Closed => 5004,
            Error::NotBound => 5005,
            Error::NotListening => 5006,
            Error::RendezvousListen => 5007,
            Error::RendezvousUnbound => 5008,
            Error::WrongKind(SocketKind::Stream) => 5009,
            Error::WrongKind(SocketKind::Message) => 5010,
            Error::AlreadyListening => 5011,
            Error::MessageTooLarge => 5012,
            Error::InvalidPoll(_) => 5013,
            Error::SendWouldBlock => 6001,
            Error::WouldBlock => 6002,
            Error::Timeout => 6003,
            Error::PeerError => 7000,
        }
    }

    /// True for [`Error::WouldBlock`] and [`Error::SendWouldBlock`]: the operation would have
    /// had to wait in non-blocking mode.
    pub fn is_would_block(&self) -> bool {
        matches!(self, Error::WouldBlock | Error::SendWouldBlock)
    }

    /// The system `errno` behind this error, if a system call or file operation failed
    /// (UDT4's `getErrorCode` reports it beside the UDT code).
    pub fn os_error(&self) -> Option<i32> {
        match self {
            Error::Io(e) | Error::File(e) => e.raw_os_error(),
            _ => None,
        }
    }
}

impl From<udt_proto::Error> for Error {
    fn from(e: udt_proto::Error) -> Self {
        use udt_proto::Error as P;
        match e {
            P::NotConnected => Error::NotConnected,
            P::ConnectionLost => Error::ConnectionLost,
            P::WouldBlock => Error::WouldBlock,
            P::WrongSocketKind => {
                Error::InvalidOperation("operation not supported by this socket kind")
            }
            P::MessageTooLarge => Error::MessageTooLarge,
            P::PeerError => Error::PeerError,
            P::InvalidArgument(m) => Error::InvalidOperation(m),
        }
    }
}

impl From<EndpointError> for Error {
    fn from(e: EndpointError) -> Self {
        match e {
            EndpointError::AlreadyListening => Error::AlreadyListening,
            EndpointError::InvalidConfig(m) => Error::InvalidOption(m),
            EndpointError::RendezvousListen => Error::RendezvousListen,
            EndpointError::TooManyConnections => {
                Error::InvalidOperation("too many connections on this port")
            }
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match &e {
            Error::Io(inner) | Error::File(inner) => inner.kind(),
            Error::AddrInUse(_) => io::ErrorKind::AddrInUse,
            Error::InvalidOption(_) => io::ErrorKind::InvalidInput,
            Error::Connect(ConnectError::TimedOut) | Error::Timeout => io::ErrorKind::TimedOut,
            Error::Connect(
                ConnectError::Rejected
                | ConnectError::EncryptionRequired
                | ConnectError::EncryptionUnavailable
                | ConnectError::AuthenticationFailed,
            ) => io::ErrorKind::ConnectionRefused,
            Error::Connect(_) => io::ErrorKind::ConnectionAborted,
            Error::ConnectionLost => io::ErrorKind::ConnectionReset,
            Error::NotConnected => io::ErrorKind::NotConnected,
            Error::WouldBlock | Error::SendWouldBlock => io::ErrorKind::WouldBlock,
            Error::Closed => io::ErrorKind::NotConnected,
            Error::AlreadyListening => io::ErrorKind::AddrInUse,
            _ => io::ErrorKind::InvalidInput,
        };
        match e {
            Error::Io(inner) => inner,
            other => io::Error::new(kind, other),
        }
    }
}

/// Result of socket operations.
pub type Result<T> = std::result::Result<T, Error>;
