//! The scaled-down matrix CI runs (`scenarios/sweep/ci.toml`): one flow of the default `udt`
//! at 10 Mb/s–1 Gb/s × 10 and 100 ms × no, 0.1 % and 1 % random loss × plain and clumped
//! receivers, one-BDP queue, 40 s each, measured from 10 s.
//!
//! The simulation is deterministic, so these are floors on figures, not timing. They are the
//! issue's targets (≥ 0.90 without loss and at 0.1 %, ≥ 0.75 at 1 %); the default measures
//! lossless 0.923–0.968, 0.1 % 0.924–0.965 and 1 % 0.889–0.942 today (docs/results.md,
//! sixteenth round, lists every cell). Until the sixteenth round three clumped cells at 0.1 %
//! (0.880–0.895) were below the target, and the floors sat under them.

use udt_sim::sweep::CellResult;
use udt_sim::SweepSpec;

fn ci_matrix() -> Vec<CellResult> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/sweep/ci.toml");
    let text = std::fs::read_to_string(path).expect("scenarios/sweep/ci.toml");
    let spec = SweepSpec::from_toml(&text).expect("valid sweep");
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    spec.run(jobs, &|_, _, _| {})
}

fn describe(r: &CellResult) -> String {
    format!(
        "{} {} Mb/s {} ms loss {}: util {:.3} t90 {:?} retrans {:.2e}",
        r.cell.path,
        r.cell.rate_mbps,
        r.cell.rtt_ms,
        r.cell.loss,
        r.utilization,
        r.t90_s,
        r.retrans_ratio
    )
}

#[test]
fn default_holds_its_floors_on_the_ci_matrix() {
    let results = ci_matrix();
    assert_eq!(results.len(), 36, "3 rates x 2 RTTs x 3 losses x 2 paths");
    let mut failures = Vec::new();
    for r in &results {
        let line = describe(r);
        eprintln!("{line}");
        if !r.integrity_ok {
            failures.push(format!("integrity: {line}"));
        }
        // The targets: 0.90 without loss and at 0.1 %, 0.75 at 1 %.
        let floor = if r.cell.loss <= 0.001 { 0.90 } else { 0.75 };
        if r.utilization < floor {
            failures.push(format!("below {floor}: {line}"));
        }
        // Without random loss the flow reaches 90 % of the link within 8 s (the issue's
        // target; paper: 7.5 s at 1 Gb/s, 110 ms) and retransmits under 1 % of what it sends.
        if r.cell.loss == 0.0 {
            if !r.t90_s.is_some_and(|t| t <= 8.0) {
                failures.push(format!("slow to 90 %: {line}"));
            }
            if r.retrans_ratio > 0.01 {
                failures.push(format!("retransmits: {line}"));
            }
        } else if r.retrans_ratio > 3.0 * r.cell.loss + 0.01 {
            // Random loss costs about one retransmission per lost packet, not a burst.
            failures.push(format!("retransmits: {line}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Runs the 2- and 4-flow cells of `scenarios/sweep/shared_short.toml` at one rate, RTT and
/// queue (the default only) and returns what misses the bars: integrity, utilization ≥ 0.90,
/// Jain ≥ `min_jain`, packets lost at the queue ≤ `max_loss`.
fn shared_short_misses(rate_mbps: f64, rtt_ms: f64, min_jain: f64, max_loss: f64) -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/sweep/shared_short.toml"
    );
    let text = std::fs::read_to_string(path).expect("scenarios/sweep/shared_short.toml");
    let mut spec = SweepSpec::from_toml(&text).expect("valid sweep");
    spec.ccs = vec!["udt".into()];
    spec.rates_mbps = vec![rate_mbps];
    spec.rtts_ms = vec![rtt_ms];
    spec.queue_bdp = vec![0.1];
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results = spec.run(jobs, &|_, _, _| {});
    assert_eq!(results.len(), 2, "2 and 4 flows");
    let mut failures = Vec::new();
    for r in &results {
        let line = format!(
            "{rate_mbps} Mb/s, {rtt_ms} ms, {} flows: util {:.3} jain {:?} loss {:.2e}",
            r.cell.flows, r.utilization, r.jain, r.loss_rate
        );
        eprintln!("{line}");
        if !r.integrity_ok {
            failures.push(format!("integrity: {line}"));
        }
        if r.utilization < 0.90 {
            failures.push(format!("utilization: {line}"));
        }
        if !r.jain.is_some_and(|j| j >= min_jain) {
            failures.push(format!("fairness: {line}"));
        }
        if r.loss_rate > max_loss {
            failures.push(format!("overflow: {line}"));
        }
    }
    failures
}

/// Flows of the default sharing a queue too shallow to show in the RTT: 1 Gb/s, 2 ms, 0.1 BDP
/// (17 packets, 0.2 ms). Before the twenty-second round every overflow loss there counted as
/// random: two flows lost 1.1 % of their packets, four 2.1 % at a Jain index of 0.44 (UDT4
/// 4.11: 0.997). After it 0.007 % and 0.08 %, Jain 1.000 and 0.996; after the twenty-third
/// round 0.003 % and 0.06 %, Jain 0.998 and 0.929, which the bar of 0.92 allows for (the
/// four-flow cell is one that round made worse: docs/results.md, twenty-third round).
#[test]
fn flows_sharing_a_shallow_queue_share_it_without_overflowing_it() {
    let failures = shared_short_misses(1000.0, 2.0, 0.92, 0.002);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Flows of the default sharing 10 packets of queue at 100 Mb/s, 1 ms. Until the twenty-third
/// round they learnt their own overflows as random loss, and four shared at a Jain index of
/// 0.70 with 3.2 % of their packets lost (UDT4 4.11: 0.97, 0.02 %); after it, 0.97 and
/// 0.84 % (docs/results.md, twenty-third round).
#[test]
fn flows_sharing_ten_packets_at_100_mbps_do_not_take_their_overflows_for_random_loss() {
    let failures = shared_short_misses(100.0, 1.0, 0.95, 0.01);
    assert!(failures.is_empty(), "{failures:#?}");
}
