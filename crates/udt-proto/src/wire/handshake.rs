//! The 48-byte handshake body (spec §4).

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::layout::{read_u32, write_u32};
use super::{SocketId, WireError};
use crate::seq::SeqNo;

/// Length of the handshake body, bytes. 4.11 listeners ignore any other length.
pub const HANDSHAKE_LEN: usize = 48;

/// The UDT version carried in every handshake we send.
pub const UDT_VERSION: u32 = 4;

/// Word offsets (bytes) of the handshake fields, stated once.
mod field {
    pub const VERSION: usize = 0;
    pub const SOCKET_TYPE: usize = 4;
    pub const ISN: usize = 8;
    pub const MSS: usize = 12;
    pub const FLOW_WINDOW: usize = 16;
    pub const REQUEST_TYPE: usize = 20;
    pub const SOCKET_ID: usize = 24;
    pub const COOKIE: usize = 28;
    pub const PEER_IP: usize = 32;
}

/// Socket type in the handshake: 1 = stream, 2 = datagram (message) (spec §4.1; the draft's
/// 0/1 is not what 4.11 sends). Kept as the raw value so that unknown types can be echoed and
/// rejected.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct SocketType(pub u32);

impl SocketType {
    /// Stream socket (`SOCK_STREAM`).
    pub const STREAM: SocketType = SocketType(1);
    /// Message socket (`SOCK_DGRAM`).
    pub const DGRAM: SocketType = SocketType(2);
}

/// Request type of a handshake (spec §4.2). Kept as the raw signed value.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct RequestType(pub i32);

impl RequestType {
    /// Client/server first-phase request (and the listener's cookie reply).
    pub const REQUEST: RequestType = RequestType(1);
    /// Rendezvous connection request.
    pub const RENDEZVOUS: RequestType = RequestType(0);
    /// Second-phase request with the cookie, the server's positive response, and the rendezvous
    /// "I have heard you" reply.
    pub const RESPONSE: RequestType = RequestType(-1);
    /// Rendezvous reply of a socket that is already connected.
    pub const RENDEZVOUS_CONNECTED: RequestType = RequestType(-2);
    /// Rejection (the value of error code `ECONNREJ`).
    pub const REJECT: RequestType = RequestType(1002);
}

/// The peer-address field of a handshake, as the 16 bytes on the wire.
///
/// 4.11 on little-endian hosts (every realistic peer) reverses the bytes of each 32-bit word
/// (spec §4.3): IPv4 `a.b.c.d` travels as `d c b a 0 … 0`. We encode the same way and decode
/// by the same rule, so the value round-trips with 4.11 peers.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, Default)]
pub struct PeerAddr(pub [u8; 16]);

impl PeerAddr {
    /// Encodes `ip` the way a little-endian 4.11 peer does.
    pub fn from_ip(ip: IpAddr) -> Self {
        let mut out = [0u8; 16];
        match ip {
            IpAddr::V4(v4) => {
                let o = v4.octets();
                out[..4].copy_from_slice(&[o[3], o[2], o[1], o[0]]);
            }
            IpAddr::V6(v6) => {
                let o = v6.octets();
                for (dst, src) in out.chunks_exact_mut(4).zip(o.chunks_exact(4)) {
                    dst.copy_from_slice(&[src[3], src[2], src[1], src[0]]);
                }
            }
        }
        PeerAddr(out)
    }

    /// Decodes the field as an IPv4 address (the first word).
    pub fn to_ipv4(&self) -> Ipv4Addr {
        let b = &self.0;
        Ipv4Addr::new(b[3], b[2], b[1], b[0])
    }

    /// Decodes the field as an IPv6 address.
    pub fn to_ipv6(&self) -> Ipv6Addr {
        let mut o = [0u8; 16];
        for (dst, src) in o.chunks_exact_mut(4).zip(self.0.chunks_exact(4)) {
            dst.copy_from_slice(&[src[3], src[2], src[1], src[0]]);
        }
        Ipv6Addr::from(o)
    }

