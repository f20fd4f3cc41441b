//! Faults on loopback with real processes: a peer killed (SIGKILL) mid-transfer, a receiver
//! restarted mid-file, a receiver whose disk fills up (a file-size limit, RLIMIT_FSIZE, set in
//! the receiver's process).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{
    content, free_port, json_field, recv_cmd, text, wait_output_within as wait_output, UDT,
};

/// The peer idle timeout the surviving side is configured with in these tests.
const PEER_TIMEOUT: Duration = Duration::from_secs(2);
/// Slack over that timeout before an error counts as late (a loaded machine).
const SLACK: Duration = Duration::from_secs(8);

fn send_cmd(file: &Path, port: u16, extra: &[&str]) -> Command {
    let mut c = Command::new(UDT);
    c.arg("send")
        .arg(file)
        .arg(format!("127.0.0.1:{port}"))
        .args(extra)
        .env_remove("UDT_SECRET")
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Waits until `path` holds at least `bytes` (panics after a minute or if `child` ends).
fn wait_for_size(path: &Path, bytes: u64, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(path).map_or(0, |m| m.len()) < bytes {
        assert!(
            Instant::now() < deadline,
            "{} never reached {bytes} bytes",
            path.display()
        );
        assert!(child.try_wait().unwrap().is_none(), "the peer ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `udt perf client` killed with SIGKILL mid-transfer: the receiving socket (this process,
/// configured with a peer idle timeout) gets `ConnectionLost` within that timeout.
#[test]
fn a_killed_sender_gives_the_receiver_an_error_within_the_peer_timeout() {
    let listener = udt::Builder::new()
        .peer_idle_timeout(Some(PEER_TIMEOUT))
        .listen("127.0.0.1:0", 4)
        .unwrap();
    let mut child = Command::new(UDT)
        .args(["perf", "client", "--time", "60", "--interval", "0"])
        .arg(listener.local_addr().to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (sock, _) = listener.accept().unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0u64;
    while got < 1 << 20 {
        got += sock.recv(&mut buf).expect("recv before the kill") as u64;
    }
    child.kill().unwrap(); // SIGKILL: no Shutdown is sent
    child.wait().unwrap();
    let killed = Instant::now();
    let err = loop {
        match sock.recv(&mut buf) {
            Ok(n) if n > 0 => continue, // data that had arrived before the kill
            Ok(_) => panic!("end of stream, but the peer never closed"),
            Err(e) => break e,
        }
    };
    let took = killed.elapsed();
    println!(
        "receiver: {err} {:.2} s after the sender was killed",
        took.as_secs_f64()
    );
    assert!(matches!(err, udt::Error::ConnectionLost), "{err:?}");
    assert!(
        took >= PEER_TIMEOUT - Duration::from_millis(300),
        "too early: {took:?}"
    );
    assert!(took <= PEER_TIMEOUT + SLACK, "too late: {took:?}");
}

/// `udt perf server` killed mid-transfer: the sending socket here gets an error within its
/// peer idle timeout (its sends block on a full window, then fail).
#[test]
fn a_killed_receiver_gives_the_sender_an_error_within_the_peer_timeout() {
    let port = free_port();
    let mut child = Command::new(UDT)
        .args([
            "perf",
            "server",
            "--bind",
            "127.0.0.1",
            "--interval",
            "0",
            "--port",
        ])
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let sock = loop {
        match udt::Builder::new()
            .peer_idle_timeout(Some(PEER_TIMEOUT))
            .connect_timeout(Duration::from_millis(500))
            .connect(("127.0.0.1", port))
        {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => continue, // the server is starting
            Err(e) => panic!("connect: {e}"),
        }
    };
    // `udt perf` checks a pattern: send what it expects (byte i is i mod 251... whatever it
    // is, a mismatch only makes it report errors, and it is killed anyway).
    let chunk = vec![0u8; 1 << 16];
    let mut sent = 0u64;
    while sent < 2 << 20 {
        sent += sock.send(&chunk).expect("send before the kill") as u64;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    let err = loop {
        if let Err(e) = sock.send(&chunk) {
            break e;
        }
    };
    let took = killed.elapsed();
    println!(
        "sender: {err} {:.2} s after the receiver was killed",
        took.as_secs_f64()
    );
    assert!(matches!(err, udt::Error::ConnectionLost), "{err:?}");
    assert!(took <= PEER_TIMEOUT + SLACK, "too late: {took:?}");
}

/// The receiver is killed with SIGKILL mid-file and started again on the same port; the
/// running `udt send` notices (peer timeout), connects again and resumes from what the
/// receiver kept, and the file arrives identical.
#[test]
fn a_receiver_restarted_mid_file_is_resumed_by_the_running_sender() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data = content(24 << 20, 41);
    let f = src.path().join("big");
    std::fs::write(&f, &data).unwrap();
    let part = dst.path().join(".big.udt-part");
    let port = free_port();
    let mut rx = recv_cmd(dst.path(), port, &[]).spawn().unwrap();
    // Throttled to 40 Mbit/s: about 5 s for the whole file.
    let mut tx = send_cmd(
        &f,
        port,
        &[
            "--json",
            "--max-rate",
            "40",
            "--peer-timeout",
            "2",
            "--retries",
            "20",
        ],
    )
    .spawn()
    .unwrap();
    wait_for_size(&part, 3 << 20, &mut tx);
    rx.kill().unwrap();
    rx.wait().unwrap();
    let kept = std::fs::metadata(&part).unwrap().len();
    assert!(kept >= 3 << 20 && kept < data.len() as u64, "kept {kept}");
    std::thread::sleep(Duration::from_millis(500));
    let rx = recv_cmd(dst.path(), port, &["--once", "--json"])
        .spawn()
        .unwrap();
    let out = wait_output(tx, "udt send", 120);
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("connecting again"), "no retry reported: {err}");
    let resumed = json_field(&out, "resumed_bytes").as_u64().unwrap();
    assert!(
        resumed >= kept,
        "resumed {resumed} of the {kept} bytes kept"
    );
    let rx_out = wait_output(rx, "udt recv", 60);
    assert!(rx_out.status.success(), "{}", text(&rx_out));
    assert!(
        std::fs::read(dst.path().join("big")).unwrap() == data,
        "file differs"
    );
    assert!(!part.exists());
    println!("kept {kept} bytes at the kill, resumed from {resumed}");
}

/// The receiver's disk "fills up" (RLIMIT_FSIZE of 5 MiB in its process, so writes past it fail
/// with EFBIG, as ENOSPC would): it reports a clear error naming the file and what it kept,
/// the sender reports the receiver's abort, the partial file holds an exact prefix, and with
/// the limit gone the same command resumes and the file arrives identical.
#[test]
fn a_full_disk_is_a_clear_error_and_the_partial_file_resumes() {
    const LIMIT: u64 = 5 << 20;
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data = content(12 << 20, 42);
    let f = src.path().join("f");
    std::fs::write(&f, &data).unwrap();
    let part = dst.path().join(".f.udt-part");
    let port = free_port();
    let mut cmd = recv_cmd(dst.path(), port, &["--once"]);
    // SAFETY: between fork and exec only async-signal-safe calls: signal and setrlimit.
    unsafe {
        cmd.pre_exec(|| {
            // Without this the kernel kills the process with SIGXFSZ instead of failing the
            // write (a full disk fails it with ENOSPC; both must be clear errors).
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let rx = cmd.spawn().unwrap();
    let tx = send_cmd(&f, port, &["--json"]).spawn().unwrap();
    let tx_out = wait_output(tx, "udt send", 60);
    let rx_out = wait_output(rx, "udt recv", 60);
    assert!(!rx_out.status.success(), "{}", text(&rx_out));
    assert!(!tx_out.status.success(), "{}", text(&tx_out));
    let rx_err = String::from_utf8_lossy(&rx_out.stderr).into_owned();
    let tx_err = String::from_utf8_lossy(&tx_out.stderr).into_owned();
    println!("receiver said: {}", rx_err.trim());
    println!("sender said: {}", tx_err.trim());
    assert!(rx_err.contains("File too large"), "{rx_err}");
    assert!(rx_err.contains("kept for resume"), "{rx_err}");
    assert!(tx_err.contains("aborted"), "{tx_err}");
    let kept = std::fs::read(&part).expect("partial file kept");
    assert!(
        !kept.is_empty() && kept.len() as u64 <= LIMIT,
        "kept {}",
        kept.len()
    );
    assert!(
        kept[..] == data[..kept.len()],
        "the partial file is not a prefix of the source"
    );
    assert!(!dst.path().join("f").exists());

    let port = free_port();
    let rx = recv_cmd(dst.path(), port, &["--once"]).spawn().unwrap();
    let out = wait_output(
        send_cmd(&f, port, &["--json"]).spawn().unwrap(),
        "udt send",
        60,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        json_field(&out, "resumed_bytes").as_u64(),
        Some(kept.len() as u64)
    );
    assert!(wait_output(rx, "udt recv", 60).status.success());
    assert!(
        std::fs::read(dst.path().join("f")).unwrap() == data,
        "file differs"
    );
}
