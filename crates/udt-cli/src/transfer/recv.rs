//! `udt recv`: accept senders and write what they send under one directory, verified.

use std::collections::HashSet;
use std::fs::File;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Args;
use udt::{Builder, Socket};

use super::paths::{self, Dir, Entry};
use super::progress::{human_bytes, Progress, Style, Summary};
use super::protocol::{self, Msg};

/// How long a new connection may take to authenticate; bounds how long a silent peer can
/// hold one of the receiver's session slots (or a `--once` receiver).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(20);

/// How long an authenticated sender may stay silent (between messages or inside a file's
/// data) before the receiver gives up on it: generous, since the sender may be hashing a
/// large file to check a partial one; bounded, since a stalled sender holds a session slot.
const IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Arguments of `udt recv`.
#[derive(Args, Debug)]
pub struct RecvArgs {
    /// UDP port to listen on.
    #[arg(long, default_value_t = 9100)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "0.0.0.0")]
    bind: String,
    /// Directory to receive into (created if missing); nothing is written outside it.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Exit after one sender's transfer (exit status: that transfer's success).
    #[arg(long)]
    once: bool,
    /// Overwrite existing files (by default an existing file is never replaced).
    #[arg(long)]
    force: bool,
    /// Shared secret senders must prove (default: the UDT_SECRET environment variable).
    /// With a secret transfers are encrypted (see --encryption).
    #[arg(long)]
    secret: Option<String>,
    #[command(flatten)]
    encrypt: super::EncryptArgs,
    /// Print one JSON summary per transfer instead of text and progress.
    #[arg(long)]
    json: bool,
    /// End a transfer once nothing has been heard from its sender for this many seconds
    /// (default: UDT's own rule, about 46 s of silence).
    #[arg(long, value_name = "SECONDS")]
    peer_timeout: Option<f64>,
}

/// Most transfers served at the same time (without `--once`); further senders are turned
/// away until one ends, so a crowd of connections cannot exhaust threads or descriptors.
const MAX_SESSIONS: usize = 16;

/// Options and state shared by the sessions of one receiver.
struct Opts {
    secret: Option<String>,
    force: bool,
    style: Style,
    json: bool,
    /// Names (relative, validated) being received right now: two senders never write the
    /// same partial file at once.
    busy: Mutex<HashSet<String>>,
}

/// A name reserved in [`Opts::busy`] until dropped.
struct Claim<'a> {
    busy: &'a Mutex<HashSet<String>>,
    name: String,
}

