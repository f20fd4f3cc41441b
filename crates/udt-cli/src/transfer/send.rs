//! `udt send`: send files and directory trees to a `udt recv`.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Args;
use udt::{Builder, Socket};

use super::paths::{root_name, to_utf8};
use super::progress::{Progress, Style, Summary};
use super::protocol::{self, Msg};

/// Arguments of `udt send`.
#[derive(Args, Debug)]
#[command(override_usage = "udt send [OPTIONS] PATH... HOST:PORT")]
pub struct SendArgs {
    /// Files or directories to send (directories whole, as `scp -r`), then the receiver's
    /// HOST:PORT.
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
    args: Vec<OsString>,
    /// Shared secret the receiver requires (default: the UDT_SECRET environment variable).
    /// With a secret the transfer is encrypted (see --encryption).
    #[arg(long)]
    secret: Option<String>,
    #[command(flatten)]
    encrypt: super::EncryptArgs,
    /// Cap the sending rate, Mbit/s (default: as fast as the path allows).
    #[arg(long)]
    max_rate: Option<f64>,
    /// Give up connecting after this many seconds.
    #[arg(long, default_value_t = 5.0)]
    connect_timeout: f64,
    /// Print one JSON summary at the end instead of text and progress.
    #[arg(long)]
    json: bool,
    /// Give up on the receiver once nothing has been heard from it for this many seconds
    /// (default: UDT's own rule, about 46 s of silence).
    #[arg(long, value_name = "SECONDS")]
    peer_timeout: Option<f64>,
    /// When the connection fails (the receiver restarted, the path broke), connect again and
    /// resume, up to this many times, one second apart; failed connection attempts count too.
    /// The summary is then the last session's (files that had arrived count as identical).
    #[arg(long, default_value_t = 0, value_name = "N")]
    retries: u32,
    /// Also write the JSON summary to this file (used by `udt demo`, which shows the progress
    /// bar and reports the figures).
    #[arg(long, hide = true, value_name = "PATH")]
    summary_file: Option<std::path::PathBuf>,
}

/// One thing to send, in order (a directory before its contents).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A directory, by its name at the receiver.
    Dir {
        /// `/`-separated name relative to the receive directory.
        name: String,
    },
    /// A regular file.
    File {
        /// `/`-separated name relative to the receive directory.
        name: String,
        /// Where it is here.
        path: PathBuf,
        /// Size when listed, bytes (for progress; the size sent is taken when it is opened).
        size: u64,
    },
}

/// Lists what sending `paths` means, with receiver names as `scp -r` makes them. Symbolic
/// links inside trees are skipped (with a warning on stderr): following them could send
/// far more than the tree, or loop.
pub fn plan(paths: &[PathBuf]) -> anyhow::Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut roots = HashSet::new();
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| format!("cannot read {}", p.display()))?;
        let root = root_name(p).with_context(|| format!("cannot send {}", p.display()))?;
        if !roots.insert(root.clone()) {
            bail!("two paths would both arrive as '{root}'");
        }
        if meta.is_file() {
            items.push(Item::File {
                name: root,
                path: p.clone(),
                size: meta.len(),
            });
            continue;
        }
        if !meta.is_dir() {
            bail!("{} is neither a file nor a directory", p.display());
        }
        items.push(Item::Dir { name: root.clone() });
        let walk = walkdir::WalkDir::new(p)
            .min_depth(1)
            .follow_links(false)
            .sort_by_file_name();
        for entry in walk {
            let entry = entry.with_context(|| format!("cannot read the tree {}", p.display()))?;
            let rel = entry
                .path()
                .strip_prefix(p)
                .context("walked outside the tree")?;
            let mut name = root.clone();
            for c in rel.components() {
                name.push('/');
                name.push_str(
                    &to_utf8(c.as_os_str())
                        .with_context(|| format!("cannot send {}", entry.path().display()))?,
                );
            }
            let ft = entry.file_type();
            if ft.is_dir() {
                items.push(Item::Dir { name });
            } else if ft.is_file() {
                let size = entry
                    .metadata()
                    .with_context(|| format!("cannot read {}", entry.path().display()))?
                    .len();
                items.push(Item::File {
                    name,
                    path: entry.path().to_owned(),
                    size,
                });
            } else {
                eprintln!(
                    "warning: skipping {} (not a regular file or directory)",
                    entry.path().display()
                );
            }
        }
        if items.len() as u64 > super::MAX_ENTRIES {
            bail!("too many files (limit {})", super::MAX_ENTRIES);
        }
    }
    Ok(items)
}

