//! Host stalls (`stall_ms`): a path that now and then stops handing packets over and then
//! hands over what it held, in order.

use udt_sim::{simulate, Scenario};

fn scenario(stall: &str) -> Scenario {
    let text = format!(
        "duration_s = 20.0\nwarmup_s = 5.0\n[link]\nrate_mbps = 100.0\nqueue_packets = 170\n\
         {stall}\n[[flow]]\nrtt_ms = 20.0\n"
    );
    Scenario::from_toml(&text).expect("test scenario parses")
}

/// Stalls of 10 ms every 25 ms on a 20 ms path (the RTT swings by half) lose nothing and
/// reorder nothing: every byte arrives whole, hardly anything is sent twice, and the flow still
/// fills most of the link.
#[test]
fn stalls_delay_packets_without_losing_or_reordering_them() {
    for seed in [1, 2] {
        let r = simulate(&scenario("stall_ms = 10\nstall_every_ms = 25"), seed);
        assert!(r.integrity_ok, "seed {seed}: {:?}", r.integrity);
        assert_eq!(r.dropped_loss, 0);
        let f = &r.flows[0];
        assert!(
            f.retransmitted_pkts * 100 <= f.sent_pkts,
            "seed {seed}: {} of {} sent twice",
            f.retransmitted_pkts,
            f.sent_pkts
        );
        let p = &r.phases[0];
        assert!(p.utilization > 0.8, "seed {seed}: {:.3}", p.utilization);
    }
}

/// A stall must be shorter than the time between stalls; both are validated.
#[test]
fn stalls_out_of_range_are_refused() {
    for bad in [
        "stall_ms = 10\nstall_every_ms = 10",
        "stall_ms = -1\nstall_every_ms = 10",
        "stall_ms = 1\nstall_every_ms = 20000",
    ] {
        let text = format!(
            "duration_s = 1.0\n[link]\nrate_mbps = 10.0\nqueue_packets = 100\n{bad}\n\
             [[flow]]\nrtt_ms = 10.0\n"
        );
        assert!(Scenario::from_toml(&text).is_err(), "{bad}");
    }
}
