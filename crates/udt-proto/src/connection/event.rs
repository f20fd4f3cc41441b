//! What a connection tells its application.

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The application closed it.
    Local,
    /// The peer sent Shutdown.
    PeerShutdown,
    /// Nothing was heard from the peer for too long (UDT's EXP limit: 16 expiries and 5 s).
    TimedOut,
    /// Linger time ran out with data still unacknowledged.
    LingerExpired,
}

/// Why a connection attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectError {
    /// No answer within the connect timeout — UDT4 1001 `ENOSERVER`.
    TimedOut,
    /// The peer rejected the request — UDT4 1002 `ECONNREJ`.
    Rejected,
    /// The response did not carry our initial sequence number — UDT4 1004 `ESECFAIL`.
    SecurityCheck,
    /// The application closed the socket while connecting — UDT4 1000.
    Closed,
    /// The listener requires encryption and we have no secret (or encryption is off) — UDT4
    /// 1002 `ECONNREJ`.
    EncryptionRequired,
    /// We require encryption and the peer does not offer it (UDT4 4.11, an older udt, or a
    /// listener without a secret) — UDT4 1002 `ECONNREJ`. Nothing was sent in clear.
    EncryptionUnavailable,
    /// The secrets differ: the listener refused our proof of the secret, or its own proof
    /// did not verify — UDT4 1004 `ESECFAIL`.
    AuthenticationFailed,
}

impl ConnectError {
    /// The UDT4 error code.
    pub fn udt4_code(&self) -> i32 {
        match self {
            ConnectError::TimedOut => 1001,
            ConnectError::Rejected => 1002,
            ConnectError::SecurityCheck => 1004,
            ConnectError::Closed => 1000,
            ConnectError::EncryptionRequired | ConnectError::EncryptionUnavailable => 1002,
            ConnectError::AuthenticationFailed => 1004,
        }
    }
}

impl core::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ConnectError::TimedOut => "connection timed out",
            ConnectError::Rejected => "connection rejected by the peer",
            ConnectError::SecurityCheck => "connection aborted: the peer failed the ISN check",
            ConnectError::Closed => "socket closed while connecting",
            ConnectError::EncryptionRequired => {
                "connection rejected: the peer requires encryption (set the same secret)"
            }
            ConnectError::EncryptionUnavailable => {
                "connection refused: encryption is required and the peer does not offer it"
            }
            ConnectError::AuthenticationFailed => {
                "connection rejected: encryption secrets differ (authentication failed)"
            }
        })
    }
}

impl std::error::Error for ConnectError {}

/// A notification from a connection. Readiness events are edges: `Readable` when data becomes
/// readable after none was, `Writable` when send-buffer space appears after the buffer was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The connection is established.
    Connected,
    /// Connecting failed; the connection is finished.
    ConnectFailed(ConnectError),
    /// Data (stream) or a message is readable.
    Readable,
    /// The send buffer has room again.
    Writable,
    /// The connection ended. Data already received stays readable.
    Closed(CloseReason),
}

/// The coarse state of a connection (UDT4 `UDTSTATUS`, spec §14.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionState {
    /// Handshake in progress.
    Connecting,
    /// Established.
    Connected,
    /// Closed by the application, still sending queued data (linger).
    Closing,
    /// Ended by the peer or by a timeout; unread data may remain.
    Broken,
    /// Finished.
    Closed,
}
