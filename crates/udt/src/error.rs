//! Errors of the socket API, in UDT4's categories (spec §14.5).

use std::io;
use std::net::SocketAddr;

use thiserror::Error;
use udt_proto::{ConnectError, EndpointError};

/// Why a socket operation failed.
#[derive(Debug, Error)]
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
    /// An option value is out of range or inconsistent with the others (5003 `EINVPARAM`).
    #[error("invalid option value: {0}")]
    InvalidOption(&'static str),
    /// The operation is not valid in this state or with these arguments (5000-5013).
    #[error("invalid operation: {0}")]
    InvalidOperation(&'static str),
    /// Non-blocking mode and the operation would have to wait (6001, 6002).
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
            Error::InvalidOption(_) => 5003,
            Error::InvalidOperation(_) => 5000,
            Error::WouldBlock => 6002,
            Error::Timeout => 6003,
            Error::PeerError => 7000,
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
            P::MessageTooLarge => Error::InvalidOperation("message larger than the send buffer"),
            P::PeerError => Error::PeerError,
            P::InvalidArgument(m) => Error::InvalidOperation(m),
        }
    }
}

impl From<EndpointError> for Error {
    fn from(e: EndpointError) -> Self {
        match e {
            EndpointError::AlreadyListening => {
                Error::InvalidOperation("another socket already listens on this port")
            }
            EndpointError::InvalidConfig(m) => Error::InvalidOption(m),
            EndpointError::RendezvousListen => {
                Error::InvalidOperation("rendezvous sockets cannot listen")
            }
            EndpointError::TooManyConnections => {
                Error::InvalidOperation("too many connections on this port")
            }
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match &e {
            Error::Io(inner) => inner.kind(),
            Error::AddrInUse(_) => io::ErrorKind::AddrInUse,
            Error::InvalidOption(_) => io::ErrorKind::InvalidInput,
            Error::Connect(ConnectError::TimedOut) | Error::Timeout => io::ErrorKind::TimedOut,
            Error::Connect(ConnectError::Rejected) => io::ErrorKind::ConnectionRefused,
            Error::Connect(_) => io::ErrorKind::ConnectionAborted,
            Error::ConnectionLost => io::ErrorKind::ConnectionReset,
            Error::NotConnected => io::ErrorKind::NotConnected,
            Error::InvalidOperation(_) => io::ErrorKind::InvalidInput,
            Error::WouldBlock => io::ErrorKind::WouldBlock,
            Error::PeerError => io::ErrorKind::Other,
        };
        match e {
            Error::Io(inner) => inner,
            other => io::Error::new(kind, other),
        }
    }
}

/// Result of socket operations.
pub type Result<T> = std::result::Result<T, Error>;
