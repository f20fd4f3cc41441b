//! The handshake extensions (`docs/encryption.md` §2): those of encrypted connections, and the
//! peer hint by which two endpoints of this implementation recognise each other.
//!
//! Three carry only a few bytes and travel *inside* the 48-byte handshake, in the peer-address
//! field of packets whose peer address nobody reads: the listener's cookie reply (the
//! [`Offer`], or without a secret the [`PeerHint`]) and a rejection (the [`RejectReason`]).
//! UDT4 4.11 and older udt clients read only the cookie of the first and only the request type
//! of the second, so these packets stay exactly as long as the request that caused them. The
//! others are appended after the 48 bytes of the second-phase request and of the listener's
//! response, and only sent to a peer that has shown it understands them: [`Tail::Hello`] and
//! [`Tail::Accept`] carry an X25519 public key and a MAC, and a client without a secret
//! appends its own [`PeerHint`] ([`PeerHint::LEN`] bytes).

use crate::wire::PeerAddr;

use super::config::Cipher;

/// First word of every extension: `"UDTE"`.
pub const MAGIC: [u8; 4] = *b"UDTE";
/// Version of the extension format.
pub const VERSION: u8 = 1;
/// Length of an appended extension ([`Tail`]), bytes.
pub const TAIL_LEN: usize = 56;
/// Length of the part of a [`Tail`] the MAC covers (all but the MAC), bytes.
pub const TAIL_SIGNED_LEN: usize = 40;

mod kind {
    pub const OFFER: u8 = 1;
    pub const HELLO: u8 = 2;
    pub const ACCEPT: u8 = 3;
    pub const REJECT: u8 = 4;
    pub const PEER: u8 = 5;
}

/// Flag bit of an [`Offer`]: the listener refuses clear connections.
const FLAG_REQUIRED: u8 = 1;

/// The listener's offer to encrypt, in the peer-address field of its cookie reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The cipher the listener prefers (informative: it accepts either).
    pub cipher: Cipher,
    /// The listener refuses clear connections.
    pub required: bool,
}

impl Offer {
    /// The 16 bytes of the peer-address field.
    pub fn encode(&self) -> PeerAddr {
        let flags = if self.required { FLAG_REQUIRED } else { 0 };
        small(kind::OFFER, self.cipher.wire(), flags)
    }

    /// The offer in a cookie reply's peer-address field, if there is one.
    pub fn decode(field: &PeerAddr) -> Option<Offer> {
        let (k, a, b) = parse_small(field)?;
        (k == kind::OFFER).then_some(Offer {
            cipher: Cipher::from_wire(a).unwrap_or_default(),
            required: b & FLAG_REQUIRED != 0,
        })
    }
}

/// Flag bit of a [`PeerHint`]: the sender's receiver reads datagrams in batches (`recvmmsg`,
/// GRO) and takes a burst of many connections' datagrams at line rate.
const FLAG_TAKES_BURSTS: u8 = 1;

/// "This endpoint runs this implementation": in the peer-address field of a listener's cookie
/// reply when it offers no encryption, and appended by a client that saw it (or an
/// [`Offer`], which says as much) to its second-phase request when it sends no
/// [`Tail::Hello`] (a hello says as much too). UDT4 4.11 sends neither, so each side learns
/// whether its peer is ours, which decides whether its datagrams may share GSO buffers with
/// other connections' (a 4.11 receiver, which reads one datagram per system call, overflows
/// when 16 connections do: `docs/benchmarks.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerHint {
    /// The sender's receiver takes line-rate bursts (always true for this implementation).
    pub takes_bursts: bool,
}

impl PeerHint {
    /// Length of the hint appended to a request, bytes.
    pub const LEN: usize = 16;

    /// This endpoint's hint.
    pub const OURS: PeerHint = PeerHint { takes_bursts: true };

    /// The 16 bytes of the peer-address field, or of the appended hint.
    pub fn encode(&self) -> PeerAddr {
        let flags = if self.takes_bursts {
            FLAG_TAKES_BURSTS
        } else {
            0
        };
        small(kind::PEER, 0, flags)
    }

