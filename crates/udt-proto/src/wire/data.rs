//! Data packets (spec §2).

use super::layout::*;
use super::{SocketId, WireError};
use crate::seq::{MsgNo, SeqNo};

/// Position of a packet within its message: the two `FF` bits of word 1.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Boundary {
    /// `00`: neither the first nor the last packet of the message.
    Middle = 0b00,
    /// `01`: the last packet of a message of two or more packets.
    Last = 0b01,
    /// `10`: the first packet of a message of two or more packets.
    First = 0b10,
    /// `11`: the message fits in this single packet.
    Solo = 0b11,
}

impl Boundary {
    /// Decodes the two boundary bits.
    pub const fn from_bits(bits: u32) -> Self {
        match bits & 0b11 {
            0b00 => Boundary::Middle,
            0b01 => Boundary::Last,
            0b10 => Boundary::First,
            _ => Boundary::Solo,
        }
    }

    /// The boundary of packet `index` (0-based) of a message of `count` packets.
    pub const fn for_position(index: usize, count: usize) -> Self {
        match (index == 0, index + 1 == count) {
            (true, true) => Boundary::Solo,
            (true, false) => Boundary::First,
            (false, true) => Boundary::Last,
            (false, false) => Boundary::Middle,
        }
    }

    /// True for the first packet of a message (`First` or `Solo`).
    pub const fn starts_message(self) -> bool {
        matches!(self, Boundary::First | Boundary::Solo)
    }

    /// True for the last packet of a message (`Last` or `Solo`).
    pub const fn ends_message(self) -> bool {
        matches!(self, Boundary::Last | Boundary::Solo)
    }
}

/// The message word (word 1) of a data packet: boundary, in-order flag and message number.
///
/// Kept as one value because retransmissions must repeat it exactly and because 4.11 receivers
/// compare it as a whole in places (spec §9.6).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct MessageWord(u32);

impl MessageWord {
    /// Builds the word from its three fields.
    pub const fn new(boundary: Boundary, in_order: bool, msg: MsgNo) -> Self {
        let o = if in_order { IN_ORDER_BIT } else { 0 };
        MessageWord(((boundary as u32) << BOUNDARY_SHIFT) | o | msg.get())
    }

    /// The word exactly as carried on the wire.
    pub const fn from_raw(raw: u32) -> Self {
        MessageWord(raw)
    }

    /// The raw 32-bit value.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// Position of the packet within its message.
    pub const fn boundary(self) -> Boundary {
        Boundary::from_bits(self.0 >> BOUNDARY_SHIFT)
    }

    /// The `O` bit: the message must be delivered in order.
    pub const fn in_order(self) -> bool {
        self.0 & IN_ORDER_BIT != 0
    }

    /// The 29-bit message number.
    pub const fn msg(self) -> MsgNo {
        MsgNo::from_masked(self.0 & MSG_NO_MASK)
    }
}

/// The header of a data packet.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DataHeader {
    /// Packet sequence number.
    pub seq: SeqNo,
    /// Boundary bits, in-order bit and message number.
    pub message: MessageWord,
    /// Microseconds since the sending socket was opened, modulo 2^32.
    pub timestamp: u32,
    /// Socket ID of the receiving UDT socket.
    pub dst: SocketId,
}

impl DataHeader {
    /// Parses the header of a data packet; `buf` must be at least [`HEADER_LEN`] bytes with
    /// bit 0 of word 0 clear (checked by [`super::Packet::parse`]).
    pub(super) fn parse_unchecked(buf: &[u8]) -> Self {
        DataHeader {
            seq: SeqNo::from_masked(read_u32(buf, WORD0.start)),
            message: MessageWord::from_raw(read_u32(buf, WORD1.start)),
            timestamp: read_u32(buf, TIMESTAMP.start),
            dst: SocketId(read_u32(buf, DEST_SOCKET.start)),
        }
    }

    /// Writes the 16-byte header into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::BufferTooSmall {
                need: HEADER_LEN,
                have: buf.len(),
            });
        }
        write_u32(buf, WORD0.start, self.seq.get());
        write_u32(buf, WORD1.start, self.message.raw());
        write_u32(buf, TIMESTAMP.start, self.timestamp);
        write_u32(buf, DEST_SOCKET.start, self.dst.0);
        Ok(())
    }
}

/// A parsed data packet: header and a view of the payload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DataPacket<'a> {
    /// The header fields.
    pub header: DataHeader,
    /// The application payload (1 ..= MSS − 44 bytes).
    pub payload: &'a [u8],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_word_fields() {
        let w = MessageWord::new(Boundary::First, false, MsgNo::new(1).unwrap());
        assert_eq!(w.raw(), 0x8000_0001);
        let w = MessageWord::new(Boundary::Last, true, MsgNo::new(3).unwrap());
        assert_eq!(w.raw(), 0x6000_0003);
        assert_eq!(w.boundary(), Boundary::Last);
        assert!(w.in_order());
        assert_eq!(w.msg().get(), 3);
    }

    #[test]
    fn boundary_for_position() {
        assert_eq!(Boundary::for_position(0, 1), Boundary::Solo);
        assert_eq!(Boundary::for_position(0, 3), Boundary::First);
        assert_eq!(Boundary::for_position(1, 3), Boundary::Middle);
        assert_eq!(Boundary::for_position(2, 3), Boundary::Last);
    }
}
