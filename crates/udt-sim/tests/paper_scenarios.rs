//! Scaled-down versions of the papers' experiments (the scenario files in `scenarios/ci/`),
//! small enough for CI. Full-size runs and their comparison with the papers are in
//! `docs/results.md`; these tests check that the qualitative results hold at 100 Mb/s.

use udt_sim::{simulate, Report, Scenario};

fn load(text: &str) -> Scenario {
    Scenario::from_toml(text).expect("shipped scenario parses")
}

fn check_integrity(r: &Report) {
    assert!(r.integrity_ok, "{:?}", r.integrity);
}

#[test]
fn every_shipped_scenario_is_valid() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios")).unwrap()
    {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}

/// Paper 000 Fig. 10 / the bar: a single flow fills at least 90 % of the link after
/// start-up.
#[test]
fn single_flow_fills_the_link() {
    let r = simulate(
        &load(include_str!(
            "../../../scenarios/ci/single_100mbps_110ms.toml"
        )),
        1,
    );
    check_integrity(&r);
    let p = &r.phases[0];
    assert!(p.utilization >= 0.90, "utilization {:.3}", p.utilization);
}

/// Paper 000 Table 4's schedule (1-2-3-4-3-2-1 flows), at a tenth of the rate and with 40 s
/// phases. These bars are sanity bars for the short phases, lower than the paper's (which the
/// full-size run is measured against in docs/results.md): a 40 s phase holds only two or three
/// of the rate's saw-tooth cycles, and Jain's index per phase ranges 0.93–1.00 over seeds 1–3
/// (0.88–1.00 for the exact 4.11 algorithm). The Jain bar catches a starved or hogging flow.
#[test]
fn staggered_flows_share_the_link() {
    let r = simulate(
        &load(include_str!("../../../scenarios/ci/table4_100mbps.toml")),
        1,
    );
    check_integrity(&r);
    let counts: Vec<usize> = r.phases.iter().map(|p| p.flows.len()).collect();
    assert_eq!(counts, vec![1, 2, 3, 4, 3, 2, 1]);
    for p in &r.phases {
        assert!(
            p.utilization >= 0.80,
            "phase {:.0}-{:.0}: utilization {:.3}",
            p.start_s,
            p.end_s,
            p.utilization
        );
        assert!(
            p.jain >= 0.90,
            "phase {:.0}-{:.0}: Jain {:.3}",
            p.start_s,
            p.end_s,
            p.jain
        );
        assert!(
            p.loss_rate < 0.01,
            "phase {:.0}-{:.0}: loss {:.2e}",
            p.start_s,
            p.end_s,
            p.loss_rate
        );
    }
}

/// Paper 001 Fig. 6: flows with 1 ms and 100 ms RTT get about the same throughput. 4.11's
/// randomised decreases make single runs vary by ±25 % (docs/results.md), so the claim is
/// checked on the mean over seeds.
#[test]
fn rtt_does_not_bias_throughput() {
    let s = load(include_str!(
        "../../../scenarios/ci/rtt_fairness_100mbps.toml"
    ));
    let ratios: Vec<f64> = (1..=4)
        .map(|seed| {
            let r = simulate(&s, seed);
            check_integrity(&r);
            let f = &r.phases[0].flow_mbps;
            f[1] / f[0]
        })
        .collect();
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    assert!(
        (0.85..=1.15).contains(&mean),
        "ratios {ratios:?}, mean {mean:.3}"
    );
}

/// Paper 001 Figs. 2 and 4: ten flows on 100 Mb/s share it fairly and use it well.
#[test]
fn ten_flows_share_fairly() {
    let r = simulate(
        &load(include_str!(
            "../../../scenarios/many_flows_100mbps_10.toml"
        )),
        1,
    );
    check_integrity(&r);
    let p = &r.phases[0];
    assert!(p.jain >= 0.98, "Jain {:.4}", p.jain);
    assert!(p.utilization >= 0.85, "utilization {:.3}", p.utilization);
}