/// Runs `udt send`.
pub fn run(args: SendArgs) -> anyhow::Result<()> {
    let Some((dest, paths)) = args.args.split_last() else {
        bail!("usage: udt send PATH... HOST:PORT");
    };
    let dest = dest
        .to_str()
        .ok_or_else(|| anyhow!("the destination {dest:?} is not HOST:PORT"))?;
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let items = plan(&paths)?;
    let total: u64 = items
        .iter()
        .map(|i| match i {
            Item::File { size, .. } => *size,
            Item::Dir { .. } => 0,
        })
        .sum();
    let files = items
        .iter()
        .filter(|i| matches!(i, Item::File { .. }))
        .count() as u64;

    let secret = super::secret(args.secret);
    // A short linger: on success the receiver's final reply already confirmed every byte,
    // and on failure there is nothing worth waiting for; but `close` still tells the
    // receiver at once that we are gone, instead of leaving it to time out.
    let mut builder = Builder::new()
        .connect_timeout(Duration::from_secs_f64(
            args.connect_timeout.clamp(0.1, 3600.0),
        ))
        .linger(Some(Duration::from_secs(2)))
        .encryption(args.encrypt.encryption(secret.as_deref())?)
        .peer_idle_timeout(super::peer_timeout(args.peer_timeout)?);
    if let Some(mbit) = args.max_rate {
        if !mbit.is_finite() || mbit <= 0.0 {
            bail!("--max-rate must be positive");
        }
        builder = builder.max_bandwidth(Some((mbit * 1e6 / 8.0) as u64));
    }
    let start = Instant::now();
    let mut attempt = 0;
    let (sock, summary, r) = loop {
        let retry = |attempt: &mut u32, what: &anyhow::Error| {
            *attempt += 1;
            eprintln!(
                "udt send: {what:#}; connecting again in 1 s to resume ({}/{})",
                attempt, args.retries
            );
            std::thread::sleep(Duration::from_secs(1));
        };
        let mut sock = match builder.connect(dest) {
            Ok(s) => s,
            Err(e) => {
                let e = anyhow::Error::new(e).context(format!("cannot connect to {dest}"));
                if attempt < args.retries {
                    retry(&mut attempt, &e);
                    continue;
                }
                return Err(e);
            }
        };
        super::warn_buffers(sock.udp_buffers());
        let mut summary = Summary {
            role: "send",
            peer: dest.to_owned(),
            ..Default::default()
        };
        let style = Style::detect(args.json);
        let r = session(
            &mut sock,
            secret.as_deref(),
            &items,
            files,
            total,
            style,
            &mut summary,
        );
        if let Err(e) = &r {
            if super::is_connection_failure(e) && attempt < args.retries {
                super::close_and_flush(sock);
                retry(&mut attempt, e);
                continue;
            }
        }
        break (sock, summary, r);
    };
    let mut summary = summary;
    summary.finish(start, sock.stats(false).ok());
    if let Some(path) = &args.summary_file {
        let json = serde_json::to_string(&summary).context("cannot encode the summary")?;
        std::fs::write(path, json)
            .with_context(|| format!("cannot write the summary to {}", path.display()))?;
    }
    match r {
        Ok(()) => {
            super::close_and_flush(sock);
            summary.print(args.json);
            if summary.files_failed > 0 {
                bail!("{} file(s) failed", summary.files_failed);
            }
            Ok(())
        }
        Err(e) => {
            super::close_and_flush(sock);
            if summary.files_ok + summary.files_failed > 0 {
                summary.print(args.json);
            }
            if super::is_connection_failure(&e) {
                return Err(e.context(format!(
                    "the connection to {dest} failed; run the same command again to resume \
                     (the receiver keeps what arrived)"
                )));
            }
            Err(e)
        }
    }
}

