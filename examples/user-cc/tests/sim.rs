//! The user's algorithm in the simulator, selected by name in a scenario, like a built-in.

use udt_sim::{simulate, Scenario};

#[test]
fn user_aimd_runs_in_the_simulator_by_name() {
    user_cc::register().unwrap();
    // Two flows on a 50 Mb/s, 20 ms bottleneck whose queue holds about one BDP (83 packets).
    let scenario = Scenario::from_toml(
        r#"
        duration_s = 20.0
        sample_interval_s = 1.0
        warmup_s = 5.0
        [link]
        rate_mbps = 50.0
        queue_packets = 100
        [[flow]]
        cc = "user-aimd"
        rtt_ms = 20.0
        [[flow]]
        cc = "user-aimd"
        rtt_ms = 20.0
        start_s = 2.0
        "#,
    )
    .unwrap();
    let report = simulate(&scenario, 1);
    assert!(report.integrity_ok);
    assert!(report.flows.iter().all(|f| f.cc == user_cc::NAME));
    let both = report.phases.last().unwrap();
    assert_eq!(both.flows.len(), 2);
    // AIMD with a one-BDP queue keeps the link nearly full and shares it fairly.
    assert!(both.utilization >= 0.85, "{}", report.to_text());
    assert!(both.jain >= 0.95, "{}", report.to_text());
    // And it is the window, not UDT's rate control, that reacted to the losses.
    assert!(report.dropped_queue > 0, "{}", report.to_text());
}
