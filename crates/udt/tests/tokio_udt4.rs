//! The async API against the reference implementation, UDT4 4.11, on loopback: the UDT4 test
//! peer (`interop/target/udt4-peer`, built by `interop/build.sh`, see `interop/README.md`)
//! receives from or sends to `udt::tokio` sockets, and every byte is checked on the
//! receiving side (byte `i` of the stream is `i mod 251`).
#![cfg(feature = "tokio")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use udt::tokio::{UdtListener, UdtMessageSocket, UdtStream};
use udt::{Builder, SocketKind};

/// Longest any one test may take.
const LIMIT: Duration = Duration::from_secs(120);

/// Bytes per transfer.
const BYTES: u64 = 64 << 20;

/// Builds the UDT4 peer once and returns its path.
fn peer_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/build.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "interop/build.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = PathBuf::from(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .last()
                .unwrap_or("")
                .trim(),
        );
        assert!(path.is_file(), "build.sh named no binary");
        path
    })
    .clone()
}

/// A free UDP port on loopback now (bound and released; the peer binds it right after).
fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Is UDP `port` bound by anyone? (From /proc/net/udp, without touching the port.)
fn udp_bound(port: u16) -> bool {
    let want = format!(":{port:04X}");
    std::fs::read_to_string("/proc/net/udp").is_ok_and(|t| {
        t.lines().skip(1).any(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|a| a.ends_with(&want))
        })
    })
}

/// The UDT4 peer as a child process, killed if the test ends first.
struct Peer(Option<Child>);

impl Peer {
    fn spawn(args: &[&str]) -> Peer {
        let child = Command::new(peer_bin())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start udt4-peer");
        Peer(Some(child))
    }

    /// Waits (on a blocking-pool thread) for the exit; returns (success, stdout, stderr).
    async fn finish(mut self) -> (bool, String, String) {
        let child = self.0.take().unwrap();
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts a UDT4 server on a free port and waits until it is bound.
async fn udt4_server(extra: &[&str]) -> (Peer, u16) {
    let port = free_port();
    let p = port.to_string();
    let mut args = vec!["server", "--port", &p, "--once", "--timeout", "100"];
    args.extend_from_slice(extra);
    let peer = Peer::spawn(&args);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !udp_bound(port) {
        assert!(Instant::now() < deadline, "udt4-peer did not bind {port}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (peer, port)
}

fn run<F: std::future::Future<Output = ()>>(f: F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(LIMIT, f)
                .await
                .expect("test ran over its time limit")
        })
}

fn pattern(offset: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = ((offset + k as u64) % 251) as u8;
    }
}

fn assert_verified(ok: bool, stdout: &str, stderr: &str) {
    eprintln!("[udt4-peer] {}", stdout.trim());
    assert!(ok, "udt4-peer failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("\"verified\":true"),
        "udt4-peer did not verify the data:\n{stdout}\n{stderr}"
    );
}

#[test]
fn async_stream_to_udt4_server() {
    run(async {
        let bytes = BYTES.to_string();
        let (peer, port) = udt4_server(&["--bytes", &bytes]).await;
        let mut s = UdtStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut sent = 0u64;
        while sent < BYTES {
            let n = buf.len().min((BYTES - sent) as usize);
            pattern(sent, &mut buf[..n]);
            s.write_all(&buf[..n]).await.unwrap();
            sent += n as u64;
        }
        s.shutdown().await.unwrap();
        let (ok, out, err) = peer.finish().await;
        assert_verified(ok, &out, &err);
        assert!(out.contains(&format!("\"bytes\":{BYTES}")), "{out}");
    });
}

#[test]
fn udt4_client_to_async_listener() {
    run(async {
        let l = UdtListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().to_string();
        let bytes = BYTES.to_string();
        let peer = Peer::spawn(&["client", &addr, "--bytes", &bytes, "--timeout", "100"]);
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut want = vec![0u8; 1 << 20];
        let mut got = 0u64;
        loop {
            let n = s.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            pattern(got, &mut want[..n]);
            assert!(buf[..n] == want[..n], "corrupt data near offset {got}");
            got += n as u64;
        }
        assert_eq!(got, BYTES);
        let (ok, out, err) = peer.finish().await;
        assert!(ok, "udt4-peer client failed:\n{out}\n{err}");
    });
}