impl<'a> Claim<'a> {
    fn take(busy: &'a Mutex<HashSet<String>>, name: &str) -> Option<Claim<'a>> {
        let mut set = busy.lock().unwrap_or_else(|p| p.into_inner());
        set.insert(name.to_owned()).then(|| Claim {
            busy,
            name: name.to_owned(),
        })
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut set = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        set.remove(&self.name);
    }
}

/// Runs `udt recv`.
pub fn run(args: RecvArgs) -> anyhow::Result<()> {
    let root = Dir::open_root(&args.dir, true)
        .with_context(|| format!("cannot open the receive directory {}", args.dir.display()))?;
    let mut style = Style::detect(args.json);
    if style == Style::Bar && !args.once {
        // Concurrent sessions would fight over one bar; their lines name their files.
        style = Style::Lines;
    }
    let secret = super::secret(args.secret);
    let encryption = args.encrypt.encryption(secret.as_deref())?;
    let encryption_note = match &encryption {
        Some(e) if e.is_required() => ", encrypted",
        Some(_) => ", encrypted when the sender can",
        None => "",
    };
    let opts = Opts {
        secret,
        force: args.force,
        style,
        json: args.json,
        busy: Mutex::new(HashSet::new()),
    };
    // Closing waits at most this long for our last replies to be acknowledged.
    let listener = Builder::new()
        .linger(Some(Duration::from_secs(5)))
        .encryption(encryption)
        .peer_idle_timeout(super::peer_timeout(args.peer_timeout)?)
        .listen((args.bind.as_str(), args.port), 16)
        .with_context(|| format!("cannot listen on {}:{}", args.bind, args.port))?;
    super::warn_buffers(listener.udp_buffers());
    if !args.json {
        eprintln!(
            "udt recv: listening on {} into {}{}",
            listener.local_addr(),
            args.dir.display(),
            if opts.secret.is_some() {
                format!(" (secret required{encryption_note})")
            } else {
                String::new()
            }
        );
    }
    if args.once {
        // One transfer, in this thread. A peer refused at the handshake does not count.
        loop {
            let (sock, peer) = listener.accept().context("accept failed")?;
            if let Served::Transfer(r) = serve(sock, peer, &root, &opts) {
                return r;
            }
        }
    }
    let active = AtomicUsize::new(0);
    std::thread::scope(|scope| loop {
        let (sock, peer) = listener.accept().context("accept failed")?;
        if active.load(Ordering::Acquire) >= MAX_SESSIONS {
            eprintln!("udt recv: {MAX_SESSIONS} transfers already running; refusing {peer}");
            let mut sock = sock;
            let _ = protocol::send(
                &mut sock,
                &Msg::Abort {
                    reason: format!("the receiver is busy ({MAX_SESSIONS} transfers running)"),
                },
            );
            let _ = sock.close();
            continue;
        }
        active.fetch_add(1, Ordering::AcqRel);
        let (root, opts, active) = (&root, &opts, &active);
        scope.spawn(move || {
            serve(sock, peer, root, opts);
            active.fetch_sub(1, Ordering::AcqRel);
        });
    })
}

/// What became of one accepted connection.
enum Served {
    /// Refused at the handshake (wrong secret, not a `udt send`): not a transfer.
    Refused,
    /// A transfer took place; its outcome.
    Transfer(anyhow::Result<()>),
}

/// Serves one connection: handshake, transfer, summary.
fn serve(mut sock: Socket, peer: SocketAddr, root: &Dir, opts: &Opts) -> Served {
    let start = Instant::now();
    let mut summary = Summary {
        role: "recv",
        peer: peer.to_string(),
        ..Default::default()
    };
    if let Err(e) = handshake(&mut sock, peer, opts) {
        let _ = sock.close();
        eprintln!("udt recv: connection from {peer} refused: {e:#}");
        return Served::Refused;
    }
    let r = session(&mut sock, root, opts, &mut summary);
    summary.finish(start, sock.stats(false).ok());
    super::close_and_flush(sock);
    let r = r.and_then(|()| {
        if summary.files_failed > 0 {
            Err(anyhow!("{} file(s) failed", summary.files_failed))
        } else {
            Ok(())
        }
    });
    match &r {
        Ok(()) => summary.print(opts.json),
        Err(e) => {
            if summary.files_ok + summary.files_failed + summary.dirs > 0 {
                summary.print(opts.json);
            }
            let hint = if super::is_connection_failure(e) {
                " (partial files are kept: the same send resumes them)"
            } else {
                ""
            };
            eprintln!("udt recv: transfer from {peer} failed: {e:#}{hint}");
        }
    }
    Served::Transfer(r)
}

/// Sends `Abort` (best effort) and returns the reason as an error.
fn abort(sock: &mut Socket, reason: String) -> anyhow::Error {
    let _ = protocol::send(
        sock,
        &Msg::Abort {
            reason: reason.clone(),
        },
    );
    anyhow!(reason)
}

/// Refuses one item: the sender is told why, the session goes on.
fn refuse(sock: &mut Socket, summary: &mut Summary, reason: String) -> anyhow::Result<()> {
    summary.files_failed += 1;
    summary.errors.push(reason.clone());
    protocol::send(sock, &Msg::Refused { reason }).context("connection failed")?;
    Ok(())
}

/// Greets the sender and checks its answer to the secret's challenge.
fn handshake(sock: &mut Socket, peer: SocketAddr, opts: &Opts) -> anyhow::Result<()> {
    let mut nonce = [0u8; 32];
    getrandom::fill(&mut nonce).map_err(|e| anyhow!("no random numbers: {e}"))?;
    sock.set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .context("cannot set the handshake timeout")?;
    protocol::send(
        sock,
        &Msg::Hello {
            version: protocol::VERSION,
            nonce,
            auth_required: opts.secret.is_some(),
        },
    )
    .context("connection failed")?;
    let mac = match protocol::recv(sock)? {
        Msg::Auth { mac } => mac,
        m => {
            return Err(abort(
                sock,
                format!("protocol error: expected Auth, got {m:?}"),
            ))
        }
    };
    let ok = opts
        .secret
        .as_ref()
        .is_none_or(|s| protocol::auth_ok(s.as_bytes(), &nonce, &mac));
    protocol::send(sock, &Msg::AuthResult { ok }).context("connection failed")?;
    if !ok {
        bail!("{peer} did not prove the shared secret; refused");
    }
    sock.set_read_timeout(Some(IDLE_TIMEOUT))
        .context("cannot set the idle timeout")?;
    Ok(())
}

/// Receives the items of one authenticated sender.
fn session(
    sock: &mut Socket,
    root: &Dir,
    opts: &Opts,
    summary: &mut Summary,
) -> anyhow::Result<()> {
    let (files, bytes) = match protocol::recv(sock)? {
        Msg::Begin { files, bytes } => (files, bytes),
        m => {
            return Err(abort(
                sock,
                format!("protocol error: expected Begin, got {m:?}"),
            ))
        }
    };
    if files > super::MAX_ENTRIES {
        return Err(abort(
            sock,
            format!("too many files ({files}; limit {})", super::MAX_ENTRIES),
        ));
    }
    let mut progress = Progress::new(opts.style, bytes);
    let mut entries = 0u64;
    loop {
        let m = protocol::recv(sock)?;
        if matches!(m, Msg::Dir { .. } | Msg::File { .. }) {
            entries += 1;
            if entries > super::MAX_ENTRIES {
                return Err(abort(
                    sock,
                    format!("too many files (limit {})", super::MAX_ENTRIES),
                ));
            }
        }
        match m {
            Msg::Dir { name } => match make_dir(root, &name) {
                Ok(()) => {
                    summary.dirs += 1;
                    protocol::send(sock, &Msg::Ok).context("connection failed")?;
                }
                Err(reason) => refuse(sock, summary, reason)?,
            },
            Msg::File { name, size } => {
                receive_file(sock, root, &name, size, opts, summary, &mut progress)?
            }
            Msg::End => {
                progress.finish();
                protocol::send(
                    sock,
                    &Msg::Bye {
                        files: summary.files_ok,
                        bytes: summary.bytes,
                    },
                )
                .context("connection failed")?;
                return Ok(());
            }
            m => return Err(abort(sock, format!("protocol error: unexpected {m:?}"))),
        }
    }
}

/// Creates directory `name` (validated) under the root.
fn make_dir(root: &Dir, name: &str) -> Result<(), String> {
    let comps = paths::validate_name(name).map_err(|e| format!("{name:?}: refused name ({e})"))?;
    root.walk(&comps, true)
        .map(|_| ())
        .map_err(|e| format!("{name}: cannot create directory: {e}"))
}

/// How a received file ended, once its data and the sender's digest are in.
#[derive(Debug, PartialEq, Eq)]
pub enum Finish {
    /// Verified and renamed into place.
    Done,
    /// The digests differ: the partial file was removed.
    Mismatch,
}

/// Completes a received file: compares our digest with the sender's and, if equal, flushes
/// the partial file `part` to disk and renames it to `leaf` (replacing an existing file only
/// if `force`). On a mismatch the partial file is removed, never kept as if complete.
pub fn finish_part(
    dir: &Dir,
    part: &File,
    part_name: &str,
    leaf: &str,
    ours: &protocol::Digest,
    theirs: &protocol::Digest,
    force: bool,
) -> std::io::Result<Finish> {
    if !protocol::same_digest(ours, theirs) {
        dir.unlink(part_name)?;
        return Ok(Finish::Mismatch);
    }
    part.sync_data()?;
    dir.rename(part_name, leaf, force)?;
    Ok(Finish::Done)
}

fn receive_file(
    sock: &mut Socket,
    root: &Dir,
    name: &str,
    size: u64,
    opts: &Opts,
    summary: &mut Summary,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    progress.set_file(name);
    let comps = match paths::validate_name(name) {
        Ok(c) => c,
        Err(e) => return refuse(sock, summary, format!("{name:?}: refused name ({e})")),
    };
    let Some((leaf, parents)) = comps.split_last() else {
        return refuse(sock, summary, format!("{name:?}: refused name (empty)"));
    };
    let Some(_claim) = Claim::take(&opts.busy, name) else {
        return refuse(
            sock,
            summary,
            format!("{name}: being received from another sender right now"),
        );
    };
    let dir = match root.walk(parents, true) {
        Ok(d) => d,
        Err(e) => {
            return refuse(
                sock,
                summary,
                format!("{name}: cannot create its directory: {e}"),
            )
        }
    };
    match dir.entry(leaf) {
        Err(e) => return refuse(sock, summary, format!("{name}: {e}")),
        Ok(Entry::Dir) | Ok(Entry::Other) => {
            return refuse(
                sock,
                summary,
                format!("{name}: exists and is not a regular file"),
            )
        }
        Ok(Entry::File(existing)) if !opts.force => {
            if existing != size {
                return refuse(
                    sock,
                    summary,
                    format!(
                        "{name}: already exists ({existing} bytes); not overwritten \
                         (use --force on the receiver)"
                    ),
                );
            }
            // Same size: maybe the same file from an earlier run; let the sender compare.
            let hash = match dir
                .open_read(leaf)
                .and_then(|f| super::hash_prefix(&f, size))
            {
                Ok(h) => *h.finalize().as_bytes(),
                Err(e) => return refuse(sock, summary, format!("{name}: cannot read: {e}")),
            };
            protocol::send(sock, &Msg::Exists { size, hash }).context("connection failed")?;
            match protocol::recv(sock)? {
                Msg::Identical { yes: true } => {
                    summary.files_ok += 1;
                    summary.files_identical += 1;
                    progress.inc(size);
                }
                Msg::Identical { yes: false } => {
                    summary.files_failed += 1;
                    summary.errors.push(format!(
                        "{name}: already exists with different contents; not overwritten \
                         (use --force on the receiver)"
                    ));
                }
                m => return Err(abort(sock, format!("protocol error: unexpected {m:?}"))),
            }
            return Ok(());
        }
        Ok(_) => {}
    }

    let part_name = paths::part_name(leaf);
    let part = match dir.open_rw_create(&part_name) {
        Ok(f) => f,
        Err(e) => {
            return refuse(
                sock,
                summary,
                format!("{name}: cannot create {part_name}: {e}"),
            )
        }
    };
    let mut have = match part.metadata() {
        Ok(m) => m.len(),
        Err(e) => return refuse(sock, summary, format!("{name}: {e}")),
    };
    if have > size {
        // Left from a different, larger file: useless.
        have = 0;
    }
    let mut hasher = match super::hash_prefix(&part, have) {
        Ok(h) => h,
        Err(e) => {
            return refuse(
                sock,
                summary,
                format!("{name}: cannot read {part_name}: {e}"),
            )
        }
    };
    match dir.available_bytes() {
        Ok(free) if free < size - have => {
            if have == 0 {
                let _ = dir.unlink(&part_name);
            }
            return refuse(
                sock,
                summary,
                format!(
                    "{name}: not enough space ({} needed, {} free)",
                    human_bytes(size - have),
                    human_bytes(free)
                ),
            );
        }
        _ => {}
    }
    protocol::send(
        sock,
        &Msg::Ready {
            have,
            prefix_hash: *hasher.finalize().as_bytes(),
        },
    )
    .context("connection failed")?;
    let offset = match protocol::recv(sock)? {
        Msg::Start { offset } if offset == have || offset == 0 => offset,
        m => return Err(abort(sock, format!("protocol error: unexpected {m:?}"))),
    };
    if offset == 0 {
        hasher = blake3::Hasher::new();
    }
    if let Err(e) = part.set_len(offset) {
        return Err(abort(
            sock,
            format!("{name}: cannot truncate {part_name}: {e}"),
        ));
    }
    summary.resumed_bytes += offset;
    progress.inc(offset);

    let mut received = 0u64;
    // Pipelined: each block is written and hashed on another thread while the socket
    // receives the next (see `udt::file`; why one hashing thread and no rayon: `send.rs`).
    let r = sock.recvfile_blocks(&part, offset, size - offset, |b| {
        hasher.update(b);
        received += b.len() as u64;
        progress.inc(b.len() as u64);
    });
    summary.bytes += received;
    if let Err(e) = r {
        // Whatever arrived is in the partial file: make it durable for the next run.
        let _ = part.sync_data();
        // A failed write may have stored part of its block: the file's length is the truth.
        let kept = part.metadata().map_or(offset + received, |m| m.len());
        return Err(match e {
            udt::Error::File(e) => abort(
                sock,
                format!(
                    "{name}: cannot write {part_name}: {e}; {kept} of {size} bytes kept for resume"
                ),
            ),
            e => anyhow!(
                "{name}: connection lost after {kept} of {size} bytes ({e}); \
                 the partial file {part_name} is kept for resume"
            ),
        });
    }
    let theirs = match protocol::recv(sock)? {
        Msg::Digest { hash } => hash,
        m => return Err(abort(sock, format!("protocol error: unexpected {m:?}"))),
    };
    let ours = *hasher.finalize().as_bytes();
    match finish_part(&dir, &part, &part_name, leaf, &ours, &theirs, opts.force) {
        Ok(Finish::Done) => {
            summary.files_ok += 1;
            protocol::send(sock, &Msg::Verified { ok: true }).context("connection failed")?;
        }
        Ok(Finish::Mismatch) => {
            summary.files_failed += 1;
            summary.errors.push(format!(
                "{name}: BLAKE3 digest mismatch; the received copy was discarded"
            ));
            protocol::send(sock, &Msg::Verified { ok: false }).context("connection failed")?;
        }
        Err(e) => refuse(
            sock,
            summary,
            format!(
                "{name}: received and verified but not put in place: {e} (kept as {part_name})"
            ),
        )?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn setup(content: &[u8]) -> (tempfile::TempDir, Dir, File) {
        let t = tempfile::tempdir().unwrap();
        let d = Dir::open_root(t.path(), false).unwrap();
        let mut f = d.open_rw_create(".f.udt-part").unwrap();
        f.write_all(content).unwrap();
        (t, d, f)
    }

    #[test]
    fn a_name_is_received_by_one_sender_at_a_time() {
        let busy = Mutex::new(HashSet::new());
        let first = Claim::take(&busy, "d/f").unwrap();
        assert!(Claim::take(&busy, "d/f").is_none());
        let other = Claim::take(&busy, "d/g").unwrap();
        drop(first);
        assert!(Claim::take(&busy, "d/f").is_some());
        drop(other);
        assert!(busy.lock().unwrap().is_empty());
    }

    #[test]
    fn a_digest_mismatch_discards_the_file() {
        let (t, d, f) = setup(b"hello");
        let ours = *blake3::hash(b"hello").as_bytes();
        let theirs = *blake3::hash(b"hellO").as_bytes();
        let r = finish_part(&d, &f, ".f.udt-part", "f", &ours, &theirs, false).unwrap();
        assert_eq!(r, Finish::Mismatch);
        assert!(!t.path().join("f").exists());
        assert!(!t.path().join(".f.udt-part").exists());
    }

    #[test]
    fn a_matching_digest_puts_the_file_in_place() {
        let (t, d, f) = setup(b"hello");
        let h = *blake3::hash(b"hello").as_bytes();
        let r = finish_part(&d, &f, ".f.udt-part", "f", &h, &h, false).unwrap();
        assert_eq!(r, Finish::Done);
        assert_eq!(std::fs::read(t.path().join("f")).unwrap(), b"hello");
        assert!(!t.path().join(".f.udt-part").exists());
    }

    #[test]
    fn a_file_that_appeared_meanwhile_is_not_replaced_without_force() {
        let (t, d, f) = setup(b"new");
        std::fs::write(t.path().join("f"), b"old").unwrap();
        let h = *blake3::hash(b"new").as_bytes();
        assert!(finish_part(&d, &f, ".f.udt-part", "f", &h, &h, false).is_err());
        assert_eq!(std::fs::read(t.path().join("f")).unwrap(), b"old");
        // The verified partial stays for the user.
        assert!(t.path().join(".f.udt-part").exists());
        assert_eq!(
            finish_part(&d, &f, ".f.udt-part", "f", &h, &h, true).unwrap(),
            Finish::Done
        );
        assert_eq!(std::fs::read(t.path().join("f")).unwrap(), b"new");
    }
}
