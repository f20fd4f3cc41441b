//! Control packets (spec §3).

use super::handshake::{Handshake, HANDSHAKE_LEN};
use super::layout::*;
use super::loss_report::LossReport;
use super::{SocketId, WireError};
use crate::seq::{AckNo, MsgNo, SeqNo};

/// Control packet type codes (15 bits of word 0).
pub mod kind {
    /// Connection handshake.
    pub const HANDSHAKE: u16 = 0;
    /// Keep-alive.
    pub const KEEP_ALIVE: u16 = 1;
    /// Acknowledgement (full or light).
    pub const ACK: u16 = 2;
    /// Negative acknowledgement (loss report).
    pub const NAK: u16 = 3;
    /// Congestion (delay) warning.
    pub const CONGESTION_WARNING: u16 = 4;
    /// Shutdown.
    pub const SHUTDOWN: u16 = 5;
    /// Acknowledgement of an acknowledgement.
    pub const ACK2: u16 = 6;
    /// Message drop request.
    pub const DROP_REQUEST: u16 = 7;
    /// Error signal from the peer.
    pub const PEER_ERROR: u16 = 8;
    /// User-defined; the extended type says which.
    pub const USER_DEFINED: u16 = 0x7FFF;
}

/// Receiver estimates attached to a 6-word ACK (spec §3.4, §8.7).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AckRates {
    /// Packet arrival rate, packets per second.
    pub arrival_pps: u32,
    /// Estimated link capacity (packet-pair bandwidth), packets per second.
    pub capacity_pps: u32,
}

/// A full ACK (4 or 6 words).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Ack {
    /// ACK sequence number (additional info), echoed by ACK2.
    pub ack_no: AckNo,
    /// Every packet before this sequence number has been received (exclusive).
    pub ack: SeqNo,
    /// Receiver's smoothed RTT, µs.
    pub rtt_us: u32,
    /// Receiver's smoothed RTT variance, µs.
    pub rtt_var_us: u32,
    /// Free receive buffer, packets (4.11 never sends less than 2).
    pub avail_buf_pkts: u32,
    /// Arrival rate and capacity, present in the 6-word form.
    pub rates: Option<AckRates>,
}

/// A message drop request (spec §3.10).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DropRequest {
    /// The dropped message's number.
    pub msg: MsgNo,
    /// First sequence number the receiver must stop waiting for.
    pub first: SeqNo,
    /// Last sequence number (inclusive) the receiver must stop waiting for.
    pub last: SeqNo,
}

/// A user-defined control packet (type 0x7FFF) used by congestion control.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UserDefined<'a> {
    /// Extended type, chosen by the application (16 bits).
    pub ext_type: u16,
    /// Additional-info word.
    pub info: u32,
    /// Body, as on the wire. 4.11 peers treat it as big-endian 32-bit words.
    pub body: &'a [u8],
}

/// The type-specific content of a control packet.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Control<'a> {
    /// Type 0.
    Handshake(Handshake),
    /// Type 1.
    KeepAlive,
    /// Type 2 with a 16- or 24-byte body.
    Ack(Ack),
    /// Type 2 with a 4-byte body: only the ACK number.
    LightAck(SeqNo),
    /// Type 3.
    Nak(LossReport<'a>),
    /// Type 4.
    CongestionWarning,
    /// Type 5.
    Shutdown,
    /// Type 6, carrying the ACK sequence number it confirms.
    Ack2(AckNo),
    /// Type 7.
    DropRequest(DropRequest),
    /// Type 8, carrying an error code (4.11 sends 4000 on a file write failure).
    PeerError(u32),
    /// Type 0x7FFF.
    UserDefined(UserDefined<'a>),
}

/// A control packet: header fields plus the type-specific content.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ControlPacket<'a> {
    /// Timestamp word (4.11 always sends 0; receivers ignore it).
    pub timestamp: u32,
    /// Destination socket ID (0 for connection requests).
    pub dst: SocketId,
    /// Length of the body as received, bytes (a 4.11 listener ignores handshakes whose body is
    /// not exactly 48 bytes).
    pub body_len: usize,
    /// The content.
    pub control: Control<'a>,
}

/// The body word of packets whose body 4.11 never reads (keep-alive, shutdown, ACK2, …).
const ZERO_WORD: [u8; 4] = [0; 4];

impl<'a> ControlPacket<'a> {
    /// A control packet with timestamp 0 (what 4.11 sends).
    pub fn new(dst: SocketId, control: Control<'a>) -> Self {
        ControlPacket {
            timestamp: 0,
            dst,
            body_len: 0,
            control,
        }
    }

