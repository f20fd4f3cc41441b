//! Sealing and opening packets of an established encrypted connection
//! (`docs/encryption.md` §4–§5).
//!
//! * Data: `header ‖ AEAD(payload) ‖ tag(16)`. The nonce is the direction's IV XOR the
//!   packet's *extended* sequence number (the 31-bit number plus the count of wraps, tracked
//!   by both ends), so a ciphertext is only valid under its own sequence number and direction,
//!   and no nonce repeats under a key even after the sequence numbers wrap. The header words
//!   that stay the same across retransmissions (sequence, message word, destination) are the
//!   associated data; the timestamp is not authenticated, because a retransmission carries a
//!   new one under the same nonce.
//! * Control: `header ‖ AEAD(body) ‖ tag(16) ‖ counter(8)`, with a per-direction counter
//!   in its own nonce domain and the whole header as associated data; counters go through a
//!   replay window.
//! * Keys change every 2^22 packets (per direction and domain) by deriving the epoch's key
//!   from the session secret, which keeps AES-GCM within its per-key usage limits.

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf::{KeyType, Prk};

use super::config::Cipher;
use super::replay::ReplayWindow;
use super::{CONTROL_OVERHEAD, DATA_OVERHEAD};
use crate::seq::SeqNo;
use crate::wire::HEADER_LEN;

/// Packets per key: the epoch of a packet is its counter shifted right by this.
const EPOCH_BITS: u32 = 22;
/// Nonce domain of data packets (first nonce word before the IV is applied).
const DOMAIN_DATA: u32 = 0;
/// Nonce domain of control packets.
const DOMAIN_CONTROL: u32 = 1;
/// Keys kept per direction (current and previous epochs of both domains).
const KEYS_KEPT: usize = 4;
/// Tag length of both AEADs, bytes.
const TAG_LEN: usize = 16;

/// Output length for HKDF-Expand.
pub(super) struct Len(pub usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

/// Why a packet did not open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// Too short to hold a tag (and, for control packets, a counter).
    Malformed,
    /// The tag did not verify: forged, altered, sealed under another key or sequence number.
    Forged,
    /// A control packet whose counter was already accepted or is too old.
    Replayed,
}

/// The keys of one direction.
struct Direction {
    /// `b"c2s"` or `b"s2c"`.
    label: &'static [u8],
    iv: [u8; 12],
    /// (domain, epoch, key), most recently derived last.
    keys: Vec<(u32, u64, LessSafeKey)>,
}

impl Direction {
    fn new(label: &'static [u8], prk: &Prk, th: &[u8; 32]) -> Direction {
        let mut iv = [0u8; 12];
        expand(prk, &[b"udt-aead-v1 iv ", label, th], &mut iv);
        Direction {
            label,
            iv,
            keys: Vec::with_capacity(KEYS_KEPT),
        }
    }

    fn nonce(&self, domain: u32, counter: u64) -> Nonce {
        let mut n = self.iv;
        for (b, x) in n[..4].iter_mut().zip(domain.to_be_bytes()) {
            *b ^= x;
        }
        for (b, x) in n[4..].iter_mut().zip(counter.to_be_bytes()) {
            *b ^= x;
        }
        Nonce::assume_unique_for_key(n)
    }

    /// The key of `counter`'s epoch in `domain`, derived on first use.
    fn key(&mut self, s: &Secrets, domain: u32, counter: u64) -> &LessSafeKey {
        let epoch = counter >> EPOCH_BITS;
        let pos = self
            .keys
            .iter()
            .position(|(d, e, _)| *d == domain && *e == epoch);
        let pos = match pos {
            Some(p) => p,
            None => {
                if self.keys.len() == KEYS_KEPT {
                    self.keys.remove(0);
                }
                let mut k = [0u8; 32];
                expand(
                    &s.prk,
                    &[
                        b"udt-aead-v1 key ",
                        self.label,
                        &s.th,
                        &domain.to_be_bytes(),
                        &epoch.to_be_bytes(),
                    ],
                    &mut k,
                );
                let key = UnboundKey::new(s.cipher.algorithm(), &k)
                    .expect("32-byte key fits both ciphers");
                self.keys.push((domain, epoch, LessSafeKey::new(key)));
                self.keys.len() - 1
            }
        };
        &self.keys[pos].2
    }
}