#[test]
fn async_messages_to_udt4_server_keep_boundaries() {
    run(async {
        const MSG: usize = 10_000;
        const TOTAL: u64 = 8 << 20;
        let bytes = TOTAL.to_string();
        let size = MSG.to_string();
        let (peer, port) = udt4_server(&[
            "--mode",
            "message",
            "--msg-size",
            &size,
            "--bytes",
            &bytes,
            "--inorder",
        ])
        .await;
        let b = Builder::new().kind(SocketKind::Message);
        let m = UdtMessageSocket::connect_with(&b, ("127.0.0.1", port))
            .await
            .unwrap();
        let mut buf = vec![0u8; MSG];
        let mut sent = 0u64;
        while sent < TOTAL {
            let n = MSG.min((TOTAL - sent) as usize);
            pattern(sent, &mut buf[..n]);
            m.send_msg(&buf[..n], None, true).await.unwrap();
            sent += n as u64;
        }
        // A 4.11 receiver blocked in `recvmsg` can report the end (2001) instead of its last
        // messages when our Shutdown follows the final ACK within microseconds (seen with the
        // blocking API too: 3 of 30 runs short by 9-190 messages; none of 40 with this pause).
        // Wait until everything is acknowledged, and a little longer, before closing.
        while m.socket().send_buffer_used_pkts() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        m.close().await.unwrap();
        let (ok, out, err) = peer.finish().await;
        assert_verified(ok, &out, &err);
        assert!(out.contains("\"bad_messages\":0"), "{out}");
    });
}

#[test]
fn async_rendezvous_with_udt4() {
    run(async {
        const TOTAL: u64 = 16 << 20;
        let (ours, theirs) = (free_port(), free_port());
        let bytes = TOTAL.to_string();
        let lp = theirs.to_string();
        let me = format!("127.0.0.1:{ours}");
        // UDT4 meets us from `theirs` and receives.
        let peer = Peer::spawn(&[
            "server",
            "--rendezvous",
            "--local-port",
            &lp,
            &me,
            "--bytes",
            &bytes,
            "--timeout",
            "100",
        ]);
        let local = me.parse().unwrap();
        let mut s = UdtStream::rendezvous(local, ("127.0.0.1", theirs))
            .await
            .unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut sent = 0u64;
        while sent < TOTAL {
            let n = buf.len().min((TOTAL - sent) as usize);
            pattern(sent, &mut buf[..n]);
            s.write_all(&buf[..n]).await.unwrap();
            sent += n as u64;
        }
        s.shutdown().await.unwrap();
        let (ok, out, err) = peer.finish().await;
        assert_verified(ok, &out, &err);
    });
}

#[test]
fn udt4_messages_to_async_listener_keep_boundaries() {
    run(async {
        const MSG: usize = 10_000;
        const TOTAL: u64 = 8 << 20;
        let b = Builder::new().kind(SocketKind::Message);
        let l = UdtListener::bind_with(&b, "127.0.0.1:0", 4).await.unwrap();
        let addr = l.local_addr().to_string();
        let (bytes, size) = (TOTAL.to_string(), MSG.to_string());
        let peer = Peer::spawn(&[
            "client",
            &addr,
            "--mode",
            "message",
            "--msg-size",
            &size,
            "--bytes",
            &bytes,
            "--inorder",
            "--timeout",
            "100",
        ]);
        let (m, _) = l.accept_msg().await.unwrap();
        let mut buf = vec![0u8; MSG];
        let mut want = vec![0u8; MSG];
        let mut got = 0u64;
        let mut messages = 0u64;
        while got < TOTAL {
            let r = m.recv_msg(&mut buf).await.unwrap();
            let expect_len = MSG.min((TOTAL - got) as usize);
            assert_eq!(r.msg_len, expect_len, "message {messages}: its length");
            pattern(got, &mut want[..r.copied]);
            assert!(
                buf[..r.copied] == want[..r.copied],
                "message {messages}: its bytes"
            );
            got += r.copied as u64;
            messages += 1;
        }
        assert_eq!(messages, TOTAL.div_ceil(MSG as u64));
        let (ok, out, err) = peer.finish().await;
        assert!(ok, "udt4-peer client failed:\n{out}\n{err}");
    });
}
