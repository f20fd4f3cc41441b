//! The pre-shared key every connection's keys are derived from.

use argon2::{Algorithm, Argon2, Params, Version};
use zeroize::Zeroize;

use super::config::EncryptionError;

/// Argon2id salt. Fixed, so that both ends derive the same key from the passphrase alone; a
/// per-deployment salt would have to be shared like the secret. It still makes tables built
/// for other programs useless, and every guess costs one Argon2id run.
const ARGON2_SALT: &[u8] = b"udt-aead-v1 argon2id salt";
/// Argon2id memory, KiB (19 MiB: the OWASP minimum for Argon2id).
const ARGON2_M_KIB: u32 = 19 * 1024;
/// Argon2id passes.
const ARGON2_T: u32 = 2;
/// Argon2id lanes.
const ARGON2_P: u32 = 1;

/// 32 secret bytes, wiped when dropped.
pub(crate) struct Psk([u8; 32]);

impl Psk {
    pub(crate) fn from_passphrase(secret: &[u8]) -> Result<Psk, EncryptionError> {
        if secret.is_empty() {
            return Err(EncryptionError::EmptySecret);
        }
        let params = Params::new(ARGON2_M_KIB, ARGON2_T, ARGON2_P, Some(32))
            .map_err(|_| EncryptionError::Kdf("invalid Argon2 parameters"))?;
        let mut out = [0u8; 32];
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
            .hash_password_into(secret, ARGON2_SALT, &mut out)
            .map_err(|_| EncryptionError::Kdf("passphrase too long"))?;
        Ok(Psk(out))
    }

    pub(crate) fn from_key(key: [u8; 32]) -> Psk {
        Psk(key)
    }

    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl Drop for Psk {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}
