//! Helpers shared by the integration tests of the `udt` binary.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub const UDT: &str = env!("CARGO_BIN_EXE_udt");

/// A UDP port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Deterministic pseudo-random bytes.
pub fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// `udt recv` on 127.0.0.1:`port` into `dir`, with `extra` options, output captured.
pub fn recv_cmd(dir: &Path, port: u16, extra: &[&str]) -> Command {
    let mut c = Command::new(UDT);
    c.args(["recv", "--bind", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .arg("--dir")
        .arg(dir)
        .args(extra)
        .env_remove("UDT_SECRET")
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// A child's status and output, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Field `field` of the one JSON object a command printed.
pub fn json_field(o: &Output, field: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not one JSON object ({e}): {}", text(o)));
    v[field].clone()
}

/// Waits for a child, killing it after `secs` (a hang is a failure, not a stuck suite).
pub fn wait_output_within(mut child: Child, what: &str, secs: u64) -> Output {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} hung; stdout: {} stderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