fn session(
    sock: &mut Socket,
    secret: Option<&str>,
    items: &[Item],
    files: u64,
    total: u64,
    style: Style,
    summary: &mut Summary,
) -> anyhow::Result<()> {
    let (nonce, auth_required) =
        match protocol::recv_reply(sock).context("no greeting from the receiver")? {
            Msg::Hello {
                version,
                nonce,
                auth_required,
            } => {
                if version != protocol::VERSION {
                    bail!(
                        "the receiver speaks transfer protocol version {version}, we speak {}",
                        protocol::VERSION
                    );
                }
                (nonce, auth_required)
            }
            m => bail!("protocol error: expected Hello, got {m:?}"),
        };
    if auth_required && secret.is_none() {
        bail!(
            "the receiver requires a shared secret: pass --secret or set {}",
            super::SECRET_ENV
        );
    }
    let mac = secret.map_or([0; 32], |s| protocol::auth_mac(s.as_bytes(), &nonce));
    protocol::send(sock, &Msg::Auth { mac }).context("connection failed")?;
    match protocol::recv_reply(sock)? {
        Msg::AuthResult { ok: true } => {}
        Msg::AuthResult { ok: false } => bail!("the receiver refused our shared secret"),
        m => bail!("protocol error: expected AuthResult, got {m:?}"),
    }
    protocol::send(
        sock,
        &Msg::Begin {
            files,
            bytes: total,
        },
    )
    .context("connection failed")?;
    let mut progress = Progress::new(style, total);
    for item in items {
        match item {
            Item::Dir { name } => {
                protocol::send(sock, &Msg::Dir { name: name.clone() })
                    .context("connection failed")?;
                match protocol::recv_reply(sock)? {
                    Msg::Ok => summary.dirs += 1,
                    Msg::Refused { reason } => fail(summary, &progress, reason),
                    m => bail!("protocol error: unexpected {m:?}"),
                }
            }
            Item::File { name, path, .. } => {
                send_file(sock, name, path, summary, &mut progress)?;
            }
        }
    }
    protocol::send(sock, &Msg::End).context("connection failed")?;
    match protocol::recv_reply(sock)? {
        Msg::Bye { .. } => {}
        m => bail!("protocol error: expected Bye, got {m:?}"),
    }
    progress.finish();
    Ok(())
}

/// Records a failed item; it is also printed at once (above the bar, or on stderr with
/// `--json`), which helps in long runs.
fn fail(summary: &mut Summary, progress: &Progress, reason: String) {
    progress.println(&format!("failed: {reason}"));
    summary.files_failed += 1;
    summary.errors.push(reason);
}