/// What every key is derived from.
struct Secrets {
    cipher: Cipher,
    prk: Prk,
    th: [u8; 32],
}

/// Sequence numbers extended with a count of wraps: `epochs · 2^31 + seq`, judged relative to
/// a reference (the highest sent, or the highest authenticated), as QUIC recovers packet
/// numbers. A connection's live numbers lie within 2^30 of the reference, so this is exact.
#[derive(Debug)]
struct SeqExt {
    highest: u64,
}

impl SeqExt {
    fn extend(&self, seq: SeqNo) -> u64 {
        let reference = SeqNo::from_masked(self.highest as u32);
        let off = i64::from(reference.offset_to(seq));
        self.highest.wrapping_add(off as u64)
    }

    fn advance(&mut self, ext: u64) {
        if (ext.wrapping_sub(self.highest) as i64) > 0 {
            self.highest = ext;
        }
    }
}

/// The cryptographic state of an established encrypted connection.
pub(crate) struct Session {
    secrets: Secrets,
    send: Direction,
    recv: Direction,
    send_seq: SeqExt,
    recv_seq: SeqExt,
    send_counter: u64,
    replay: ReplayWindow,
}

impl core::fmt::Debug for Session {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Session")
            .field("cipher", &self.secrets.cipher)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The session of one side. `prk`: the secret from the key exchange; `th`: the transcript
    /// hash; `client`: which end this is; `send_isn`/`recv_isn`: first sequence numbers.
    pub(super) fn new(
        cipher: Cipher,
        prk: Prk,
        th: [u8; 32],
        client: bool,
        send_isn: SeqNo,
        recv_isn: SeqNo,
    ) -> Session {
        let (out, inn): (&'static [u8], &'static [u8]) = if client {
            (b"c2s", b"s2c")
        } else {
            (b"s2c", b"c2s")
        };
        let send = Direction::new(out, &prk, &th);
        let recv = Direction::new(inn, &prk, &th);
        Session {
            secrets: Secrets { cipher, prk, th },
            send,
            recv,
            // The ISN itself extends to itself (epoch 0).
            send_seq: SeqExt {
                highest: u64::from(send_isn.get()),
            },
            recv_seq: SeqExt {
                highest: u64::from(recv_isn.get()),
            },
            send_counter: 0,
            replay: ReplayWindow::default(),
        }
    }

    /// The negotiated cipher.
    pub(crate) fn cipher(&self) -> Cipher {
        self.secrets.cipher
    }

    /// Seals the data packet in `pkt[..len]` (header and plaintext payload) in place and
    /// appends the tag; returns the new length, or `None` if `pkt` has no room for the tag.
    pub(crate) fn seal_data(&mut self, pkt: &mut [u8], len: usize) -> Option<usize> {
        if len < HEADER_LEN || pkt.len() < len + DATA_OVERHEAD {
            return None;
        }
        let seq = SeqNo::from_masked(u32::from_be_bytes(pkt[..4].try_into().ok()?));
        let ext = self.send_seq.extend(seq);
        self.send_seq.advance(ext);
        let aad = data_aad(pkt);
        let nonce = self.send.nonce(DOMAIN_DATA, ext);
        let key = self.send.key(&self.secrets, DOMAIN_DATA, ext);
        let tag = key
            .seal_in_place_separate_tag(nonce, Aad::from(aad), &mut pkt[HEADER_LEN..len])
            .ok()?;
        pkt[len..len + TAG_LEN].copy_from_slice(tag.as_ref());
        Some(len + DATA_OVERHEAD)
    }

    /// Opens the sealed data packet `pkt` in place; returns the length of header plus
    /// plaintext.
    pub(crate) fn open_data(&mut self, pkt: &mut [u8]) -> Result<usize, OpenError> {
        if pkt.len() <= HEADER_LEN + DATA_OVERHEAD {
            return Err(OpenError::Malformed);
        }
        let seq = SeqNo::from_masked(u32::from_be_bytes(
            pkt[..4].try_into().map_err(|_| OpenError::Malformed)?,
        ));
        let ext = self.recv_seq.extend(seq);
        let aad = data_aad(pkt);
        let nonce = self.recv.nonce(DOMAIN_DATA, ext);
        let key = self.recv.key(&self.secrets, DOMAIN_DATA, ext);
        let plain = key
            .open_in_place(nonce, Aad::from(aad), &mut pkt[HEADER_LEN..])
            .map_err(|_| OpenError::Forged)?
            .len();
        self.recv_seq.advance(ext);
        Ok(HEADER_LEN + plain)
    }