    /// The hint in a peer-address field, if there is one.
    pub fn decode(field: &PeerAddr) -> Option<PeerHint> {
        let (k, _, b) = parse_small(field)?;
        (k == kind::PEER).then_some(PeerHint {
            takes_bursts: b & FLAG_TAKES_BURSTS != 0,
        })
    }

    /// The hint appended to a request, if `tail` is exactly one.
    pub fn decode_tail(tail: &[u8]) -> Option<PeerHint> {
        let field: [u8; Self::LEN] = tail.try_into().ok()?;
        Self::decode(&PeerAddr(field))
    }

    /// What a listener's cookie reply says of it: a hint, or an offer of encryption, which
    /// only this implementation makes. `None` for UDT4 4.11 (an address is there).
    pub fn in_cookie_reply(field: &PeerAddr) -> Option<PeerHint> {
        Self::decode(field).or(Offer::decode(field).map(|_| Self::OURS))
    }
}

/// Why a listener rejected an encrypted (or clear) request, in the peer-address field of the
/// rejection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// The listener requires encryption and the request did not offer it.
    EncryptionRequired,
    /// The request's MAC did not verify: the secrets differ.
    AuthenticationFailed,
    /// The request named an extension version or cipher the listener does not know.
    Unsupported,
}

impl RejectReason {
    const fn code(self) -> u8 {
        match self {
            RejectReason::EncryptionRequired => 1,
            RejectReason::AuthenticationFailed => 2,
            RejectReason::Unsupported => 3,
        }
    }

    /// The 16 bytes of the peer-address field.
    pub fn encode(self) -> PeerAddr {
        small(kind::REJECT, self.code(), 0)
    }

    /// The reason in a rejection's peer-address field, if there is one.
    pub fn decode(field: &PeerAddr) -> Option<RejectReason> {
        let (k, code, _) = parse_small(field)?;
        if k != kind::REJECT {
            return None;
        }
        match code {
            1 => Some(RejectReason::EncryptionRequired),
            2 => Some(RejectReason::AuthenticationFailed),
            3 => Some(RejectReason::Unsupported),
            _ => None,
        }
    }
}

fn small(kind: u8, a: u8, b: u8) -> PeerAddr {
    let mut f = [0u8; 16];
    f[..4].copy_from_slice(&MAGIC);
    f[4] = VERSION;
    f[5] = kind;
    f[6] = a;
    f[7] = b;
    PeerAddr(f)
}

fn parse_small(field: &PeerAddr) -> Option<(u8, u8, u8)> {
    let f = &field.0;
    (f[..4] == MAGIC && f[4] == VERSION && f[8..] == [0u8; 8]).then_some((f[5], f[6], f[7]))
}

/// An extension appended after the 48-byte handshake body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// The client's half of the exchange, in its second-phase request.
    Hello(TailBody),
    /// The listener's half, in its response.
    Accept(TailBody),
}

/// The content of a [`Tail`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailBody {
    /// The cipher (chosen by the client, repeated by the listener).
    pub cipher: Cipher,
    /// The sender's ephemeral X25519 public key.
    pub public_key: [u8; 32],
    /// HMAC-SHA-256 truncated to 16 bytes (what it covers: `docs/encryption.md` §3).
    pub mac: [u8; 16],
}

/// Why an appended extension could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailError {
    /// Not an extension of ours (wrong length or magic).
    Foreign,
    /// Ours, but of a version or cipher this build does not know.
    Unsupported,
}

impl Tail {
    /// The [`TAIL_LEN`] bytes on the wire.
    pub fn encode(&self) -> [u8; TAIL_LEN] {
        let (k, b) = match self {
            Tail::Hello(b) => (kind::HELLO, b),
            Tail::Accept(b) => (kind::ACCEPT, b),
        };
        let mut out = [0u8; TAIL_LEN];
        out[..4].copy_from_slice(&MAGIC);
        out[4] = VERSION;
        out[5] = k;
        out[6] = b.cipher.wire();
        out[7] = 0;
        out[8..40].copy_from_slice(&b.public_key);
        out[40..].copy_from_slice(&b.mac);
        out
    }

