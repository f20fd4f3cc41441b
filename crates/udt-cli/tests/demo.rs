//! `udt demo` end to end, scaled down: receiver, relay and sender as child processes, the
//! copy compared byte for byte, the figures printed.

use std::process::Command;

#[test]
fn a_small_demo_transfers_and_verifies_its_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_udt"))
        .args([
            "demo",
            "--size-mb",
            "4",
            "--rate-mbit",
            "100",
            "--rtt-ms",
            "10",
            "--loss",
            "0.001",
        ])
        .output()
        .expect("run udt demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "udt demo failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("identical"), "{stdout}");
    for figure in ["throughput", "link use", "retransmitted", "RTT"] {
        assert!(stdout.contains(figure), "no {figure} in:\n{stdout}");
    }
}

#[test]
fn bad_demo_arguments_are_refused() {
    for args in [
        ["--loss", "1.5"],
        ["--size-mb", "0"],
        ["--rate-mbit=-3", "--rtt-ms=100"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_udt"))
            .arg("demo")
            .args(args)
            .output()
            .expect("run udt demo");
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("must be"),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