    /// Decodes the field in the address family of `like`.
    pub fn to_ip_like(&self, like: IpAddr) -> IpAddr {
        match like {
            IpAddr::V4(_) => IpAddr::V4(self.to_ipv4()),
            IpAddr::V6(_) => IpAddr::V6(self.to_ipv6()),
        }
    }
}

/// The handshake structure.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Handshake {
    /// UDT version; 4.11 sends 4.
    pub version: u32,
    /// Stream or datagram.
    pub socket_type: SocketType,
    /// Initial sequence number of the sender of this handshake.
    pub isn: SeqNo,
    /// Maximum segment size, bytes, including the 28 bytes of IP and UDP headers. Raw: a hostile
    /// value is validated where it is used.
    pub mss: u32,
    /// Flow window the sender of the handshake accepts (its receive window), packets. Raw.
    pub flow_window: u32,
    /// Request type.
    pub request: RequestType,
    /// Socket ID of the sender of the handshake (the listener's echo repeats the requester's).
    pub socket_id: SocketId,
    /// SYN cookie (opaque to clients).
    pub cookie: u32,
    /// Address of the receiver of the handshake as the sender sees it.
    pub peer_addr: PeerAddr,
}

impl Handshake {
    /// Parses the first [`HANDSHAKE_LEN`] bytes of `body`.
    pub fn parse(body: &[u8]) -> Result<Self, WireError> {
        if body.len() < HANDSHAKE_LEN {
            return Err(WireError::BadBodyLength {
                kind: "handshake",
                len: body.len(),
            });
        }
        let isn =
            SeqNo::new(read_u32(body, field::ISN)).ok_or(WireError::FieldOutOfRange("isn"))?;
        let mut peer = [0u8; 16];
        peer.copy_from_slice(&body[field::PEER_IP..field::PEER_IP + 16]);
        Ok(Handshake {
            version: read_u32(body, field::VERSION),
            socket_type: SocketType(read_u32(body, field::SOCKET_TYPE)),
            isn,
            mss: read_u32(body, field::MSS),
            flow_window: read_u32(body, field::FLOW_WINDOW),
            request: RequestType(read_u32(body, field::REQUEST_TYPE) as i32),
            socket_id: SocketId(read_u32(body, field::SOCKET_ID)),
            cookie: read_u32(body, field::COOKIE),
            peer_addr: PeerAddr(peer),
        })
    }

    /// Writes the 48-byte body into `buf`; returns the length written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if buf.len() < HANDSHAKE_LEN {
            return Err(WireError::BufferTooSmall {
                need: HANDSHAKE_LEN,
                have: buf.len(),
            });
        }
        write_u32(buf, field::VERSION, self.version);
        write_u32(buf, field::SOCKET_TYPE, self.socket_type.0);
        write_u32(buf, field::ISN, self.isn.get());
        write_u32(buf, field::MSS, self.mss);
        write_u32(buf, field::FLOW_WINDOW, self.flow_window);
        write_u32(buf, field::REQUEST_TYPE, self.request.0 as u32);
        write_u32(buf, field::SOCKET_ID, self.socket_id.0);
        write_u32(buf, field::COOKIE, self.cookie);
        buf[field::PEER_IP..field::PEER_IP + 16].copy_from_slice(&self.peer_addr.0);
        Ok(HANDSHAKE_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_address_quirk_matches_observed_bytes() {
        // Spec A.1: 127.0.0.1 is carried as 01 00 00 7f, and A.7: ::1 as 00..00 01000000.
        let v4 = PeerAddr::from_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(&v4.0[..4], &[0x01, 0x00, 0x00, 0x7f]);
        assert_eq!(&v4.0[4..], &[0u8; 12]);
        assert_eq!(v4.to_ipv4(), Ipv4Addr::LOCALHOST);
        let v6 = PeerAddr::from_ip(IpAddr::V6(Ipv6Addr::LOCALHOST));
        assert_eq!(&v6.0[12..], &[0x01, 0, 0, 0]);
        assert_eq!(v6.to_ipv6(), Ipv6Addr::LOCALHOST);
    }
}
