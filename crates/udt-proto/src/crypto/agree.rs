//! The PSK-authenticated X25519 exchange (`docs/encryption.md` §3).
//!
//! ```text
//! client                                            listener
//!   request (48 B)                       ──────────▶
//!                                        ◀──────────  cookie reply, Offer in peer-address
//!   request + Hello{A, mac_c} (48+56 B)  ──────────▶  checks mac_c (PSK): else Reject(auth)
//!                                        ◀──────────  response + Accept{B, mac_s} (48+56 B)
//!   checks mac_s (session keys)
//! ```
//!
//! `mac_c = HMAC(hello_key, request ‖ Hello[..40])`, `hello_key` from the PSK alone, so a
//! listener spends no Diffie-Hellman on requests from peers without the secret.
//! `prk = HKDF-Extract(salt = PSK, X25519(a, B))` and the transcript hash
//! `th = SHA-256(label ‖ request ‖ Hello ‖ response ‖ Accept[..40])` feed every key;
//! `mac_s = HMAC(confirm_key(prk, th), th)` proves to the client that the listener holds the
//! PSK and computed the same keys.

use ring::digest;
use ring::hkdf::{Salt, HKDF_SHA256};
use ring::hmac;
use x25519_dalek::{PublicKey, StaticSecret};

use super::config::{Cipher, Encryption};
use super::ext::{RejectReason, Tail, TailBody, TAIL_LEN, TAIL_SIGNED_LEN};
use super::session::{expand, Session};
use crate::wire::{Handshake, HANDSHAKE_LEN};

/// The client's state between its hello and the listener's accept.
pub(crate) struct ClientHello {
    secret: StaticSecret,
    cipher: Cipher,
    /// The second-phase request exactly as sent (48 bytes).
    request: [u8; HANDSHAKE_LEN],
    /// The hello extension as sent.
    pub(crate) tail: [u8; TAIL_LEN],
}

impl core::fmt::Debug for ClientHello {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientHello")
            .field("cipher", &self.cipher)
            .finish_non_exhaustive()
    }
}

/// What the listener answers a valid hello with.
pub(crate) struct ServerAccept {
    /// The listener's session.
    pub(crate) session: Session,
    /// The accept extension to append to the response.
    pub(crate) tail: [u8; TAIL_LEN],
}

/// Why the client could not finish the exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FinishError {
    /// The response carried no accept extension.
    Missing,
    /// The accept did not verify (the listener does not hold our PSK, or it was altered).
    BadMac,
}

fn hello_key(enc: &Encryption) -> hmac::Key {
    let prk = Salt::new(HKDF_SHA256, b"udt-aead-v1 hello").extract(enc.psk.bytes());
    let mut k = [0u8; 32];
    expand(&prk, &[b"udt-aead-v1 hello mac"], &mut k);
    hmac::Key::new(hmac::HMAC_SHA256, &k)
}

fn hello_mac(enc: &Encryption, request: &[u8; HANDSHAKE_LEN], tail: &[u8]) -> [u8; 16] {
    let mut ctx = hmac::Context::with_key(&hello_key(enc));
    ctx.update(b"udt-aead-v1 hello");
    ctx.update(request);
    ctx.update(&tail[..TAIL_SIGNED_LEN]);
    truncate(ctx.sign().as_ref())
}

fn truncate(tag: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(&tag[..16]);
    out
}

/// Constant-time comparison of two MACs.
fn macs_equal(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn emit48(hs: &Handshake) -> [u8; HANDSHAKE_LEN] {
    let mut b = [0u8; HANDSHAKE_LEN];
    hs.emit(&mut b).expect("48-byte buffer");
    b
}

/// Transcript hash and session secret of one exchange.
fn schedule(
    enc: &Encryption,
    shared: &[u8; 32],
    request: &[u8; HANDSHAKE_LEN],
    hello: &[u8; TAIL_LEN],
    response: &[u8; HANDSHAKE_LEN],
    accept: &[u8],
) -> (ring::hkdf::Prk, [u8; 32], [u8; 16]) {
    let mut h = digest::Context::new(&digest::SHA256);
    h.update(b"udt-aead-v1 transcript");
    h.update(request);
    h.update(hello);
    h.update(response);
    h.update(&accept[..TAIL_SIGNED_LEN]);
    let mut th = [0u8; 32];
    th.copy_from_slice(h.finish().as_ref());
    let prk = Salt::new(HKDF_SHA256, enc.psk.bytes()).extract(shared);
    let mut confirm = [0u8; 32];
    expand(&prk, &[b"udt-aead-v1 confirm", &th], &mut confirm);
    let mac = truncate(hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &confirm), &th).as_ref());
    (prk, th, mac)
}

