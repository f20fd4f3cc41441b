//! `udt send` / `udt recv` end to end on loopback, with the built binary.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{content, free_port, json_field, recv_cmd, text, UDT};

fn start_recv(dir: &Path, port: u16, extra: &[&str]) -> Child {
    recv_cmd(dir, port, extra).spawn().unwrap()
}

/// Runs `udt send PATHS... 127.0.0.1:PORT EXTRA...` to completion.
fn send(paths: &[&Path], port: u16, extra: &[&str], env_secret: Option<&str>) -> Output {
    let mut c = Command::new(UDT);
    c.arg("send")
        .args(paths)
        .arg(format!("127.0.0.1:{port}"))
        .args(extra)
        .env_remove("UDT_SECRET")
        .env("RUST_BACKTRACE", "0");
    if let Some(s) = env_secret {
        c.env("UDT_SECRET", s);
    }
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_output(child, "udt send")
}

/// Waits for a child (killing it after a minute: a hang is a failure, not a stuck suite).
fn wait_output(child: Child, what: &str) -> Output {
    common::wait_output_within(child, what, 60)
}

/// Every file and directory under `root`, relative, sorted (directories end in `/`).
fn listing(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_owned();
            // Symbolic links are listed, never followed.
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                out.push(format!("{rel}/"));
                walk(root, &p, out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn files_of_awkward_sizes_and_a_tree_arrive_identical() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let tree = src.path().join("a/b/tree");
    std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(tree.join("empty-dir")).unwrap();
    std::fs::write(tree.join("zero"), b"").unwrap();
    std::fs::write(tree.join("one"), b"!").unwrap();
    // Not a multiple of the 1456-byte payload, nor of the 1 MiB block.
    std::fs::write(tree.join("sub/odd"), content(1456 * 3 + 17, 1)).unwrap();
    std::fs::write(tree.join("sub/deeper/big"), content(3 * 1024 * 1024 + 1, 2)).unwrap();
    let single = src.path().join("single.bin");
    std::fs::write(&single, content(777_777, 3)).unwrap();

    let port = free_port();
    let rx = start_recv(dst.path(), port, &["--once", "--json"]);
    let out = send(&[&tree, &single], port, &["--json"], None);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json_field(&out, "files_ok"), 5);
    let rx = wait_output(rx, "udt recv");
    assert!(rx.status.success(), "{}", text(&rx));
    assert_eq!(json_field(&rx, "files_ok"), 5);

    assert_eq!(
        listing(dst.path()),
        vec![
            "single.bin",
            "tree/",
            "tree/empty-dir/",
            "tree/one",
            "tree/sub/",
            "tree/sub/deeper/",
            "tree/sub/deeper/big",
            "tree/sub/odd",
            "tree/zero",
        ]
    );
    for rel in ["zero", "one", "sub/odd", "sub/deeper/big"] {
        let a = std::fs::read(tree.join(rel)).unwrap();
        let b = std::fs::read(dst.path().join("tree").join(rel)).unwrap();
        assert!(a == b, "{rel} differs");
    }
    assert!(
        std::fs::read(&single).unwrap() == std::fs::read(dst.path().join("single.bin")).unwrap()
    );
}

#[test]
fn a_wrong_or_missing_secret_is_refused() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("f");
    std::fs::write(&f, b"payload").unwrap();
    let port = free_port();
    let rx = recv_cmd(dst.path(), port, &["--once"])
        .env("UDT_SECRET", "open sesame")
        .spawn()
        .unwrap();

    // With a secret the receiver requires transport encryption: a sender without one is
    // refused at the handshake, and one with another secret fails its authentication.
    let none = send(&[&f], port, &[], None);
    assert!(!none.status.success());
    assert!(
        text(&none).contains("requires encryption"),
        "{}",
        text(&none)
    );

    let wrong = send(&[&f], port, &["--secret", "open sesame!"], None);
    assert!(!wrong.status.success());
    assert!(text(&wrong).contains("secrets differ"), "{}", text(&wrong));
    assert!(listing(dst.path()).is_empty(), "something was written");

    // Refused peers do not end a --once receiver; the right secret (from the environment)
    // then goes through.
    let right = send(&[&f], port, &[], Some("open sesame"));
    assert!(right.status.success(), "{}", text(&right));
    let rx = wait_output(rx, "udt recv");
    assert!(rx.status.success(), "{}", text(&rx));
    assert_eq!(std::fs::read(dst.path().join("f")).unwrap(), b"payload");
}

