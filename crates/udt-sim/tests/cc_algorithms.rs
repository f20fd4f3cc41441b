//! The congestion-control library (issue 5) in the simulator, at CI scale: each judged
//! behaviour on a 100 Mb/s (or smaller-window) version of the experiment in `docs/cc.md`.

use udt_sim::{simulate, Report, Scenario};

/// Payload bytes per packet at the default MSS of 1500 (IP/UDP 28 + UDT 16 bytes of headers).
const PAYLOAD: f64 = 1456.0;

/// A scenario of `flows` (TOML `[[flow]]` tables) on one link.
fn run(duration_s: f64, warmup_s: f64, link: &str, flows: &str) -> Report {
    let text = format!(
        "duration_s = {duration_s}\nwarmup_s = {warmup_s}\nseed = 1\n[link]\n{link}\n{flows}"
    );
    let s = Scenario::from_toml(&text).expect("test scenario parses");
    let r = simulate(&s, 1);
    assert!(r.integrity_ok, "{:?}", r.integrity);
    r
}

fn flow(cc: &str, rtt_ms: f64, count: u32) -> String {
    format!("[[flow]]\ncc = \"{cc}\"\nrtt_ms = {rtt_ms}\ncount = {count}\n")
}

#[test]
fn every_cc_scenario_is_valid() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/cc");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n > 0);
}

/// CTCP under random loss tracks the TCP model `1.22·MSS/(RTT·√p)` within 25 %.
#[test]
fn ctcp_tracks_the_tcp_throughput_model() {
    for p in [1e-3f64, 1e-2] {
        let r = run(
            60.0,
            5.0,
            &format!("rate_mbps = 100.0\nqueue_packets = 2000\nloss = {p}"),
            &flow("tcp", 10.0, 1),
        );
        let ph = &r.phases[0];
        let model_mbps = 1.22 * PAYLOAD * 8.0 / (ph.avg_rtt_ms / 1000.0 * p.sqrt()) / 1e6;
        let ratio = ph.efficiency_mbps / model_mbps;
        assert!(
            (0.75..=1.25).contains(&ratio),
            "p {p}: {:.2} Mb/s vs model {model_mbps:.2} (rtt {:.2} ms)",
            ph.efficiency_mbps,
            ph.avg_rtt_ms
        );
    }
}

/// `n` parallel CTCP flows on one 100 Mb/s bottleneck with 30 ms RTT and a half-BDP queue
/// share it fairly (paper 003 Table 2: Jain >= 0.98) and fill it.
fn parallel_ctcp(n: u32) {
    let r = run(
        60.0,
        10.0,
        "rate_mbps = 100.0\nqueue_packets = 125",
        &flow("tcp", 30.0, n),
    );
    let ph = &r.phases[0];
    assert_eq!(ph.flows.len(), n as usize);
    assert!(
        ph.jain >= 0.98,
        "{n} flows: jain {:.4}: {:?}",
        ph.jain,
        ph.flow_mbps
    );
    assert!(
        ph.utilization >= 0.85,
        "{n} flows: utilization {:.3}",
        ph.utilization
    );
}

#[test]
fn two_parallel_ctcp_flows_share_fairly() {
    parallel_ctcp(2);
}

#[test]
fn eight_parallel_ctcp_flows_share_fairly() {
    parallel_ctcp(8);
}

#[test]
fn sixteen_parallel_ctcp_flows_share_fairly() {
    parallel_ctcp(16);
}

/// Utilisation of one `cc` flow on a 100 Mb/s path with 100 ms RTT (833-packet pipe and
/// queue) and light random loss, 10^-5: CTCP's model rate there is about 45 Mb/s.
fn lossy_long_fat_pipe(cc: &str) -> f64 {
    let r = run(
        40.0,
        10.0,
        "rate_mbps = 100.0\nqueue_packets = 833\nloss = 1e-5",
        &flow(cc, 100.0, 1),
    );
    r.phases[0].utilization
}

#[test]
fn ctcp_underuses_a_lossy_long_fat_pipe() {
    let u = lossy_long_fat_pipe("tcp");
    assert!(u < 0.6, "tcp {u:.3}");
}

/// Scalable, HighSpeed and BiC fill it (far above CTCP's bound just above).
#[test]
fn scalable_fills_a_lossy_long_fat_pipe() {
    let u = lossy_long_fat_pipe("scalable");
    assert!(u >= 0.85, "scalable {u:.3}");
}

#[test]
fn highspeed_fills_a_lossy_long_fat_pipe() {
    let u = lossy_long_fat_pipe("highspeed");
    assert!(u >= 0.8, "highspeed {u:.3}");
}

#[test]
fn bic_fills_a_lossy_long_fat_pipe() {
    let u = lossy_long_fat_pipe("bic");
    assert!(u >= 0.85, "bic {u:.3}");
}

