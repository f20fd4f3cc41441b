//! Parsing and emitting UDT packets (spec §1–§4).
//!
//! [`Packet::parse`] turns a datagram into a typed view that borrows the payload; each control
//! type has a plain struct that [`ControlPacket::emit`] writes back. The byte layout of the
//! header lives in [`layout`], the handshake's in [`handshake`]. A malformed datagram yields a
//! [`WireError`], never a panic.

pub mod control;
pub mod data;
pub mod error;
pub mod handshake;
pub mod layout;
pub mod loss_report;

use core::fmt;

pub use control::{Ack, AckRates, Control, ControlPacket, DropRequest, UserDefined};
pub use data::{Boundary, DataHeader, DataPacket, MessageWord};
pub use error::WireError;
pub use handshake::{Handshake, PeerAddr, RequestType, SocketType, HANDSHAKE_LEN, UDT_VERSION};
pub use layout::HEADER_LEN;
pub use loss_report::LossReport;

/// A UDT socket ID, as carried in the destination field and the handshake.
///
/// 0 addresses a listener or a rendezvous peer whose ID is not yet known. 4.11 allocates IDs in
/// `1 ..= 2^30` and ignores packets whose destination has bit 0 set (negative as `int32`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SocketId(pub u32);

impl SocketId {
    /// The destination ID of connection requests.
    pub const REQUEST: SocketId = SocketId(0);

    /// True for IDs a socket can have (positive as a signed 32-bit value).
    pub const fn is_valid(self) -> bool {
        self.0 != 0 && self.0 < 0x8000_0000
    }
}

impl fmt::Debug for SocketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SocketId({:#x})", self.0)
    }
}

impl fmt::Display for SocketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A parsed datagram.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Packet<'a> {
    /// A data packet.
    Data(DataPacket<'a>),
    /// A control packet.
    Control(ControlPacket<'a>),
}

impl<'a> Packet<'a> {
    /// Parses one datagram.
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated { len: buf.len() });
        }
        if layout::read_u32(buf, layout::WORD0.start) & layout::CONTROL_FLAG == 0 {
            let payload = &buf[HEADER_LEN..];
            if payload.is_empty() {
                return Err(WireError::EmptyPayload);
            }
            Ok(Packet::Data(DataPacket {
                header: DataHeader::parse_unchecked(buf),
                payload,
            }))
        } else {
            Ok(Packet::Control(ControlPacket::parse_unchecked(buf)?))
        }
    }

    /// The destination socket ID of a datagram, without parsing the rest. `None` if the datagram
    /// is shorter than a header.
    pub fn peek_destination(buf: &[u8]) -> Option<SocketId> {
        (buf.len() >= HEADER_LEN)
            .then(|| SocketId(layout::read_u32(buf, layout::DEST_SOCKET.start)))
    }

    /// The destination socket ID.
    pub fn destination(&self) -> SocketId {
        match self {
            Packet::Data(d) => d.header.dst,
            Packet::Control(c) => c.dst,
        }
    }
}
