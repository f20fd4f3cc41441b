//! Errors from parsing and emitting packets.

use thiserror::Error;

/// Why a datagram could not be parsed, or a packet could not be emitted.
///
/// A malformed datagram from the network always yields one of these, never a panic; the
/// connection drops the datagram and counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum WireError {
    /// The datagram is shorter than the 16-byte header.
    #[error("datagram of {len} bytes is shorter than the 16-byte header")]
    Truncated {
        /// Length of the datagram, bytes.
        len: usize,
    },
    /// A data packet carries no payload.
    #[error("data packet without payload")]
    EmptyPayload,
    /// The control type is not one UDT defines.
    #[error("unknown control packet type {0:#x}")]
    UnknownControlType(u16),
    /// The body of a control packet has a length its type does not allow.
    #[error("{kind} body of {len} bytes is malformed")]
    BadBodyLength {
        /// The control packet kind.
        kind: &'static str,
        /// The body length, bytes.
        len: usize,
    },
    /// A loss report ends in the middle of a range or has a reversed range.
    #[error("malformed loss report")]
    MalformedLossReport,
    /// A field holds a value outside its range (for example a sequence number with bit 0 set).
    #[error("field {0} out of range")]
    FieldOutOfRange(&'static str),
    /// The output buffer is too small for the packet.
    #[error("output buffer of {have} bytes, {need} needed")]
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
}
