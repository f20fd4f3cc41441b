//! Optional authenticated encryption of a connection (`docs/encryption.md` is the
//! specification; this module implements it).
//!
//! * [`config`]: what the application chooses — a pre-shared secret, a mode
//!   ([`EncryptionMode::Preferred`] or [`EncryptionMode::Required`]) and a cipher;
//! * `psk`: the secret turned into a 32-byte key (Argon2id for passphrases);
//! * [`ext`]: the handshake extensions on the wire (offer, hello, accept, reject reason);
//! * `agree`: the PSK-authenticated X25519 exchange that gives each connection fresh keys;
//! * `session`: sealing and opening of data and control packets once connected, with
//!   nonces bound to the (extended) sequence number and a replay window for control packets.
//!
//! Everything here is sans-IO like the rest of the engine: the ephemeral X25519 secrets come
//! from the endpoint's generator, never from a global source.

mod agree;
pub mod config;
pub mod ext;
mod psk;
mod replay;
mod session;

pub use config::{Cipher, Encryption, EncryptionError, EncryptionMode};
pub use ext::RejectReason;

pub(crate) use agree::{client_finish, client_hello, server_accept, ClientHello, FinishError};
pub(crate) use session::{OpenError, Session};

/// Bytes a sealed data packet carries beyond its plaintext payload (the AEAD tag).
pub const DATA_OVERHEAD: usize = 16;
/// Bytes a sealed control packet carries beyond its plaintext (8-byte counter + 16-byte tag).
pub const CONTROL_OVERHEAD: usize = 24;
