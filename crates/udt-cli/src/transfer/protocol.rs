//! The framing between `udt send` and `udt recv`, over one UDT stream connection.
//!
//! Every control message is a frame: a type byte, a 4-byte big-endian body length (at most
//! [`MAX_BODY`]) and the body. File contents are not framed: after `Start { offset }` the
//! sender writes exactly `size - offset` raw bytes (via `sendfile`), then `Digest`.
//!
//! ```text
//! receiver                                   sender
//!   Hello {version, nonce, auth_required} →
//!                                          ← Auth {mac = keyed BLAKE3(secret, nonce)}
//!   AuthResult {ok}                       →
//!                                          ← Begin {files, bytes}
//!                                          ← Dir {name}            (per directory)
//!   Ok | Refused {reason}                 →
//!                                          ← File {name, size}     (per file)
//!   Ready {have, prefix_hash}             →     (partial .name.udt-part of `have` bytes)
//!                                          ← Start {offset}         (have, or 0 to restart)
//!                                          ← raw bytes [offset, size)
//!                                          ← Digest {BLAKE3 of the whole file}
//!   Verified {ok}                         →
//!   | Exists {size, hash}                 →     (same-size file already there, no --force)
//!                                          ← Identical {yes}
//!   | Refused {reason}                    →
//!                                          ← End
//!   Bye {files, bytes}                    →
//! ```
//! The receiver may send `Abort {reason}` instead of any reply and close: a fatal error
//! (disk full, I/O error, protocol violation).

use std::io::{self, Read, Write};

use anyhow::{bail, Context};

/// Protocol version in `Hello`; a sender refuses any other.
pub const VERSION: u32 = 1;
/// Largest frame body accepted, bytes: bounds the memory a hostile peer can make us use.
pub const MAX_BODY: usize = 64 * 1024;
/// Context string of the key derivation for the shared secret (BLAKE3 `derive_key`).
const AUTH_CONTEXT: &str = "udt file transfer 2026-11 shared secret v1";

/// A 32-byte BLAKE3 digest.
pub type Digest = [u8; 32];

/// A control message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// Receiver → sender, first: protocol version, a fresh random nonce, and whether a
    /// secret is required.
    Hello {
        /// [`VERSION`] of the receiver.
        version: u32,
        /// Random challenge for the secret.
        nonce: [u8; 32],
        /// The receiver refuses senders that do not prove the secret.
        auth_required: bool,
    },
    /// Sender → receiver: the answer to the challenge (zeros without a secret).
    Auth {
        /// `keyed BLAKE3(derive_key(secret), nonce)`.
        mac: Digest,
    },
    /// Receiver → sender: whether the sender may go on.
    AuthResult {
        /// Accepted.
        ok: bool,
    },
    /// Sender → receiver: the size of the whole transfer (for progress only: not trusted).
    Begin {
        /// Files that follow.
        files: u64,
        /// Their total size, bytes.
        bytes: u64,
    },
    /// Sender → receiver: create a directory (relative, `/`-separated name).
    Dir {
        /// Name relative to the receive directory.
        name: String,
    },
    /// Sender → receiver: a file of `size` bytes follows once the receiver is ready.
    File {
        /// Name relative to the receive directory.
        name: String,
        /// Size, bytes.
        size: u64,
    },
    /// Receiver → sender: the request succeeded (directories).
    Ok,
    /// Receiver → sender: the request is refused; the session goes on with the next item.
    Refused {
        /// Why, for the user.
        reason: String,
    },
    /// Receiver → sender: ready to receive; it already holds `have` bytes of the file whose
    /// BLAKE3 is `prefix_hash`.
    Ready {
        /// Bytes in the partial file.
        have: u64,
        /// BLAKE3 of those bytes.
        prefix_hash: Digest,
    },
    /// Receiver → sender: a file of this name and size is already complete here; is it the
    /// same?
    Exists {
        /// Its size, bytes.
        size: u64,
        /// Its BLAKE3.
        hash: Digest,
    },
    /// Sender → receiver: answer to `Exists`.
    Identical {
        /// The sender's file has the same digest.
        yes: bool,
    },
    /// Sender → receiver: raw data from this offset to the end of the file follows.
    Start {
        /// Either `have` of `Ready` (resume) or 0 (restart).
        offset: u64,
    },
    /// Sender → receiver: BLAKE3 of the whole file as the sender read it.
    Digest {
        /// The digest.
        hash: Digest,
    },
    /// Receiver → sender: whether its digest of the file matched.
    Verified {
        /// Matched; the file is in place.
        ok: bool,
    },
    /// Sender → receiver: no more items.
    End,
    /// Receiver → sender: session summary.
    Bye {
        /// Files received complete in this session.
        files: u64,
        /// Bytes received in this session.
        bytes: u64,
    },
    /// Receiver → sender: fatal error; the receiver closes the connection.
    Abort {
        /// Why, for the user.
        reason: String,
    },
}

