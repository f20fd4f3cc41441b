//! The connection's side of encryption: sealing what it sends and opening what arrives once
//! the handshake has given it a [`Session`](crate::crypto::Session). The handshake itself is in
//! `handshake.rs`, the cryptography in [`crate::crypto`].

use super::{Connection, Outgoing};
use crate::crypto::{Cipher, OpenError, DATA_OVERHEAD};
use crate::wire::layout::{read_u32, CONTROL_FLAG, CONTROL_TYPE_MASK, CONTROL_TYPE_SHIFT};
use crate::wire::{control::kind, HEADER_LEN};

/// What [`Connection::open_datagram`] made of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opened {
    /// Not sealed (no encryption, or a handshake): parse the datagram as it is.
    Clear,
    /// Opened into the scratch buffer: parse its first `n` bytes.
    Plain(usize),
    /// Did not authenticate, or replayed: dropped and counted.
    Dropped,
}

impl Connection {
    /// True once the connection runs encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.crypto.is_some()
    }

    /// The cipher of an encrypted connection.
    pub fn cipher(&self) -> Option<Cipher> {
        self.crypto.as_ref().map(|s| s.cipher())
    }

    /// Bytes of each data packet the encryption takes from the payload.
    pub(super) fn crypto_overhead(&self) -> usize {
        if self.crypto.is_some() {
            DATA_OVERHEAD
        } else {
            0
        }
    }

    /// Seals the control packet `o` just written to `buf[..n]`; handshakes travel in clear
    /// (they carry their own MACs). `None` if it does not fit.
    pub(super) fn seal_control(&mut self, o: &Outgoing, buf: &mut [u8], n: usize) -> Option<usize> {
        match (&mut self.crypto, o) {
            (None, _) | (_, Outgoing::Handshake(..) | Outgoing::HandshakeTail(..)) => Some(n),
            (Some(s), _) => s.seal_control(buf, n),
        }
    }

    /// Seals the data packet just written to `buf[..len]`.
    pub(super) fn seal_data(&mut self, buf: &mut [u8], len: usize) -> Option<usize> {
        match &mut self.crypto {
            None => Some(len),
            Some(s) => s.seal_data(buf, len),
        }
    }

    /// Opens a datagram addressed to this connection into `scratch`. Handshakes pass in clear
    /// (an established connection only answers a rendezvous peer's, and rendezvous
    /// connections are never encrypted).
    pub(crate) fn open_datagram(&mut self, datagram: &[u8], scratch: &mut Vec<u8>) -> Opened {
        let Some(s) = self.crypto.as_mut() else {
            return Opened::Clear;
        };
        if datagram.len() < HEADER_LEN {
            return Opened::Clear; // the parser counts it as malformed
        }
        let w0 = read_u32(datagram, 0);
        let control = w0 & CONTROL_FLAG != 0;
        if control && ((w0 >> CONTROL_TYPE_SHIFT) & CONTROL_TYPE_MASK) as u16 == kind::HANDSHAKE {
            return Opened::Clear;
        }
        scratch.clear();
        scratch.extend_from_slice(datagram);
        let r = if control {
            s.open_control(scratch)
        } else {
            s.open_data(scratch)
        };
        match r {
            Ok(n) => Opened::Plain(n),
            Err(OpenError::Replayed) => {
                self.stats.count(|c| c.pkt_replayed += 1);
                Opened::Dropped
            }
            Err(OpenError::Forged | OpenError::Malformed) => {
                self.stats.count(|c| c.pkt_auth_failed += 1);
                Opened::Dropped
            }
        }
    }
}