#[test]
fn without_transport_encryption_the_secret_is_still_checked_by_the_transfer_protocol() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let f = src.path().join("f");
    std::fs::write(&f, b"clear payload").unwrap();
    let port = free_port();
    let rx = recv_cmd(dst.path(), port, &["--once", "--no-encrypt"])
        .env("UDT_SECRET", "open sesame")
        .spawn()
        .unwrap();
    let none = send(&[&f], port, &[], None);
    assert!(
        text(&none).contains("requires a shared secret"),
        "{}",
        text(&none)
    );
    let wrong = send(&[&f], port, &["--secret", "x", "--no-encrypt"], None);
    assert!(
        text(&wrong).contains("refused our shared secret"),
        "{}",
        text(&wrong)
    );
    // A sender that requires encryption gives up before sending anything in clear.
    let strict = send(&[&f], port, &[], Some("open sesame"));
    assert!(!strict.status.success());
    assert!(
        text(&strict).contains("does not offer it"),
        "{}",
        text(&strict)
    );
    // `--encryption preferred` falls back to clear with this receiver.
    let ok = send(
        &[&f],
        port,
        &["--encryption", "preferred"],
        Some("open sesame"),
    );
    assert!(ok.status.success(), "{}", text(&ok));
    let rx = wait_output(rx, "udt recv");
    assert!(rx.status.success(), "{}", text(&rx));
    assert_eq!(
        std::fs::read(dst.path().join("f")).unwrap(),
        b"clear payload"
    );
}

#[test]
fn existing_files_are_kept_unless_forced_and_identical_ones_are_skipped() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let a = src.path().join("a");
    let b = src.path().join("b");
    let c = src.path().join("c");
    std::fs::write(&a, b"new contents").unwrap();
    std::fs::write(&b, b"same size 1").unwrap();
    std::fs::write(&c, b"identical").unwrap();
    std::fs::write(dst.path().join("a"), b"old").unwrap();
    std::fs::write(dst.path().join("b"), b"same size 2").unwrap();
    std::fs::write(dst.path().join("c"), b"identical").unwrap();

    let port = free_port();
    let rx = start_recv(dst.path(), port, &["--once"]);
    let out = send(&[&a, &b, &c], port, &["--json"], None);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(json_field(&out, "files_failed"), 2);
    assert_eq!(json_field(&out, "files_identical"), 1);
    assert!(text(&out).contains("--force"), "{}", text(&out));
    let rx = wait_output(rx, "udt recv");
    assert!(!rx.status.success());
    assert_eq!(std::fs::read(dst.path().join("a")).unwrap(), b"old");
    assert_eq!(std::fs::read(dst.path().join("b")).unwrap(), b"same size 2");

    let port = free_port();
    let rx = start_recv(dst.path(), port, &["--once", "--force"]);
    let out = send(&[&a, &b, &c], port, &[], None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(wait_output(rx, "udt recv").status.success());
    assert_eq!(
        std::fs::read(dst.path().join("a")).unwrap(),
        b"new contents"
    );
    assert_eq!(std::fs::read(dst.path().join("b")).unwrap(), b"same size 1");
    assert_eq!(listing(dst.path()), vec!["a", "b", "c"]);
}