    /// Parses a control packet; `buf` is the whole datagram, at least 16 bytes, with bit 0 set.
    pub(super) fn parse_unchecked(buf: &'a [u8]) -> Result<Self, WireError> {
        let w0 = read_u32(buf, WORD0.start);
        let info = read_u32(buf, WORD1.start);
        let ty = ((w0 >> CONTROL_TYPE_SHIFT) & CONTROL_TYPE_MASK) as u16;
        let body = &buf[HEADER_LEN..];
        let control = match ty {
            kind::HANDSHAKE => Control::Handshake(Handshake::parse(body)?),
            kind::KEEP_ALIVE => Control::KeepAlive,
            kind::ACK => parse_ack(info, body)?,
            kind::NAK => Control::Nak(LossReport::parse(body)?),
            kind::CONGESTION_WARNING => Control::CongestionWarning,
            kind::SHUTDOWN => Control::Shutdown,
            kind::ACK2 => Control::Ack2(AckNo::from_masked(info)),
            kind::DROP_REQUEST => {
                if body.len() < 8 {
                    return Err(WireError::BadBodyLength {
                        kind: "drop request",
                        len: body.len(),
                    });
                }
                let first = SeqNo::new(read_u32(body, 0))
                    .ok_or(WireError::FieldOutOfRange("drop request first"))?;
                let last = SeqNo::new(read_u32(body, 4))
                    .ok_or(WireError::FieldOutOfRange("drop request last"))?;
                if last.is_before(first) {
                    return Err(WireError::FieldOutOfRange("drop request range"));
                }
                Control::DropRequest(DropRequest {
                    msg: MsgNo::from_masked(info),
                    first,
                    last,
                })
            }
            kind::PEER_ERROR => Control::PeerError(info),
            kind::USER_DEFINED => Control::UserDefined(UserDefined {
                ext_type: (w0 & EXT_TYPE_MASK) as u16,
                info,
                body,
            }),
            other => return Err(WireError::UnknownControlType(other)),
        };
        Ok(ControlPacket {
            timestamp: read_u32(buf, TIMESTAMP.start),
            dst: SocketId(read_u32(buf, DEST_SOCKET.start)),
            body_len: body.len(),
            control,
        })
    }

    /// Length of the datagram [`emit`](Self::emit) writes, bytes.
    pub fn wire_len(&self) -> usize {
        HEADER_LEN
            + match &self.control {
                Control::Handshake(_) => HANDSHAKE_LEN,
                Control::Ack(a) => {
                    if a.rates.is_some() {
                        24
                    } else {
                        16
                    }
                }
                Control::Nak(r) => r.as_bytes().len(),
                Control::DropRequest(_) => 8,
                Control::UserDefined(u) => u.body.len(),
                Control::LightAck(_)
                | Control::KeepAlive
                | Control::CongestionWarning
                | Control::Shutdown
                | Control::Ack2(_)
                | Control::PeerError(_) => 4,
            }
    }

    /// Writes the datagram into `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let len = self.wire_len();
        if buf.len() < len {
            return Err(WireError::BufferTooSmall {
                need: len,
                have: buf.len(),
            });
        }
        let (ty, ext, info) = match &self.control {
            Control::Handshake(_) => (kind::HANDSHAKE, 0, 0),
            Control::KeepAlive => (kind::KEEP_ALIVE, 0, 0),
            Control::Ack(a) => (kind::ACK, 0, a.ack_no.get()),
            Control::LightAck(_) => (kind::ACK, 0, 0),
            Control::Nak(_) => (kind::NAK, 0, 0),
            Control::CongestionWarning => (kind::CONGESTION_WARNING, 0, 0),
            Control::Shutdown => (kind::SHUTDOWN, 0, 0),
            Control::Ack2(n) => (kind::ACK2, 0, n.get()),
            Control::DropRequest(d) => (kind::DROP_REQUEST, 0, d.msg.get()),
            Control::PeerError(code) => (kind::PEER_ERROR, 0, *code),
            Control::UserDefined(u) => (kind::USER_DEFINED, u.ext_type, u.info),
        };
        write_u32(
            buf,
            WORD0.start,
            CONTROL_FLAG | (u32::from(ty) << CONTROL_TYPE_SHIFT) | u32::from(ext),
        );
        write_u32(buf, WORD1.start, info);
        write_u32(buf, TIMESTAMP.start, self.timestamp);
        write_u32(buf, DEST_SOCKET.start, self.dst.0);
        let body = &mut buf[HEADER_LEN..len];
        match &self.control {
            Control::Handshake(h) => {
                h.emit(body)?;
            }
            Control::Ack(a) => {
                write_u32(body, 0, a.ack.get());
                write_u32(body, 4, a.rtt_us);
                write_u32(body, 8, a.rtt_var_us);
                write_u32(body, 12, a.avail_buf_pkts);
                if let Some(r) = a.rates {
                    write_u32(body, 16, r.arrival_pps);
                    write_u32(body, 20, r.capacity_pps);
                }
            }
            Control::LightAck(seq) => write_u32(body, 0, seq.get()),
            Control::Nak(r) => body.copy_from_slice(r.as_bytes()),
            Control::DropRequest(d) => {
                write_u32(body, 0, d.first.get());
                write_u32(body, 4, d.last.get());
            }
            Control::UserDefined(u) => body.copy_from_slice(u.body),
            Control::KeepAlive
            | Control::CongestionWarning
            | Control::Shutdown
            | Control::Ack2(_)
            | Control::PeerError(_) => body.copy_from_slice(&ZERO_WORD),
        }
        Ok(len)
    }
}

/// Distinguishes light (4-byte body), 4-word and 6-word ACKs by body length (spec §3.4).
fn parse_ack<'a>(info: u32, body: &[u8]) -> Result<Control<'a>, WireError> {
    if body.len() == 4 {
        return Ok(Control::LightAck(
            SeqNo::new(read_u32(body, 0)).ok_or(WireError::FieldOutOfRange("ack number"))?,
        ));
    }
    if body.len() < 16 {
        return Err(WireError::BadBodyLength {
            kind: "ACK",
            len: body.len(),
        });
    }
    let ack = SeqNo::new(read_u32(body, 0)).ok_or(WireError::FieldOutOfRange("ack number"))?;
    let rates = (body.len() >= 24).then(|| AckRates {
        arrival_pps: read_u32(body, 16),
        capacity_pps: read_u32(body, 20),
    });
    Ok(Control::Ack(Ack {
        ack_no: AckNo::from_masked(info),
        ack,
        rtt_us: read_u32(body, 4),
        rtt_var_us: read_u32(body, 8),
        avail_buf_pkts: read_u32(body, 12),
        rates,
    }))
}