fn send_file(
    sock: &mut Socket,
    name: &str,
    path: &Path,
    summary: &mut Summary,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    progress.set_file(name);
    let opened = File::open(path).and_then(|f| f.metadata().map(|m| (f, m.len())));
    let (file, size) = match opened {
        Ok(x) => x,
        Err(e) => {
            fail(
                summary,
                progress,
                format!("cannot open {}: {e}", path.display()),
            );
            return Ok(());
        }
    };
    protocol::send(
        sock,
        &Msg::File {
            name: name.to_owned(),
            size,
        },
    )
    .context("connection failed")?;
    match protocol::recv_reply(sock)? {
        Msg::Refused { reason } => fail(summary, progress, reason),
        Msg::Exists { size: theirs, hash } => {
            let ours = super::hash_prefix(&file, size)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let yes = theirs == size && protocol::same_digest(ours.finalize().as_bytes(), &hash);
            protocol::send(sock, &Msg::Identical { yes }).context("connection failed")?;
            if yes {
                summary.files_ok += 1;
                summary.files_identical += 1;
                progress.inc(size);
            } else {
                fail(
                    summary,
                    progress,
                    format!(
                        "{name}: the receiver already has a different file of that name \
                         (use --force on the receiver to overwrite)"
                    ),
                );
            }
        }
        Msg::Ready { have, prefix_hash } => {
            let (offset, mut hasher) = super::resume_offset(&file, size, have, &prefix_hash)
                .with_context(|| format!("cannot read {}", path.display()))?;
            protocol::send(sock, &Msg::Start { offset }).context("connection failed")?;
            summary.resumed_bytes += offset;
            progress.inc(offset);
            let mut sent = 0u64;
            // Pipelined: the file is read ahead and each block is hashed on its own thread
            // once queued, overlapped with the socket queueing the next (see `udt::file`).
            // One hashing thread is enough, so plain `update`, not `update_rayon`: BLAKE3
            // hashes 5.5 GB/s on one core of the 2-core test machine, over 5 times what the
            // transfer moves, and spreading a 1 MiB block over rayon's pool was no faster there
            // (5.7 against 5.6-6.1 GB/s, more CPU-s/GB) while both cores are busy with the
            // transfer's own threads; it would also add rayon's threads to every process.
            let r = sock.sendfile_blocks(&file, offset, size - offset, |b| {
                hasher.update(b);
                sent += b.len() as u64;
                progress.inc(b.len() as u64);
            });
            summary.bytes += sent;
            if let Err(e) = r {
                return Err(explain_send_failure(sock, e, name, path));
            }
            protocol::send(
                sock,
                &Msg::Digest {
                    hash: *hasher.finalize().as_bytes(),
                },
            )
            .context("connection failed")?;
            match protocol::recv_reply(sock)? {
                Msg::Verified { ok: true } => summary.files_ok += 1,
                Msg::Verified { ok: false } => fail(
                    summary,
                    progress,
                    format!("{name}: BLAKE3 digest mismatch; the receiver discarded its copy"),
                ),
                Msg::Refused { reason } => fail(summary, progress, reason),
                m => bail!("protocol error: unexpected {m:?}"),
            }
        }
        m => bail!("protocol error: unexpected {m:?}"),
    }
    Ok(())
}

/// Turns a failed `sendfile` into a clear error: the receiver's own reason if it sent one
/// before closing (disk full, …), else what broke here.
fn explain_send_failure(
    sock: &mut Socket,
    e: udt::Error,
    name: &str,
    path: &Path,
) -> anyhow::Error {
    if let udt::Error::File(io) = e {
        return anyhow!(
            "cannot read {}: {io}; stopped (the receiver keeps what it has for resume)",
            path.display()
        );
    }
    // The timeout is a valid non-zero constant; if it were refused we would wait forever
    // only on a connection that is alive, so the result can be ignored.
    let _ = sock.set_read_timeout(Some(Duration::from_secs(2)));
    if let Ok(Msg::Abort { reason }) = protocol::recv(sock) {
        return anyhow!("the receiver aborted the transfer: {reason}");
    }
    anyhow!("connection lost while sending {name} ({e}); run the same command again to resume")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_names_like_scp() {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().join("a/b/tree");
        std::fs::create_dir_all(tree.join("sub/empty")).unwrap();
        std::fs::write(tree.join("x"), b"12").unwrap();
        std::fs::write(tree.join("sub/y"), b"3").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", tree.join("link")).unwrap();
        std::fs::write(t.path().join("f"), b"").unwrap();
        let items = plan(&[tree.clone(), t.path().join("f")]).unwrap();
        let names: Vec<String> = items
            .iter()
            .map(|i| match i {
                Item::Dir { name } => format!("{name}/"),
                Item::File { name, size, .. } => format!("{name}:{size}"),
            })
            .collect();
        assert_eq!(
            names,
            vec![
                "tree/",
                "tree/sub/",
                "tree/sub/empty/",
                "tree/sub/y:1",
                "tree/x:2",
                "f:0"
            ]
        );
    }

    #[test]
    fn plan_refuses_missing_paths_and_clashing_names() {
        let t = tempfile::tempdir().unwrap();
        let e = plan(&[t.path().join("nope")]).unwrap_err();
        assert!(format!("{e:#}").contains("No such file"), "{e:#}");
        std::fs::create_dir_all(t.path().join("p/x")).unwrap();
        std::fs::create_dir_all(t.path().join("q/x")).unwrap();
        assert!(plan(&[t.path().join("p/x"), t.path().join("q/x")]).is_err());
    }
}