#[test]
fn a_partial_file_is_resumed_only_if_its_prefix_matches() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data = content(5 * 1024 * 1024 + 3, 9);
    let f = src.path().join("data.bin");
    std::fs::write(&f, &data).unwrap();

    // An intact partial of 2 MiB + 5 bytes: only the rest crosses the network.
    let have = 2 * 1024 * 1024 + 5;
    std::fs::write(dst.path().join(".data.bin.udt-part"), &data[..have]).unwrap();
    let port = free_port();
    let rx = start_recv(dst.path(), port, &["--once"]);
    let out = send(&[&f], port, &["--json"], None);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json_field(&out, "resumed_bytes"), have as u64);
    assert_eq!(json_field(&out, "bytes"), (data.len() - have) as u64);
    assert!(wait_output(rx, "udt recv").status.success());
    assert!(std::fs::read(dst.path().join("data.bin")).unwrap() == data);
    assert_eq!(listing(dst.path()), vec!["data.bin"]);

    // A corrupted partial: its digest does not match, so the file starts over.
    std::fs::remove_file(dst.path().join("data.bin")).unwrap();
    let mut bad = data[..have].to_vec();
    bad[12345] ^= 0x40;
    std::fs::write(dst.path().join(".data.bin.udt-part"), &bad).unwrap();
    let port = free_port();
    let rx = start_recv(dst.path(), port, &["--once"]);
    let out = send(&[&f], port, &["--json"], None);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json_field(&out, "resumed_bytes"), 0);
    assert_eq!(json_field(&out, "bytes"), data.len() as u64);
    assert!(wait_output(rx, "udt recv").status.success());
    assert!(std::fs::read(dst.path().join("data.bin")).unwrap() == data);
}

#[test]
fn an_interrupted_transfer_resumes_and_ends_identical() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data = content(24 * 1024 * 1024, 11);
    let f = src.path().join("big");
    std::fs::write(&f, &data).unwrap();
    let part = dst.path().join(".big.udt-part");

    // Throttled to 40 Mbit/s (about 5 s for the file), then both sides are killed once a
    // few MiB have arrived.
    let port = free_port();
    let mut rx = start_recv(dst.path(), port, &[]);
    let mut tx = Command::new(UDT)
        .args(["send", "--max-rate", "40"])
        .arg(&f)
        .arg(format!("127.0.0.1:{port}"))
        .env_remove("UDT_SECRET")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(&part).map_or(0, |m| m.len()) < 3 << 20 {
        assert!(Instant::now() < deadline, "the transfer never started");
        assert!(tx.try_wait().unwrap().is_none(), "the sender ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    rx.kill().unwrap();
    tx.kill().unwrap();
    rx.wait().unwrap();
    tx.wait().unwrap();
    let kept = std::fs::metadata(&part).unwrap().len();
    assert!(kept >= 3 << 20 && kept < data.len() as u64, "kept {kept}");
    assert!(!dst.path().join("big").exists());

    let port = free_port();
    let rx = start_recv(dst.path(), port, &["--once"]);
    let out = send(&[&f], port, &["--json"], None);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json_field(&out, "resumed_bytes"), kept);
    assert!(wait_output(rx, "udt recv").status.success());
    assert!(std::fs::read(dst.path().join("big")).unwrap() == data);
    assert!(!part.exists());
}

#[test]
fn missing_paths_and_absent_receivers_are_clear_errors() {
    let src = tempfile::tempdir().unwrap();
    let out = send(&[&src.path().join("nope")], free_port(), &[], None);
    assert!(!out.status.success());
    assert!(text(&out).contains("cannot read"), "{}", text(&out));
    assert!(text(&out).contains("No such file"), "{}", text(&out));

    let f = src.path().join("f");
    std::fs::write(&f, b"x").unwrap();
    let out = send(&[&f], free_port(), &["--connect-timeout", "0.5"], None);
    assert!(!out.status.success());
    assert!(text(&out).contains("cannot connect"), "{}", text(&out));

    let out = Command::new(UDT)
        .args(["recv", "--dir", "/proc/self/nonexistent-dir", "--once"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).contains("cannot open the receive directory"),
        "{}",
        text(&out)
    );
}

/// A hand-written hostile sender: speaks the framing directly with claims `udt send` never
/// makes. Frame: type byte, u32 BE body length, body.
struct Raw {
    sock: udt::Socket,
}