impl Msg {
    fn tag(&self) -> u8 {
        match self {
            Msg::Hello { .. } => 1,
            Msg::Auth { .. } => 2,
            Msg::AuthResult { .. } => 3,
            Msg::Begin { .. } => 4,
            Msg::Dir { .. } => 5,
            Msg::File { .. } => 6,
            Msg::Ok => 7,
            Msg::Refused { .. } => 8,
            Msg::Ready { .. } => 9,
            Msg::Exists { .. } => 10,
            Msg::Identical { .. } => 11,
            Msg::Start { .. } => 12,
            Msg::Digest { .. } => 13,
            Msg::Verified { .. } => 14,
            Msg::End => 15,
            Msg::Bye { .. } => 16,
            Msg::Abort { .. } => 17,
        }
    }

    /// The frame: tag, body length, body.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            Msg::Hello {
                version,
                nonce,
                auth_required,
            } => {
                b.extend_from_slice(&version.to_be_bytes());
                b.extend_from_slice(nonce);
                b.push(u8::from(*auth_required));
            }
            Msg::Auth { mac } => b.extend_from_slice(mac),
            Msg::AuthResult { ok } | Msg::Identical { yes: ok } | Msg::Verified { ok } => {
                b.push(u8::from(*ok))
            }
            Msg::Begin { files, bytes } | Msg::Bye { files, bytes } => {
                b.extend_from_slice(&files.to_be_bytes());
                b.extend_from_slice(&bytes.to_be_bytes());
            }
            Msg::Dir { name } => put_str(&mut b, name),
            Msg::File { name, size } => {
                b.extend_from_slice(&size.to_be_bytes());
                put_str(&mut b, name);
            }
            Msg::Ok | Msg::End => {}
            Msg::Refused { reason } | Msg::Abort { reason } => put_str(&mut b, reason),
            Msg::Ready { have, prefix_hash } => {
                b.extend_from_slice(&have.to_be_bytes());
                b.extend_from_slice(prefix_hash);
            }
            Msg::Exists { size, hash } => {
                b.extend_from_slice(&size.to_be_bytes());
                b.extend_from_slice(hash);
            }
            Msg::Start { offset } => b.extend_from_slice(&offset.to_be_bytes()),
            Msg::Digest { hash } => b.extend_from_slice(hash),
        }
        // Strings are cut to fit at the sender (`put_str`), so a body never exceeds MAX_BODY.
        let mut frame = Vec::with_capacity(5 + b.len());
        frame.push(self.tag());
        frame.extend_from_slice(&(b.len() as u32).to_be_bytes());
        frame.extend_from_slice(&b);
        frame
    }

    /// Parses one frame's body.
    pub fn decode(tag: u8, body: &[u8]) -> anyhow::Result<Msg> {
        let mut r = Body { b: body };
        let m = match tag {
            1 => Msg::Hello {
                version: r.u32()?,
                nonce: r.digest()?,
                auth_required: r.bool()?,
            },
            2 => Msg::Auth { mac: r.digest()? },
            3 => Msg::AuthResult { ok: r.bool()? },
            4 => Msg::Begin {
                files: r.u64()?,
                bytes: r.u64()?,
            },
            5 => Msg::Dir { name: r.string()? },
            6 => Msg::File {
                size: r.u64()?,
                name: r.string()?,
            },
            7 => Msg::Ok,
            8 => Msg::Refused {
                reason: printable(r.string()?),
            },
            9 => Msg::Ready {
                have: r.u64()?,
                prefix_hash: r.digest()?,
            },
            10 => Msg::Exists {
                size: r.u64()?,
                hash: r.digest()?,
            },
            11 => Msg::Identical { yes: r.bool()? },
            12 => Msg::Start { offset: r.u64()? },
            13 => Msg::Digest { hash: r.digest()? },
            14 => Msg::Verified { ok: r.bool()? },
            15 => Msg::End,
            16 => Msg::Bye {
                files: r.u64()?,
                bytes: r.u64()?,
            },
            17 => Msg::Abort {
                reason: printable(r.string()?),
            },
            t => bail!("protocol error: unknown message type {t}"),
        };
        if !r.b.is_empty() {
            bail!("protocol error: {} trailing bytes in message", r.b.len());
        }
        Ok(m)
    }
}

