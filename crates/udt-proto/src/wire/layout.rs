//! Byte layout of the 16-byte UDT header, stated once (spec §2.1, §3.1).
//!
//! All words are big-endian. "Bit 0" in the spec is the most significant bit of a word.

use core::ops::Range;

/// Length of the fixed header that starts every UDT packet, in bytes.
pub const HEADER_LEN: usize = 16;

/// Word 0: control flag (bit 0) and, for data, the 31-bit sequence number; for control, the
/// 15-bit type and 16-bit extended type.
pub const WORD0: Range<usize> = 0..4;
/// Word 1: data: boundary bits, in-order bit, message number; control: additional info.
pub const WORD1: Range<usize> = 4..8;
/// Word 2: timestamp in microseconds since the sending socket was opened.
pub const TIMESTAMP: Range<usize> = 8..12;
/// Word 3: destination socket ID.
pub const DEST_SOCKET: Range<usize> = 12..16;

/// Word 0, bit 0: set for control packets.
pub const CONTROL_FLAG: u32 = 0x8000_0000;
/// Word 0 of a control packet: the type is in bits 1..15.
pub const CONTROL_TYPE_SHIFT: u32 = 16;
/// Mask of the 15-bit control type after shifting.
pub const CONTROL_TYPE_MASK: u32 = 0x7FFF;
/// Mask of the 16-bit extended type in word 0 of a control packet.
pub const EXT_TYPE_MASK: u32 = 0xFFFF;

/// Word 1 of a data packet: boundary bits `FF` are bits 0..1.
pub const BOUNDARY_SHIFT: u32 = 30;
/// Word 1 of a data packet: the in-order bit `O` is bit 2.
pub const IN_ORDER_BIT: u32 = 0x2000_0000;
/// Word 1 of a data packet: the message number is bits 3..31.
pub const MSG_NO_MASK: u32 = 0x1FFF_FFFF;

/// Loss-report words: bit 0 set marks the first number of a range.
pub const LOSS_RANGE_FLAG: u32 = 0x8000_0000;

/// Reads big-endian word `range` of `buf`. The caller has checked the length.
#[inline]
pub fn read_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

/// Writes `value` big-endian at byte offset `at` of `buf`. The caller has checked the length.
#[inline]
pub fn write_u32(buf: &mut [u8], at: usize, value: u32) {
    buf[at..at + 4].copy_from_slice(&value.to_be_bytes());
}