    /// Seals the control packet in `pkt[..len]` in place and appends tag and counter; returns
    /// the new length, or `None` if `pkt` has no room.
    pub(crate) fn seal_control(&mut self, pkt: &mut [u8], len: usize) -> Option<usize> {
        if len < HEADER_LEN || pkt.len() < len + CONTROL_OVERHEAD {
            return None;
        }
        let counter = self.send_counter;
        self.send_counter += 1;
        let header: [u8; HEADER_LEN] = pkt[..HEADER_LEN].try_into().ok()?;
        let nonce = self.send.nonce(DOMAIN_CONTROL, counter);
        let key = self.send.key(&self.secrets, DOMAIN_CONTROL, counter);
        let tag = key
            .seal_in_place_separate_tag(nonce, Aad::from(header), &mut pkt[HEADER_LEN..len])
            .ok()?;
        pkt[len..len + TAG_LEN].copy_from_slice(tag.as_ref());
        pkt[len + TAG_LEN..len + CONTROL_OVERHEAD].copy_from_slice(&counter.to_be_bytes());
        Some(len + CONTROL_OVERHEAD)
    }

    /// Opens the sealed control packet `pkt` in place; returns the length of header plus
    /// plaintext body.
    pub(crate) fn open_control(&mut self, pkt: &mut [u8]) -> Result<usize, OpenError> {
        if pkt.len() < HEADER_LEN + CONTROL_OVERHEAD {
            return Err(OpenError::Malformed);
        }
        let end = pkt.len() - 8;
        let counter = u64::from_be_bytes(pkt[end..].try_into().map_err(|_| OpenError::Malformed)?);
        if !self.replay.is_fresh(counter) {
            return Err(OpenError::Replayed);
        }
        let header: [u8; HEADER_LEN] = pkt[..HEADER_LEN]
            .try_into()
            .map_err(|_| OpenError::Malformed)?;
        let nonce = self.recv.nonce(DOMAIN_CONTROL, counter);
        let key = self.recv.key(&self.secrets, DOMAIN_CONTROL, counter);
        let plain = key
            .open_in_place(nonce, Aad::from(header), &mut pkt[HEADER_LEN..end])
            .map_err(|_| OpenError::Forged)?
            .len();
        self.replay.accept(counter);
        Ok(HEADER_LEN + plain)
    }
}

/// Associated data of a data packet: header words 0, 1 and 3 (not the timestamp).
fn data_aad(pkt: &[u8]) -> [u8; 12] {
    let mut a = [0u8; 12];
    a[..8].copy_from_slice(&pkt[..8]);
    a[8..].copy_from_slice(&pkt[12..16]);
    a
}