impl Raw {
    fn connect(port: u16) -> Raw {
        let sock = udt::Builder::new()
            .connect_timeout(Duration::from_secs(5))
            .connect(("127.0.0.1", port))
            .unwrap();
        let mut r = Raw { sock };
        let (tag, _) = r.read();
        assert_eq!(tag, 1, "expected Hello");
        r.write(2, &[0; 32]); // Auth with no secret
        let (tag, body) = r.read();
        assert_eq!((tag, body), (3, vec![1]), "expected AuthResult ok");
        r
    }

    fn write(&mut self, tag: u8, body: &[u8]) {
        let mut f = vec![tag];
        f.extend_from_slice(&(body.len() as u32).to_be_bytes());
        f.extend_from_slice(body);
        self.sock.write_all(&f).unwrap();
    }

    fn read(&mut self) -> (u8, Vec<u8>) {
        let mut h = [0u8; 5];
        self.sock.read_exact(&mut h).unwrap();
        let mut b = vec![0u8; u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize];
        self.sock.read_exact(&mut b).unwrap();
        (h[0], b)
    }

    fn begin(&mut self, files: u64, bytes: u64) {
        let mut b = files.to_be_bytes().to_vec();
        b.extend_from_slice(&bytes.to_be_bytes());
        self.write(4, &b);
    }

    /// Offers a file; returns the reply's type (8 = Refused, 9 = Ready) and body.
    fn file(&mut self, name: &str, size: u64) -> (u8, Vec<u8>) {
        let mut b = size.to_be_bytes().to_vec();
        b.extend_from_slice(&(name.len() as u32).to_be_bytes());
        b.extend_from_slice(name.as_bytes());
        self.write(6, &b);
        self.read()
    }

    fn dir(&mut self, name: &str) -> (u8, Vec<u8>) {
        let mut b = (name.len() as u32).to_be_bytes().to_vec();
        b.extend_from_slice(name.as_bytes());
        self.write(5, &b);
        self.read()
    }
}

#[test]
fn hostile_names_and_sizes_are_refused_and_nothing_escapes() {
    let base = tempfile::tempdir().unwrap();
    let dst = base.path().join("dst");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(&dst).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // A symbolic link planted inside the receive directory, pointing out of it.
    std::os::unix::fs::symlink(&outside, dst.join("link")).unwrap();
    std::os::unix::fs::symlink(outside.join("target"), dst.join("filelink")).unwrap();

    let port = free_port();
    let rx = start_recv(&dst, port, &["--once"]);
    let mut raw = Raw::connect(port);
    raw.begin(3, 3);
    for name in [
        "../escape",
        "/tmp/absolute",
        "a/../../escape",
        "link/x",
        "link/../../escape",
        "./x",
        "a//b",
        "",
        "bad\nname",
        "back\\slash",
        ".x.udt-part",
    ] {
        let (tag, reason) = raw.file(name, 3);
        assert_eq!(tag, 8, "{name:?} was not refused");
        assert!(!reason.is_empty());
    }
    for name in ["../d", "link/d", "/d"] {
        assert_eq!(raw.dir(name).0, 8, "directory {name:?} was not refused");
    }
    // The planted file link is not written through either (and not replaced).
    assert_eq!(raw.file("filelink", 3).0, 8);
    // A size no disk has.
    let (tag, reason) = raw.file("huge", u64::MAX / 2);
    assert_eq!(tag, 8);
    assert!(String::from_utf8_lossy(&reason).contains("not enough space"));
    raw.write(15, &[]); // End
    assert_eq!(raw.read().0, 16, "expected Bye");
    raw.sock.close().unwrap();
    let out = wait_output(rx, "udt recv");
    assert!(!out.status.success(), "refusals must fail the transfer");
    assert!(
        listing(&outside).is_empty(),
        "something escaped: {:?}",
        listing(&outside)
    );
    assert!(!base.path().join("escape").exists());
    assert_eq!(listing(&dst), vec!["filelink", "link"]);
}