/// A peer's free text with control characters replaced, so that printing it cannot drive
/// the user's terminal (escape sequences).
fn printable(s: String) -> String {
    if s.chars().any(char::is_control) {
        s.chars()
            .map(|c| if c.is_control() { '\u{fffd}' } else { c })
            .collect()
    } else {
        s
    }
}

/// Appends a string as a 4-byte length and UTF-8 bytes, cut (on a character boundary) so
/// the frame stays within [`MAX_BODY`].
fn put_str(b: &mut Vec<u8>, s: &str) {
    let mut end = s.len().min(MAX_BODY - 64);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    b.extend_from_slice(&(end as u32).to_be_bytes());
    b.extend_from_slice(&s.as_bytes()[..end]);
}

/// A cursor over a frame body; every read checks the remaining length.
struct Body<'a> {
    b: &'a [u8],
}

impl Body<'_> {
    fn take(&mut self, n: usize) -> anyhow::Result<&[u8]> {
        if self.b.len() < n {
            bail!("protocol error: message shorter than its fields");
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn u32(&mut self) -> anyhow::Result<u32> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_be_bytes(a))
    }
    fn u64(&mut self) -> anyhow::Result<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(a))
    }
    fn bool(&mut self) -> anyhow::Result<bool> {
        match self.take(1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            v => bail!("protocol error: boolean field is {v}"),
        }
    }
    fn digest(&mut self) -> anyhow::Result<Digest> {
        let mut a = [0u8; 32];
        a.copy_from_slice(self.take(32)?);
        Ok(a)
    }
    fn string(&mut self) -> anyhow::Result<String> {
        let n = self.u32()? as usize;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).context("protocol error: name is not valid UTF-8")
    }
}

/// Writes one message.
pub fn send(w: &mut impl Write, m: &Msg) -> io::Result<()> {
    w.write_all(&m.encode())
}

/// Reads one message; a frame longer than [`MAX_BODY`] is an error before anything is
/// allocated for it. A stream that ends cleanly before a frame starts is reported as such.
pub fn recv(r: &mut impl Read) -> anyhow::Result<Msg> {
    let mut head = [0u8; 5];
    r.read_exact(&mut head).map_err(|e| {
        let what = if e.kind() == io::ErrorKind::UnexpectedEof {
            "the peer closed the connection"
        } else {
            "connection failed"
        };
        anyhow::Error::new(e).context(what)
    })?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_BODY {
        bail!("protocol error: message of {len} bytes (limit {MAX_BODY})");
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)
        .context("connection failed inside a message")?;
    Msg::decode(head[0], &body)
}

/// Reads one message and fails on `Abort`, reporting the receiver's reason.
pub fn recv_reply(r: &mut impl Read) -> anyhow::Result<Msg> {
    match recv(r)? {
        Msg::Abort { reason } => bail!("the receiver aborted the transfer: {reason}"),
        m => Ok(m),
    }
}

/// The answer to a challenge: keyed BLAKE3 of the nonce under a key derived from the secret.
/// The secret itself never crosses the network.
pub fn auth_mac(secret: &[u8], nonce: &[u8; 32]) -> Digest {
    let key = blake3::derive_key(AUTH_CONTEXT, secret);
    *blake3::keyed_hash(&key, nonce).as_bytes()
}

/// Whether `mac` answers `nonce` for `secret`, compared in constant time (`blake3::Hash`'s
/// equality), so timing reveals nothing about the expected answer.
pub fn auth_ok(secret: &[u8], nonce: &[u8; 32], mac: &Digest) -> bool {
    blake3::Hash::from_bytes(auth_mac(secret, nonce)) == blake3::Hash::from_bytes(*mac)
}

