//! Errors of the application-facing operations, with UDT4's error codes (spec §14.5).

use thiserror::Error;

/// Why an operation on a connection failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Error {
    /// The connection is not established (yet, or any more) — UDT4 2002 `ENOCONN`.
    #[error("connection is not established")]
    NotConnected,
    /// The connection was broken or closed by the peer and no data is left — UDT4 2001
    /// `ECONNLOST`.
    #[error("connection was lost")]
    ConnectionLost,
    /// No buffer space (send) or no data (receive) right now — UDT4 6001/6002.
    #[error("operation would block")]
    WouldBlock,
    /// A stream operation on a message socket or vice versa — UDT4 5009/5010.
    #[error("operation not supported by this socket kind")]
    WrongSocketKind,
    /// The message is larger than the whole send buffer — UDT4 5012 `ELARGEMSG`.
    #[error("message larger than the send buffer")]
    MessageTooLarge,
    /// The peer signalled an error (for example a failed file write) — UDT4 7000 `EPEERERR`.
    #[error("the peer reported an error")]
    PeerError,
    /// An argument is invalid — UDT4 5003 `EINVPARAM`.
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
}

impl Error {
    /// The UDT4 error code (major × 1000 + minor). `WouldBlock` maps to 6002 (receive); the
    /// send-side code is 6001.
    pub fn udt4_code(&self) -> i32 {
        match self {
            Error::NotConnected => 2002,
            Error::ConnectionLost => 2001,
            Error::WouldBlock => 6002,
            Error::WrongSocketKind => 5000,
            Error::MessageTooLarge => 5012,
            Error::PeerError => 7000,
            Error::InvalidArgument(_) => 5003,
        }
    }
}