#[test]
fn hostile_counts_and_frames_end_the_session_cleanly() {
    let dst = tempfile::tempdir().unwrap();
    let port = free_port();
    let rx = start_recv(dst.path(), port, &["--once"]);
    let mut raw = Raw::connect(port);
    raw.begin(u64::MAX, u64::MAX);
    let (tag, reason) = raw.read();
    assert_eq!(tag, 17, "expected Abort");
    assert!(String::from_utf8_lossy(&reason).contains("too many files"));
    let out = wait_output(rx, "udt recv");
    assert!(!out.status.success());
    assert!(text(&out).contains("too many files"), "{}", text(&out));

    // A frame claiming a 4 GiB body: refused without allocating it.
    let port = free_port();
    let rx = start_recv(dst.path(), port, &["--once"]);
    let mut raw = Raw::connect(port);
    raw.sock.write_all(&[6, 0xff, 0xff, 0xff, 0xff]).unwrap();
    let out = wait_output(rx, "udt recv");
    assert!(!out.status.success());
    assert!(text(&out).contains("limit"), "{}", text(&out));
    drop(raw);
    assert!(listing(dst.path()).is_empty());
}

#[test]
fn a_tree_arrives_identical_through_a_lossy_reordering_delayed_path() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let tree = src.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("zero"), b"").unwrap();
    std::fs::write(tree.join("one"), b"1").unwrap();
    std::fs::write(tree.join("sub/odd"), content(1456 * 5 + 3, 21)).unwrap();
    std::fs::write(tree.join("sub/mb"), content(1024 * 1024 + 7, 22)).unwrap();

    let port = free_port();
    let relay_port = free_port();
    // `udt relay` (the path emulator): 5 ms each way, 1 % loss, reordering and duplication.
    let mut relay = Command::new(UDT)
        .args(["relay", "--listen"])
        .arg(format!("127.0.0.1:{relay_port}"))
        .arg("--to")
        .arg(format!("127.0.0.1:{port}"))
        .args(["--delay", "5ms", "--loss", "0.01", "--reorder", "0.01"])
        .args(["--duplicate", "0.01", "--interval", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = start_recv(dst.path(), port, &["--once", "--json"]);
    let out = send(&[&tree], relay_port, &["--json"], None);
    let _ = relay.kill();
    let _ = relay.wait();
    assert!(out.status.success(), "{}", text(&out));
    assert!(wait_output(rx, "udt recv").status.success());
    for rel in ["zero", "one", "sub/odd", "sub/mb"] {
        let a = std::fs::read(tree.join(rel)).unwrap();
        let b = std::fs::read(dst.path().join("tree").join(rel)).unwrap();
        assert!(a == b, "{rel} differs");
    }
    assert_eq!(json_field(&out, "files_ok"), 4);
}

#[test]
fn a_receiver_serves_several_senders_at_once() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let a = src.path().join("a");
    let b = src.path().join("b");
    std::fs::write(&a, content(3 * 1024 * 1024 + 11, 31)).unwrap();
    std::fs::write(&b, content(2 * 1024 * 1024 + 13, 32)).unwrap();
    let port = free_port();
    let mut rx = start_recv(dst.path(), port, &[]);
    // Both throttled, so that their transfers overlap in time.
    let spawn_send = |p: &Path| {
        Command::new(UDT)
            .args(["send", "--json", "--max-rate", "50"])
            .arg(p)
            .arg(format!("127.0.0.1:{port}"))
            .env_remove("UDT_SECRET")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let ta = spawn_send(&a);
    let tb = spawn_send(&b);
    let oa = wait_output(ta, "udt send a");
    let ob = wait_output(tb, "udt send b");
    let _ = rx.kill();
    let _ = rx.wait();
    assert!(oa.status.success(), "{}", text(&oa));
    assert!(ob.status.success(), "{}", text(&ob));
    assert!(std::fs::read(&a).unwrap() == std::fs::read(dst.path().join("a")).unwrap());
    assert!(std::fs::read(&b).unwrap() == std::fs::read(dst.path().join("b")).unwrap());
}