    /// Reads the bytes that followed the 48-byte handshake body.
    pub fn decode(bytes: &[u8]) -> Result<Tail, TailError> {
        if bytes.len() != TAIL_LEN || bytes[..4] != MAGIC {
            return Err(TailError::Foreign);
        }
        if bytes[4] != VERSION {
            return Err(TailError::Unsupported);
        }
        let cipher = Cipher::from_wire(bytes[6]).ok_or(TailError::Unsupported)?;
        let mut public_key = [0u8; 32];
        public_key.copy_from_slice(&bytes[8..40]);
        let mut mac = [0u8; 16];
        mac.copy_from_slice(&bytes[40..]);
        let body = TailBody {
            cipher,
            public_key,
            mac,
        };
        match bytes[5] {
            kind::HELLO => Ok(Tail::Hello(body)),
            kind::ACCEPT => Ok(Tail::Accept(body)),
            _ => Err(TailError::Unsupported),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_extensions_round_trip_and_ignore_addresses() {
        let o = Offer {
            cipher: Cipher::ChaCha20Poly1305,
            required: true,
        };
        assert_eq!(Offer::decode(&o.encode()), Some(o));
        assert_eq!(RejectReason::decode(&o.encode()), None);
        for r in [
            RejectReason::EncryptionRequired,
            RejectReason::AuthenticationFailed,
            RejectReason::Unsupported,
        ] {
            assert_eq!(RejectReason::decode(&r.encode()), Some(r));
            assert_eq!(Offer::decode(&r.encode()), None);
        }
        // A real address (what 4.11 puts there) is no extension.
        let a = PeerAddr::from_ip("127.0.0.1".parse().unwrap());
        assert_eq!(Offer::decode(&a), None);
        assert_eq!(RejectReason::decode(&a), None);
        assert_eq!(PeerHint::decode(&a), None);
        assert_eq!(PeerHint::in_cookie_reply(&a), None);
        let a6 = PeerAddr::from_ip("2001:db8::1".parse().unwrap());
        assert_eq!(PeerHint::in_cookie_reply(&a6), None);
    }

    #[test]
    fn peer_hint_round_trips_and_an_offer_implies_it() {
        let h = PeerHint::OURS.encode();
        assert_eq!(PeerHint::decode(&h), Some(PeerHint::OURS));
        assert_eq!(PeerHint::decode_tail(&h.0), Some(PeerHint::OURS));
        assert_eq!(PeerHint::decode_tail(&h.0[..15]), None);
        assert_eq!(Offer::decode(&h), None);
        assert_eq!(RejectReason::decode(&h), None);
        let offer = Offer {
            cipher: Cipher::Aes256Gcm,
            required: false,
        }
        .encode();
        assert_eq!(PeerHint::decode(&offer), None);
        assert_eq!(PeerHint::in_cookie_reply(&offer), Some(PeerHint::OURS));
        let none = PeerHint {
            takes_bursts: false,
        };
        assert_eq!(PeerHint::decode(&none.encode()), Some(none));
    }

    #[test]
    fn tail_round_trip_and_rejects() {
        let b = TailBody {
            cipher: Cipher::Aes256Gcm,
            public_key: [7; 32],
            mac: [9; 16],
        };
        for t in [Tail::Hello(b), Tail::Accept(b)] {
            assert_eq!(Tail::decode(&t.encode()), Ok(t));
        }
        let mut bytes = Tail::Hello(b).encode();
        assert_eq!(Tail::decode(&bytes[..55]), Err(TailError::Foreign));
        bytes[6] = 99;
        assert_eq!(Tail::decode(&bytes), Err(TailError::Unsupported));
        bytes[0] = b'X';
        assert_eq!(Tail::decode(&bytes), Err(TailError::Foreign));
    }
}