/// HKDF-Expand of `prk` with the concatenation of `info` into `out`.
pub(super) fn expand(prk: &Prk, info: &[&[u8]], out: &mut [u8]) {
    prk.expand(info, Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .expect("HKDF-SHA-256 output of at most 255 blocks");
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::hkdf::{Salt, HKDF_SHA256};

    fn pair(cipher: Cipher) -> (Session, Session) {
        let prk = || Salt::new(HKDF_SHA256, b"salt").extract(b"shared");
        let isn_c = SeqNo::new(SeqNo::MAX - 2).unwrap();
        let isn_s = SeqNo::new(77).unwrap();
        let c = Session::new(cipher, prk(), [1; 32], true, isn_c, isn_s);
        let s = Session::new(cipher, prk(), [1; 32], false, isn_s, isn_c);
        (c, s)
    }

    fn data_packet(seq: SeqNo, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; HEADER_LEN + payload.len() + DATA_OVERHEAD];
        p[..4].copy_from_slice(&seq.get().to_be_bytes());
        p[4..8].copy_from_slice(&0xC000_0001u32.to_be_bytes());
        p[8..12].copy_from_slice(&1234u32.to_be_bytes());
        p[12..16].copy_from_slice(&42u32.to_be_bytes());
        p[HEADER_LEN..HEADER_LEN + payload.len()].copy_from_slice(payload);
        p
    }

    #[test]
    fn data_round_trip_across_the_sequence_wrap_with_both_ciphers() {
        for cipher in [Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305] {
            let (mut c, mut s) = pair(cipher);
            let mut seq = SeqNo::new(SeqNo::MAX - 2).unwrap();
            for i in 0..8u8 {
                let mut p = data_packet(seq, &[i; 100]);
                let len = c.seal_data(&mut p, HEADER_LEN + 100).unwrap();
                assert_eq!(len, p.len());
                assert_ne!(&p[HEADER_LEN..HEADER_LEN + 100], &[i; 100][..]);
                // The timestamp is not authenticated: a retransmission changes it.
                p[8] ^= 0xFF;
                let n = s.open_data(&mut p).unwrap();
                assert_eq!(&p[HEADER_LEN..n], &[i; 100][..]);
                seq = seq.next();
            }
        }
    }

    #[test]
    fn data_bound_to_sequence_direction_and_content() {
        let (mut c, mut s) = pair(Cipher::Aes256Gcm);
        let seq = SeqNo::new(SeqNo::MAX - 2).unwrap();
        let mut p = data_packet(seq, b"hello");
        let len = c.seal_data(&mut p, HEADER_LEN + 5).unwrap();
        // Moved to another sequence number.
        let mut moved = p.clone();
        moved[3] ^= 1;
        assert_eq!(s.open_data(&mut moved), Err(OpenError::Forged));
        // Another message word, another destination, a flipped ciphertext bit.
        for at in [5, 13, HEADER_LEN + 1, len - 1] {
            let mut bad = p.clone();
            bad[at] ^= 0x10;
            assert_eq!(s.open_data(&mut bad), Err(OpenError::Forged), "byte {at}");
        }
        // Reflected back to its sender: the other direction's key.
        let mut reflected = p.clone();
        assert_eq!(c.open_data(&mut reflected), Err(OpenError::Forged));
        assert!(s.open_data(&mut p).is_ok());
    }

    #[test]
    fn a_ciphertext_from_before_a_wrap_does_not_open_after_it() {
        let (mut c, mut s) = pair(Cipher::ChaCha20Poly1305);
        let isn = SeqNo::new(SeqNo::MAX - 2).unwrap();
        let mut old = data_packet(isn, b"epoch0");
        c.seal_data(&mut old, HEADER_LEN + 6).unwrap();
        let mut first = old.clone();
        s.open_data(&mut first).unwrap();
        // Both ends move 2^31 packets on (the reference advances in steps below 2^30).
        let step = 1u32 << 29;
        let mut seq = isn;
        for _ in 0..4 {
            seq = seq.add(step);
            let mut p = data_packet(seq, b"x");
            c.seal_data(&mut p, HEADER_LEN + 1).unwrap();
            s.open_data(&mut p).unwrap();
        }
        assert_eq!(seq, isn);
        assert_eq!(s.open_data(&mut old), Err(OpenError::Forged));
    }

    #[test]
    fn control_round_trip_replay_and_forgery() {
        let (mut c, mut s) = pair(Cipher::Aes256Gcm);
        let mut p = vec![0u8; 16 + 8 + CONTROL_OVERHEAD];
        p[0] = 0x80;
        p[1] = 0x02;
        p[16..24].copy_from_slice(b"ackbody!");
        let len = c.seal_control(&mut p, 24).unwrap();
        assert_eq!(len, 24 + CONTROL_OVERHEAD);
        let sealed = p.clone();
        let mut bad = sealed.clone();
        bad[0] ^= 0x01; // another type
        assert_eq!(s.open_control(&mut bad), Err(OpenError::Forged));
        let n = s.open_control(&mut p).unwrap();
        assert_eq!(&p[16..n], b"ackbody!");
        let mut again = sealed.clone();
        assert_eq!(s.open_control(&mut again), Err(OpenError::Replayed));
        assert_eq!(s.open_control(&mut [0u8; 30]), Err(OpenError::Malformed));
    }
}