/// Whether two digests are equal (constant time).
pub fn same_digest(a: &Digest, b: &Digest) -> bool {
    blake3::Hash::from_bytes(*a) == blake3::Hash::from_bytes(*b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Msg> {
        vec![
            Msg::Hello {
                version: VERSION,
                nonce: [7; 32],
                auth_required: true,
            },
            Msg::Auth { mac: [1; 32] },
            Msg::AuthResult { ok: false },
            Msg::Begin {
                files: 3,
                bytes: 1 << 40,
            },
            Msg::Dir { name: "a/b".into() },
            Msg::File {
                name: "a/b/ç".into(),
                size: u64::MAX,
            },
            Msg::Ok,
            Msg::Refused {
                reason: "no".into(),
            },
            Msg::Ready {
                have: 12,
                prefix_hash: [9; 32],
            },
            Msg::Exists {
                size: 5,
                hash: [3; 32],
            },
            Msg::Identical { yes: true },
            Msg::Start { offset: 99 },
            Msg::Digest { hash: [4; 32] },
            Msg::Verified { ok: true },
            Msg::End,
            Msg::Bye { files: 1, bytes: 2 },
            Msg::Abort {
                reason: "disk full".into(),
            },
        ]
    }

    #[test]
    fn every_message_round_trips() {
        let mut wire = Vec::new();
        for m in all() {
            send(&mut wire, &m).unwrap();
        }
        let mut r = &wire[..];
        for m in all() {
            assert_eq!(recv(&mut r).unwrap(), m);
        }
        assert!(r.is_empty());
    }

    #[test]
    fn hostile_frames_are_errors_not_panics() {
        // Huge declared length: refused before allocating.
        let mut r: &[u8] = &[6, 0xff, 0xff, 0xff, 0xff];
        assert!(recv(&mut r).unwrap_err().to_string().contains("limit"));
        // Unknown type, truncated fields, trailing bytes, bad booleans, bad UTF-8.
        assert!(Msg::decode(200, &[]).is_err());
        assert!(Msg::decode(6, &[0; 9]).is_err());
        assert!(Msg::decode(7, &[0]).is_err());
        assert!(Msg::decode(3, &[2]).is_err());
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&2u32.to_be_bytes());
        b.extend_from_slice(&[0xff, 0xfe]);
        assert!(Msg::decode(6, &b).is_err());
        // A string length past the body.
        assert!(Msg::decode(5, &u32::MAX.to_be_bytes()).is_err());
        // A stream cut inside a frame.
        let frame = Msg::Start { offset: 1 }.encode();
        let mut r = &frame[..frame.len() - 1];
        assert!(recv(&mut r).is_err());
        // Every truncation and every single-byte corruption of every frame: never a panic.
        for m in all() {
            let f = m.encode();
            for cut in 0..f.len() {
                let _ = recv(&mut &f[..cut]);
            }
            for i in 0..f.len() {
                let mut g = f.clone();
                g[i] ^= 0xA5;
                let _ = recv(&mut &g[..]);
            }
        }
    }

    #[test]
    fn long_strings_are_cut_to_fit_a_frame() {
        let m = Msg::Refused {
            reason: "é".repeat(MAX_BODY),
        };
        let f = m.encode();
        assert!(f.len() <= 5 + MAX_BODY);
        match recv(&mut &f[..]).unwrap() {
            Msg::Refused { reason } => assert!(reason.len() < MAX_BODY && !reason.is_empty()),
            other => panic!("decoded {other:?}"),
        }
    }

    #[test]
    fn the_secret_is_checked_and_never_sent() {
        let nonce = [42u8; 32];
        let mac = auth_mac(b"correct horse", &nonce);
        assert!(auth_ok(b"correct horse", &nonce, &mac));
        assert!(!auth_ok(b"correct horsf", &nonce, &mac));
        assert!(!auth_ok(b"correct horse", &[43u8; 32], &mac));
        let frame = Msg::Auth { mac }.encode();
        assert!(!frame.windows(13).any(|w| w == b"correct horse"));
    }

    #[test]
    fn reasons_from_the_peer_cannot_carry_terminal_escapes() {
        let f = Msg::Refused {
            reason: "no\x1b[2Jway\n".into(),
        }
        .encode();
        assert_eq!(
            recv(&mut &f[..]).unwrap(),
            Msg::Refused {
                reason: "no\u{fffd}[2Jway\u{fffd}".into()
            }
        );
    }

    #[test]
    fn recv_reply_turns_abort_into_an_error() {
        let f = Msg::Abort {
            reason: "No space left on device".into(),
        }
        .encode();
        let e = recv_reply(&mut &f[..]).unwrap_err();
        assert!(e.to_string().contains("No space left"));
    }
}
