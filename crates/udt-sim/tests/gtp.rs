//! GTP in the simulator: the flows of a scenario that name `gtp` form one group, whose
//! receiver-side manager shares the receiver's capacity among them max-min fairly, whatever
//! their RTTs.

use udt_sim::{simulate, Scenario};

/// Four GTP flows with RTTs from 10 to 80 ms joining one every `gap_s`, on a 100 Mb/s
/// bottleneck, for `duration_s`; each phase is measured after its first `warmup_s`.
fn scenario(cc: &str, gap_s: f64, duration_s: f64, warmup_s: f64) -> Scenario {
    let mut toml = format!(
        "duration_s = {duration_s}\nsample_interval_s = 0.25\nwarmup_s = {warmup_s}\n\
         [link]\nrate_mbps = 100.0\nqueue_packets = 200\n",
    );
    for (i, rtt) in [10.0, 20.0, 40.0, 80.0].iter().enumerate() {
        toml += &format!(
            "[[flow]]\ncc = \"{cc}\"\nrtt_ms = {rtt}\nstart_s = {}\n",
            i as f64 * gap_s
        );
    }
    Scenario::from_toml(&toml).unwrap()
}

#[test]
fn a_gtp_group_shares_the_receiver_capacity_fairly() {
    // Receiver capacity 60 Mb/s, below the bottleneck's 100: the manager, not the network,
    // is what limits the flows.
    let report = simulate(&scenario("gtp:60", 1.5, 6.0, 0.5), 1);
    assert!(report.integrity_ok);
    let last = report.phases.last().unwrap();
    assert_eq!(last.flows.len(), 4);
    // Payload throughput: the capacity counts UDT, UDP and IP headers too (1500-byte packets
    // carry 1456 payload bytes), so the group's share is at most 60 · 1456/1500 = 58.2 Mb/s.
    // Had each flow its own manager, they would fill the 100 Mb/s link instead.
    assert!(
        (54.0..=58.3).contains(&last.efficiency_mbps),
        "{}",
        report.to_text()
    );
    assert!(last.jain >= 0.98, "{}", report.to_text());
    // Nothing is lost: the group never asks the link for more than it carries.
    assert_eq!(report.dropped_queue, 0, "{}", report.to_text());
    // Every phase (1, 2, 3, then 4 flows) shares the capacity equally.
    for p in &report.phases {
        assert!(p.jain >= 0.98, "{}", report.to_text());
    }
}

#[test]
fn a_gtp_group_behind_a_narrower_link_still_shares_it_fairly() {
    // Default receiver capacity (1 Gb/s) behind a 100 Mb/s bottleneck, which GTP does not
    // expect: the demands come down on loss until the flows fit the link, and converge
    // (additive increase, multiplicative decrease).
    let report = simulate(&scenario("gtp", 0.5, 8.0, 2.0), 1);
    assert!(report.integrity_ok);
    let last = report.phases.last().unwrap();
    assert_eq!(last.flows.len(), 4);
    assert!(last.jain >= 0.95, "{}", report.to_text());
    assert!(last.utilization >= 0.8, "{}", report.to_text());
    assert!(last.loss_rate <= 0.08, "{}", report.to_text());
}
