//! `udt send` / `udt recv`: verified, resumable file and tree transfer over UDT.
//!
//! The sender walks its paths (`scp -r` naming: `a/b/tree` arrives as `DIR/tree/...`) and
//! offers each directory and file to the receiver over one stream connection
//! ([`protocol`]). File data moves with `Socket::sendfile_blocks`/`recvfile_blocks`, a
//! pipeline of a few recycled block buffers, and is hashed (BLAKE3) on the fly on both sides,
//! on a thread of its own that overlaps with the transfer. The receiver writes
//! `.NAME.udt-part` and renames it to `NAME` only once the digests match; a later run finds
//! the partial file and, once the sender has checked the digest of that prefix against its
//! own file, continues from its end.

pub mod paths;
pub mod progress;
pub mod protocol;
pub mod recv;
pub mod send;

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

pub use recv::RecvArgs;
pub use send::SendArgs;

/// Most files (and directories) one session may carry: bounds a hostile sender's effect.
pub const MAX_ENTRIES: u64 = 10_000_000;

/// Environment variable holding the shared secret when `--secret` is not given.
pub const SECRET_ENV: &str = "UDT_SECRET";

/// Block size for hashing files on disk, bytes.
const HASH_BLOCK: usize = 1 << 20;

/// Closes `sock`, bounded by its linger. `Socket::close` returns once the final
/// acknowledgement and the shutdown packet have left, so the process may exit right after.
pub fn close_and_flush(sock: udt::Socket) {
    let _ = sock.close();
}

/// Warns on stderr when the kernel granted smaller UDP buffers than asked for: fast or long
/// paths then lose packets at the socket.
pub fn warn_buffers(b: udt::BufferSizes) {
    if b.capped() {
        eprintln!(
            "warning: the kernel capped the UDP buffers (receive {} of {} bytes, send {} of {}); \
             raise net.core.rmem_max / wmem_max (sysctl) for fast or long paths",
            b.recv_granted, b.recv_requested, b.send_granted, b.send_requested
        );
    }
}

/// Whether `e` comes from the connection breaking, closing or timing out (as opposed to a
/// refusal, a local file error or a protocol violation): then running the same command
/// again resumes.
pub fn is_connection_failure(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::NotConnected
                    | io::ErrorKind::TimedOut
                    | io::ErrorKind::UnexpectedEof
            )
        }) || c.downcast_ref::<udt::Error>().is_some_and(|u| {
            matches!(
                u,
                udt::Error::ConnectionLost | udt::Error::NotConnected | udt::Error::Timeout
            )
        })
    })
}

/// `--peer-timeout SECONDS` as the socket option (`None`: UDT's own rule).
pub fn peer_timeout(secs: Option<f64>) -> anyhow::Result<Option<std::time::Duration>> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && (0.1..=86_400.0).contains(&s) => {
            Ok(Some(std::time::Duration::from_secs_f64(s)))
        }
        Some(s) => anyhow::bail!("--peer-timeout must be between 0.1 and 86400 seconds, not {s}"),
    }
}

/// The secret from `--secret`, else from [`SECRET_ENV`]; an empty one counts as none.
pub fn secret(arg: Option<String>) -> Option<String> {
    arg.or_else(|| std::env::var(SECRET_ENV).ok())
        .filter(|s| !s.is_empty())
}

/// How `udt send`/`udt recv` use the transport's encryption when a secret is set.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncryptMode {
    /// Encrypt, and refuse peers that cannot (the default with a secret).
    Required,
    /// Encrypt when the peer can; an older udt or UDT4 peer connects in clear.
    Preferred,
    /// Never encrypt (the secret still authenticates the sender, in clear).
    Off,
}

/// Encryption options shared by `udt send` and `udt recv`.
#[derive(clap::Args, Debug, Clone)]
pub struct EncryptArgs {
    /// Transport encryption when a secret is set (AEAD keyed from the secret, see
    /// docs/encryption.md); without a secret nothing is encrypted.
    #[arg(long, value_enum, default_value = "required", value_name = "MODE")]
    pub encryption: EncryptMode,
    /// Same as `--encryption off`: send in clear even with a secret (for peers that run an
    /// older udt).
    #[arg(long, conflicts_with = "encryption")]
    pub no_encrypt: bool,
}