/// Average queueing delay of two `cc` flows with 20 ms RTT on a 100 Mb/s link with a
/// 1000-packet (120 ms) queue, ms; the flows must still fill the link. One packet is 0.12 ms.
fn queueing_ms(cc: &str) -> f64 {
    let r = run(
        30.0,
        10.0,
        "rate_mbps = 100.0\nqueue_packets = 1000",
        &flow(cc, 20.0, 2),
    );
    let ph = &r.phases[0];
    assert!(
        ph.utilization >= 0.9,
        "{cc}: utilization {:.3}",
        ph.utilization
    );
    ph.avg_queueing_ms
}

/// CTCP fills the queue (the reference for the two below).
#[test]
fn ctcp_fills_the_queue() {
    let q = queueing_ms("tcp");
    assert!(q > 30.0, "tcp queueing {q:.2} ms");
}

/// Vegas keeps 1 to 3 packets per flow queued.
#[test]
fn vegas_keeps_the_queue_short() {
    let q = queueing_ms("vegas");
    assert!(q < 2.0, "vegas queueing {q:.2} ms");
}

/// FAST keeps alpha = 50 packets per flow queued: 12 ms for two flows.
#[test]
fn fast_keeps_the_queue_short() {
    let q = queueing_ms("fast");
    assert!(q < 16.0, "fast queueing {q:.2} ms");
}

/// TCP friendliness index of a UDT algorithm (paper 000 §5.1, paper 001 Fig. 5): 5 UDT and 10
/// CTCP flows against 15 CTCP flows on 100 Mb/s with a max(BDP, 100)-packet queue; the mean
/// CTCP throughput of the first run over that of the second.
fn friendliness(cc: &str, rtt_ms: f64, queue: u32) -> f64 {
    let link = format!("rate_mbps = 100.0\nqueue_packets = {queue}");
    let mixed = run(
        60.0,
        20.0,
        &link,
        &(flow(cc, rtt_ms, 5) + &flow("tcp", rtt_ms, 10)),
    );
    let tcp = run(60.0, 20.0, &link, &flow("tcp", rtt_ms, 15));
    let (m, t) = (&mixed.phases[0], &tcp.phases[0]);
    let tcp_in_mixed: Vec<f64> = m
        .flows
        .iter()
        .zip(&m.flow_mbps)
        .filter(|(id, _)| mixed.flows[**id].cc == "tcp")
        .map(|(_, x)| *x)
        .collect();
    assert_eq!(tcp_in_mixed.len(), 10);
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    mean(&tcp_in_mixed) / mean(&t.flow_mbps)
}

/// At a small BDP native UDT takes no more than a TCP flow would.
#[test]
fn native_udt_is_friendly_to_ctcp_at_10ms() {
    let t = friendliness("udt-native", 10.0, 100);
    assert!(t >= 1.0, "T = {t:.3}");
}

/// At 100 ms native UDT takes more than TCP's share, but TCP keeps well over the paper's 20 %.
#[test]
fn ctcp_keeps_most_of_its_share_against_native_udt_at_100ms() {
    let t = friendliness("udt-native", 100.0, 833);
    assert!((0.3..=1.0).contains(&t), "T = {t:.3}");
}

/// The default takes random loss in stride, but a queue that TCP keeps full is congestion to
/// it: at 10 ms it is as friendly as native UDT, and at 100 ms TCP keeps more than the
/// paper's 20 % (measured 1.38 and 0.35; native UDT 1.39 and 0.63 — docs/cc.md says what
/// the gap buys).
#[test]
fn default_udt_does_not_starve_ctcp() {
    let t = friendliness("udt", 10.0, 100);
    eprintln!("udt, 10 ms: T = {t:.3}");
    assert!(t >= 1.0, "10 ms: T = {t:.3}");
    let t = friendliness("udt", 100.0, 833);
    eprintln!("udt, 100 ms: T = {t:.3}");
    assert!((0.2..=1.0).contains(&t), "100 ms: T = {t:.3}");
}

/// UDP Blast sends at its set rate (within 1 %), whatever the spare capacity.
#[test]
fn udp_blast_holds_its_rate() {
    let r = run(
        20.0,
        2.0,
        "rate_mbps = 100.0\nqueue_packets = 1000",
        &flow("udpblast:30", 50.0, 1),
    );
    // 30 Mb/s of 1500-byte datagrams carry 30·1456/1500 Mb/s of payload.
    let expected = 30.0 * PAYLOAD / 1500.0;
    let got = r.phases[0].efficiency_mbps;
    assert!(
        (got / expected - 1.0).abs() < 0.01,
        "{got:.3} Mb/s vs {expected:.3}"
    );
}
