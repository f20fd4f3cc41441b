//! UDT4's numbers as C sees them: return values, error codes, option numbers, epoll event bits
//! and socket states. They are C enums (not macros) so that the C++ drop-in, whose `udt.h`
//! declares UDT4's own `UDTOpt`/`EPOLLOpt` enums with the same member names, can include this
//! header inside a namespace without the names colliding.

use std::os::raw::c_int;

/// What a failed call returns (UDT4's `UDT::ERROR`).
pub const UDT_ERROR: c_int = -1;

/// What `udt_socket` and `udt_accept` return on failure (UDT4's `UDT::INVALID_SOCK`).
pub const UDT_INVALID_SOCK: c_int = -1;

/// UDT4's error codes (`CUDTException`: major × 1000 + minor), as returned by
/// `udt_getlasterror_code`.
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum udt_errno {
    /// No error.
    UDT_SUCCESS = 0,
    /// Connection setup failed.
    UDT_ECONNSETUP = 1000,
    /// The peer did not answer the handshake (timed out).
    UDT_ENOSERVER = 1001,
    /// The peer rejected the connection.
    UDT_ECONNREJ = 1002,
    /// A UDP socket could not be created or bound (address in use, ...).
    UDT_ESOCKFAIL = 1003,
    /// The handshake failed a security check.
    UDT_ESECFAIL = 1004,
    /// The connection failed.
    UDT_ECONNFAIL = 2000,
    /// The connection was lost: the peer closed it or went silent.
    UDT_ECONNLOST = 2001,
    /// The socket is not connected.
    UDT_ENOCONN = 2002,
    /// A system resource (memory, threads, buffers) failed.
    UDT_ERESOURCE = 3000,
    /// A thread could not be started.
    UDT_ETHREAD = 3001,
    /// No buffer space.
    UDT_ENOBUF = 3002,
    /// A file could not be read or written.
    UDT_EFILE = 4000,
    /// Bad read offset.
    UDT_EINVRDOFF = 4001,
    /// No permission to read.
    UDT_ERDPERM = 4002,
    /// Bad write offset.
    UDT_EINVWROFF = 4003,
    /// No permission to write.
    UDT_EWRPERM = 4004,
    /// The operation is not valid here.
    UDT_EINVOP = 5000,
    /// The socket is already bound.
    UDT_EBOUNDSOCK = 5001,
    /// The socket is already connected (or connecting, or listening).
    UDT_ECONNSOCK = 5002,
    /// A bad parameter: a null pointer, a bad length, an out-of-range value.
    UDT_EINVPARAM = 5003,
    /// No such socket: closed, stale or never created.
    UDT_EINVSOCK = 5004,
    /// `listen` on an unbound socket.
    UDT_EUNBOUNDSOCK = 5005,
    /// `accept` on a socket that does not listen.
    UDT_ENOLISTEN = 5006,
    /// `listen` on a rendezvous socket.
    UDT_ERDVNOSERV = 5007,
    /// A rendezvous `connect` on an unbound socket.
    UDT_ERDVUNBOUND = 5008,
    /// A stream call on a message socket.
    UDT_ESTREAMILL = 5009,
    /// A message call on a stream socket.
    UDT_EDGRAMILL = 5010,
    /// Another socket already listens on this port.
    UDT_EDUPLISTEN = 5011,
    /// The message is larger than the send buffer.
    UDT_ELARGEMSG = 5012,
    /// No such poller (epoll id).
    UDT_EINVPOLLID = 5013,
    /// A non-blocking call could not complete.
    UDT_EASYNCFAIL = 6000,
    /// A non-blocking send found no buffer space.
    UDT_EASYNCSND = 6001,
    /// A non-blocking receive or accept found nothing.
    UDT_EASYNCRCV = 6002,
    /// A blocking call (or `udt_epoll_wait`) timed out.
    UDT_ETIMEOUT = 6003,
    /// The peer reported an error.
    UDT_EPEERERR = 7000,
    /// An unknown error (a caught internal panic is reported so).
    UDT_EUNKNOWN = -1,
}