impl EncryptArgs {
    /// The transport encryption for `secret`: `None` without a secret or when turned off.
    /// Stretching the passphrase (Argon2id) takes a few tens of milliseconds.
    pub fn encryption(&self, secret: Option<&str>) -> anyhow::Result<Option<udt::Encryption>> {
        let mode = match (self.no_encrypt, self.encryption) {
            (true, _) | (_, EncryptMode::Off) => return Ok(None),
            (_, EncryptMode::Required) => udt::EncryptionMode::Required,
            (_, EncryptMode::Preferred) => udt::EncryptionMode::Preferred,
        };
        let Some(secret) = secret else {
            return Ok(None);
        };
        udt::Encryption::from_passphrase(secret.as_bytes(), mode)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("cannot use the secret for encryption: {e}"))
    }
}

/// BLAKE3 state after the first `len` bytes of `file` (read positionally, in bounded blocks).
/// A file shorter than `len` is an `UnexpectedEof` error.
pub fn hash_prefix(file: &File, len: u64) -> io::Result<blake3::Hasher> {
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; (len.min(HASH_BLOCK as u64)) as usize];
    let mut done = 0u64;
    while done < len {
        let want = (len - done).min(HASH_BLOCK as u64) as usize;
        let n = match file.read_at(&mut buf[..want], done) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shorter than expected",
                ))
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        done += n as u64;
    }
    Ok(h)
}

/// The sender's half of resume: the receiver holds `have` bytes whose digest is `prefix`.
/// Returns where to start sending and the hash state of the file up to there: `have` if
/// those bytes are exactly the start of our `size`-byte file, else 0 (start over).
pub fn resume_offset(
    file: &File,
    size: u64,
    have: u64,
    prefix: &protocol::Digest,
) -> io::Result<(u64, blake3::Hasher)> {
    if have == 0 || have > size {
        return Ok((0, blake3::Hasher::new()));
    }
    let h = hash_prefix(file, have)?;
    if protocol::same_digest(h.finalize().as_bytes(), prefix) {
        Ok((have, h))
    } else {
        Ok((0, blake3::Hasher::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut t = tempfile::NamedTempFile::new().unwrap();
        t.write_all(bytes).unwrap();
        let f = File::open(t.path()).unwrap();
        (t, f)
    }

    #[test]
    fn resume_continues_only_from_a_matching_prefix() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 253) as u8).collect();
        let (_t, ours) = file_with(&data);
        let size = data.len() as u64;

        // The receiver's partial: the first 1 234 567 bytes, intact.
        let (_p, part) = file_with(&data[..1_234_567]);
        let prefix = *hash_prefix(&part, 1_234_567).unwrap().finalize().as_bytes();
        let (off, mut h) = resume_offset(&ours, size, 1_234_567, &prefix).unwrap();
        assert_eq!(off, 1_234_567);
        // Continuing the returned state over the rest gives the digest of the whole file.
        h.update(&data[off as usize..]);
        assert_eq!(h.finalize(), blake3::hash(&data));

        // A partial with one corrupted byte: start over.
        let mut bad = data[..1_234_567].to_vec();
        bad[1000] ^= 1;
        let bad_prefix = *blake3::hash(&bad).as_bytes();
        assert_eq!(
            resume_offset(&ours, size, 1_234_567, &bad_prefix)
                .unwrap()
                .0,
            0
        );
        // A partial longer than our file (the source changed): start over.
        assert_eq!(resume_offset(&ours, size, size + 1, &prefix).unwrap().0, 0);
        // A complete partial: nothing left to send.
        let full = *blake3::hash(&data).as_bytes();
        assert_eq!(resume_offset(&ours, size, size, &full).unwrap().0, size);
    }

    #[test]
    fn connection_failures_are_told_from_other_errors() {
        let lost = anyhow::Error::new(io::Error::from(udt::Error::ConnectionLost))
            .context("connection failed");
        assert!(is_connection_failure(&lost));
        let eof = protocol::recv(&mut &[1u8, 0][..]).unwrap_err();
        assert!(is_connection_failure(&eof), "{eof:#}");
        let refused = anyhow::anyhow!("the receiver refused our shared secret");
        assert!(!is_connection_failure(&refused));
        let local = anyhow::Error::new(io::Error::from(io::ErrorKind::NotFound)).context("x");
        assert!(!is_connection_failure(&local));
    }

    #[test]
    fn hash_prefix_detects_a_short_file() {
        let (_t, f) = file_with(b"abc");
        assert_eq!(hash_prefix(&f, 3).unwrap().finalize(), blake3::hash(b"abc"));
        assert_eq!(
            hash_prefix(&f, 4).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(hash_prefix(&f, 0).unwrap().finalize(), blake3::hash(b""));
    }
}
