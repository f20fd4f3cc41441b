//! `udt sim --sweep --seeds`: one run of the matrix per seed, each cell's worst and mean.

use std::process::Command;

const SWEEP: &str = r#"
name = "two seeds"
shape = "rtt_fairness"
ccs = ["udt"]
rates_mbps = [10]
rtts_ms = [10]
queue_bdp = [1]
flows = [2]
duration_s = 12
measure_from_s = 4
[[path]]
name = "plain"
"#;

fn udt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_udt"))
        .args(args)
        .output()
        .expect("run udt")
}

#[test]
fn a_sweep_over_seeds_reports_each_cells_worst_and_mean() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let file = dir.join("two.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let out_dir = dir.join("out");
    let (f, o) = (file.to_str().unwrap(), out_dir.to_str().unwrap());
    let out = udt(&["sim", "--sweep", f, "--seeds", "1-2", "--out", o, "--quiet"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("## worst of each cell over seeds 1,2"),
        "{stdout}"
    );
    assert!(
        stdout.contains("## mean of each cell over seeds 1,2"),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("two.json")).unwrap()).unwrap();
    let ratio = |v: &serde_json::Value| v["throughput_ratio"].as_f64().unwrap();
    let per_seed = json["per_seed"].as_array().unwrap();
    assert_eq!(per_seed.len(), 2);
    let samples: Vec<f64> = per_seed.iter().map(|s| ratio(&s["results"][0])).collect();
    let worst = ratio(&json["results"][0]);
    let mean = ratio(&json["mean"][0]);
    assert_eq!(worst, samples[0].min(samples[1]), "{samples:?}");
    assert!(
        (mean - (samples[0] + samples[1]) / 2.0).abs() < 1e-9,
        "{samples:?}"
    );
    // Each seed's run is the run `--seed N` makes.
    let single = udt(&["sim", "--sweep", f, "--seed", "2", "--out", o, "--quiet"]);
    assert!(single.status.success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("two.json")).unwrap()).unwrap();
    assert_eq!(ratio(&json["results"][0]), samples[1]);
}

#[test]
fn bad_seed_lists_are_refused() {
    for args in [
        &["sim", "--sweep", "x.toml", "--seeds", "3-1"][..],
        &["sim", "--sweep", "x.toml", "--seeds", "a"],
        &["sim", "--sweep", "x.toml", "--seeds", "1-5000"],
        &["sim", "--sweep", "x.toml", "--seed", "1", "--seeds", "1-2"],
        &["sim", "x.toml", "--seeds", "1-2"],
    ] {
        let out = udt(args);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("panicked"),
            "{args:?}"
        );
    }
}