/// UDT4's socket options (`UDTOpt`), for `udt_setsockopt`/`udt_getsockopt`. Value types:
/// `int` unless stated; `bool` options take a one-byte `bool` or an `int`.
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum udt_opt {
    /// Maximum segment size, bytes including IP and UDP headers (before bind).
    UDT_MSS = 0,
    /// `bool`: sends block.
    UDT_SNDSYN = 1,
    /// `bool`: receives, accept and connect block.
    UDT_RCVSYN = 2,
    /// Congestion control. C: the algorithm's name as a string (`optlen` bytes, or up to a
    /// NUL); see also `udt_setcc`. Before connecting.
    UDT_CC = 3,
    /// Flight flag size (largest window), packets (before connecting).
    UDT_FC = 4,
    /// Send buffer, bytes (before bind).
    UDT_SNDBUF = 5,
    /// Receive buffer, bytes (before bind).
    UDT_RCVBUF = 6,
    /// `struct linger`: how long close keeps delivering queued data, seconds.
    UDT_LINGER = 7,
    /// Kernel send buffer of the UDP socket, bytes (before bind).
    UDP_SNDBUF = 8,
    /// Kernel receive buffer of the UDP socket, bytes (before bind).
    UDP_RCVBUF = 9,
    /// Not implemented (as in UDT4).
    UDT_MAXMSG = 10,
    /// Not implemented (as in UDT4).
    UDT_MSGTTL = 11,
    /// `bool`: connect in rendezvous mode.
    UDT_RENDEZVOUS = 12,
    /// Send timeout, ms (−1: none).
    UDT_SNDTIMEO = 13,
    /// Receive timeout, ms (−1: none).
    UDT_RCVTIMEO = 14,
    /// `bool`: share the UDP port with other UDT sockets of this process (before bind).
    UDT_REUSEADDR = 15,
    /// `int64_t`: largest sending rate, bytes per second (−1: unlimited).
    UDT_MAXBW = 16,
    /// Read only: the socket's state (`udt_status`).
    UDT_STATE = 17,
    /// Read only: current readiness as `udt_epoll_opt` bits.
    UDT_EVENT = 18,
    /// Read only: packets in the send buffer.
    UDT_SNDDATA = 19,
    /// Read only: bytes in the receive buffer.
    UDT_RCVDATA = 20,
    /// Not in UDT4. Write only, bytes: the secret of transport encryption
    /// (docs/encryption.md), any bytes up to `optlen`, stretched with Argon2id; `optlen` 0
    /// turns encryption off. Before connect/listen.
    UDT_SECRET = 100,
    /// Not in UDT4. `int`: 0 off (forgets the secret), 1 preferred (a peer without
    /// encryption, such as UDT4, connects in clear), 2 required (the default once a secret
    /// is set; such peers are refused with `UDT_ECONNREJ`, a different secret with
    /// `UDT_ESECFAIL`). Reads 0 while no secret is set. Before connect/listen.
    UDT_ENCRYPTION = 101,
    /// Not in UDT4. Read only, `int`: 1 if the connection runs encrypted, else 0.
    UDT_ENCRYPTED = 102,
}

/// Event bits of `udt_epoll_add_usock`/`udt_epoll_add_ssock` (UDT4's `EPOLLOpt`).
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum udt_epoll_opt {
    /// Readable, or a connection waiting to be accepted.
    UDT_EPOLL_IN = 0x1,
    /// Writable (or connected, after a non-blocking connect).
    UDT_EPOLL_OUT = 0x4,
    /// Broken or closed (reported in both the read and the write set, as UDT4 does).
    UDT_EPOLL_ERR = 0x8,
}

/// Socket states (UDT4's `UDTSTATUS`), as `udt_getsockstate` returns them.
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum udt_status {
    /// Created.
    UDT_STATUS_INIT = 1,
    /// Bound.
    UDT_STATUS_OPENED = 2,
    /// Listening.
    UDT_STATUS_LISTENING = 3,
    /// Connecting.
    UDT_STATUS_CONNECTING = 4,
    /// Connected.
    UDT_STATUS_CONNECTED = 5,
    /// The connection broke.
    UDT_STATUS_BROKEN = 6,
    /// Closing (still delivering queued data).
    UDT_STATUS_CLOSING = 7,
    /// Closed.
    UDT_STATUS_CLOSED = 8,
    /// No such socket.
    UDT_STATUS_NONEXIST = 9,
}
