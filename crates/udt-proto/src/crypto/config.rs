//! The application's choice: secret, mode and cipher.

use std::sync::Arc;

use thiserror::Error;

use super::psk::Psk;

/// Whether a connection must be encrypted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EncryptionMode {
    /// Encrypt when the peer supports it (same secret, our extension); connect in clear with a
    /// peer that does not (UDT4 4.11, an older udt, a listener without a secret). An active
    /// attacker can strip the offer and force clear text: use `Required` where that matters.
    Preferred,
    /// Encrypt or fail: a peer without the extension is refused (our listener rejects it; our
    /// client gives up with [`ConnectError::EncryptionUnavailable`](crate::ConnectError)).
    Required,
}

/// The AEAD that seals packets. Both use 256-bit keys and 16-byte tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Cipher {
    /// AES-256-GCM (fastest where the CPU has AES and carry-less multiply instructions).
    #[default]
    Aes256Gcm,
    /// ChaCha20-Poly1305 (fast everywhere in software).
    ChaCha20Poly1305,
}

impl Cipher {
    /// The code carried in the handshake extensions.
    pub const fn wire(self) -> u8 {
        match self {
            Cipher::Aes256Gcm => 1,
            Cipher::ChaCha20Poly1305 => 2,
        }
    }

    /// The cipher a handshake code names; `None` for an unknown code.
    pub const fn from_wire(code: u8) -> Option<Cipher> {
        match code {
            1 => Some(Cipher::Aes256Gcm),
            2 => Some(Cipher::ChaCha20Poly1305),
            _ => None,
        }
    }

    pub(crate) fn algorithm(self) -> &'static ring::aead::Algorithm {
        match self {
            Cipher::Aes256Gcm => &ring::aead::AES_256_GCM,
            Cipher::ChaCha20Poly1305 => &ring::aead::CHACHA20_POLY1305,
        }
    }
}

/// Why an encryption setting is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EncryptionError {
    /// The secret is empty.
    #[error("the encryption secret is empty")]
    EmptySecret,
    /// The passphrase could not be stretched (longer than Argon2 accepts, 2^32 − 1 bytes).
    #[error("the passphrase could not be stretched: {0}")]
    Kdf(&'static str),
}

/// Encryption settings of a connection: a pre-shared key, a mode and a cipher. Cheap to clone
/// (the key is shared); accepted connections inherit their listener's.
#[derive(Clone)]
pub struct Encryption {
    pub(crate) psk: Arc<Psk>,
    /// Preferred or required.
    pub mode: EncryptionMode,
    /// The cipher this side proposes when it connects (a listener accepts either).
    pub cipher: Cipher,
}

impl Encryption {
    /// Settings from a passphrase (any bytes a person may type), stretched with Argon2id
    /// (19 MiB, 2 passes: about 20–50 ms, once, here) so that guessing it from a captured
    /// handshake costs that much per guess.
    pub fn from_passphrase(secret: &[u8], mode: EncryptionMode) -> Result<Self, EncryptionError> {
        Ok(Encryption {
            psk: Arc::new(Psk::from_passphrase(secret)?),
            mode,
            cipher: Cipher::default(),
        })
    }

    /// Settings from a 32-byte key that is already uniformly random (generated, not typed):
    /// no stretching.
    pub fn from_key(key: [u8; 32], mode: EncryptionMode) -> Self {
        Encryption {
            psk: Arc::new(Psk::from_key(key)),
            mode,
            cipher: Cipher::default(),
        }
    }

    /// The same settings with another mode.
    #[must_use]
    pub fn with_mode(mut self, mode: EncryptionMode) -> Self {
        self.mode = mode;
        self
    }

    /// The same settings proposing another cipher.
    #[must_use]
    pub fn with_cipher(mut self, cipher: Cipher) -> Self {
        self.cipher = cipher;
        self
    }

    /// True in [`EncryptionMode::Required`].
    pub fn is_required(&self) -> bool {
        self.mode == EncryptionMode::Required
    }
}

impl core::fmt::Debug for Encryption {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the key.
        f.debug_struct("Encryption")
            .field("mode", &self.mode)
            .field("cipher", &self.cipher)
            .finish_non_exhaustive()
    }
}