/// The client's hello for the second-phase `request` (cookie and request type already set).
/// `seed`: 32 fresh random bytes for the ephemeral key.
pub(crate) fn client_hello(enc: &Encryption, request: &Handshake, seed: [u8; 32]) -> ClientHello {
    let secret = StaticSecret::from(seed);
    let public = PublicKey::from(&secret);
    let req = emit48(request);
    let mut tail = Tail::Hello(TailBody {
        cipher: enc.cipher,
        public_key: public.to_bytes(),
        mac: [0; 16],
    })
    .encode();
    let mac = hello_mac(enc, &req, &tail);
    tail[TAIL_SIGNED_LEN..].copy_from_slice(&mac);
    ClientHello {
        secret,
        cipher: enc.cipher,
        request: req,
        tail,
    }
}

/// The listener's side: checks the hello that came with `request` (the raw appended bytes
/// `hello`), and builds its session and accept extension for `response`. `seed`: 32 fresh
/// random bytes for the ephemeral key.
pub(crate) fn server_accept(
    enc: &Encryption,
    request: &Handshake,
    hello: &[u8],
    response: &Handshake,
    seed: [u8; 32],
) -> Result<ServerAccept, RejectReason> {
    let body = match Tail::decode(hello) {
        Ok(Tail::Hello(b)) => b,
        _ => return Err(RejectReason::Unsupported),
    };
    let hello: [u8; TAIL_LEN] = hello.try_into().map_err(|_| RejectReason::Unsupported)?;
    let req = emit48(request);
    if !macs_equal(&hello_mac(enc, &req, &hello), &body.mac) {
        return Err(RejectReason::AuthenticationFailed);
    }
    let secret = StaticSecret::from(seed);
    let public = PublicKey::from(&secret);
    let shared = secret.diffie_hellman(&PublicKey::from(body.public_key));
    if !shared.was_contributory() {
        // A low-order point: the "shared" secret would be known to anyone.
        return Err(RejectReason::AuthenticationFailed);
    }
    let mut tail = Tail::Accept(TailBody {
        cipher: body.cipher,
        public_key: public.to_bytes(),
        mac: [0; 16],
    })
    .encode();
    let (prk, th, mac) = schedule(
        enc,
        shared.as_bytes(),
        &req,
        &hello,
        &emit48(response),
        &tail,
    );
    tail[TAIL_SIGNED_LEN..].copy_from_slice(&mac);
    // The listener adopts the client's ISN for both directions (spec §5.6).
    let session = Session::new(body.cipher, prk, th, false, request.isn, request.isn);
    Ok(ServerAccept { session, tail })
}

/// The client's side on the listener's `response` and its appended bytes `accept`.
pub(crate) fn client_finish(
    enc: &Encryption,
    hello: &ClientHello,
    response: &Handshake,
    accept: &[u8],
) -> Result<Session, FinishError> {
    let body = match Tail::decode(accept) {
        Ok(Tail::Accept(b)) if b.cipher == hello.cipher => b,
        _ => return Err(FinishError::Missing),
    };
    let shared = hello
        .secret
        .diffie_hellman(&PublicKey::from(body.public_key));
    if !shared.was_contributory() {
        return Err(FinishError::BadMac);
    }
    let (prk, th, mac) = schedule(
        enc,
        shared.as_bytes(),
        &hello.request,
        &hello.tail,
        &emit48(response),
        accept,
    );
    if !macs_equal(&mac, &body.mac) {
        return Err(FinishError::BadMac);
    }
    Ok(Session::new(
        hello.cipher,
        prk,
        th,
        true,
        response.isn,
        response.isn,
    ))
}
