//! No congestion-control algorithm can stall a connection: whatever one does with its window
//! and period, a connection with data outstanding recovers through the retransmission timer,
//! so every transfer completes, byte-exact, and the receiver is never silent for long while
//! data is outstanding. Every built-in algorithm, on lossy, reordering and duplicating paths.

use proptest::prelude::*;
use udt_sim::{simulate, Scenario};

/// Every built-in algorithm: the native variants and the library of Composable UDT.
fn algorithms() -> Vec<String> {
    udt_proto::cc::names()
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .collect()
}

/// Longest silence allowed while data is outstanding, seconds: far more than any timer of a
/// live connection (the retransmission timeout backs off, but never past a few seconds on
/// these paths), far less than a stall.
fn silence_bound(rtt_ms: f64) -> f64 {
    (20.0 * rtt_ms / 1e3).max(5.0)
}

#[allow(clippy::too_many_arguments)]
fn scenario(
    cc: &str,
    rate: f64,
    rtt_ms: f64,
    loss: f64,
    reverse_loss: f64,
    reorder: f64,
    duplicate: f64,
    bytes: u64,
) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
duration_s = 400.0
[link]
rate_mbps = {rate}
queue_packets = 60
loss = {loss}
reverse_loss = {reverse_loss}
reorder = {reorder}
reorder_delay_ms = 4.0
duplicate = {duplicate}
[[flow]]
cc = "{cc}"
rtt_ms = {rtt_ms}
bytes = {bytes}
"#
    ))
    .expect("valid scenario")
}

fn check(cc: &str, s: &Scenario, seed: u64) {
    let r = simulate(s, seed);
    let f = &r.integrity[0];
    assert!(r.integrity_ok, "{cc}: integrity {:?}", r.integrity);
    assert!(
        f.complete,
        "{cc}: transfer incomplete: {f:?} (seed {seed}, {s:?})"
    );
    assert_eq!(f.bytes_received, f.bytes_written, "{cc}");
    let bound = silence_bound(s.flows[0].rtt_ms);
    assert!(
        f.max_silence_s <= bound,
        "{cc}: receiver silent {:.2} s > {bound} s with data outstanding (seed {seed}, {s:?})",
        f.max_silence_s
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn every_algorithm_completes_on_hostile_paths(
        which in 0usize..64,
        seed in any::<u64>(),
        rate in 5.0f64..50.0,
        rtt_ms in 1.0f64..150.0,
        loss in 0.0f64..0.08,
        reverse_loss in 0.0f64..0.05,
        reorder in 0.0f64..0.1,
        duplicate in 0.0f64..0.05,
    ) {
        let all = algorithms();
        let cc = &all[which % all.len()];
        check(cc, &scenario(cc, rate, rtt_ms, loss, reverse_loss, reorder, duplicate, 1_500_000), seed);
    }
}

/// Each algorithm once on the same heavily impaired path, so that a regression names it.
#[test]
fn each_algorithm_survives_five_percent_loss_both_ways() {
    for cc in algorithms() {
        let s = scenario(&cc, 20.0, 40.0, 0.05, 0.05, 0.05, 0.02, 1_000_000);
        check(&cc, &s, 7);
    }
}

/// An algorithm that tries its worst — after the first ACK it closes its window and sets an
/// enormous period — still cannot stop the transfer: the engine keeps two packets in flight
/// and a packet a second at least.
#[test]
fn a_hostile_algorithm_cannot_stop_a_transfer() {
    use udt_proto::cc::{CcContext, CongestionControl, FnFactory, SeqNo};
    struct Hostile;
    impl CongestionControl for Hostile {
        fn on_ack(&mut self, ctx: &mut CcContext<'_>, _ack: SeqNo) {
            ctx.set_cwnd_pkts(0.0);
            ctx.set_pkt_snd_period_us(f64::INFINITY);
        }
    }
    let _ = udt_proto::cc::register(
        "hostile-test",
        std::sync::Arc::new(FnFactory::new("hostile-test", || {
            Box::new(Hostile) as Box<dyn CongestionControl>
        })),
    );
    let s = scenario("hostile-test", 20.0, 20.0, 0.02, 0.0, 0.0, 0.0, 30_000);
    let r = simulate(&s, 3);
    let f = &r.integrity[0];
    assert!(f.complete && r.integrity_ok, "{f:?}");
    assert!(f.max_silence_s <= 2.5, "silent {:.2} s", f.max_silence_s);
}
