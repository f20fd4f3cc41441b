//! Simulator speed: wall time of short, fixed scenarios run end to end (set-up, event loop,
//! integrity checks, analysis), as `udt sim` runs them.
//!
//! Throughput is set to the number of datagrams a run simulates, so criterion's `thrpt` is
//! simulated datagrams per wall-clock second, the figure `udt sim` prints; the same figure from
//! one untimed warm-up run is printed first. Every run must produce the same datagram count (the
//! simulation is deterministic) and pass its integrity check.
//!
//! `cargo bench -p udt-sim --bench sim_speed`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use udt_sim::{simulate, Scenario};

/// One 1 Gb/s flow over a 104 ms path with a one-BDP queue: the first seconds of
/// `scenarios/table4.toml` (slow start, the first loss, recovery).
const SINGLE_1G: &str = r#"
duration_s = 3.0
[link]
rate_mbps = 1000.0
queue_packets = 8667
[[flow]]
rtt_ms = 104.0
"#;

/// Four flows with different RTTs joining a 100 Mb/s bottleneck one after the other: more
/// connections, more losses, NAK and timer work per packet.
const FOUR_FLOWS_100M: &str = r#"
duration_s = 20.0
[link]
rate_mbps = 100.0
queue_packets = 867
[[flow]]
rtt_ms = 104.0
[[flow]]
rtt_ms = 50.0
start_s = 1.0
[[flow]]
rtt_ms = 20.0
start_s = 2.0
[[flow]]
rtt_ms = 10.0
start_s = 3.0
"#;

fn sim_speed(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    for (name, toml) in [
        ("single_1g_104ms_3s", SINGLE_1G),
        ("four_flows_100m_20s", FOUR_FLOWS_100M),
    ] {
        let scenario = Scenario::from_toml(toml).expect("benchmark scenario is valid");
        let warm_up = simulate(&scenario, 1);
        assert!(warm_up.integrity_ok, "{name}: integrity check failed");
        let datagrams = warm_up.datagrams;
        println!(
            "{name}: {datagrams} datagrams in {:.3} s wall, {:.0} datagrams/s",
            warm_up.wall_s, warm_up.datagrams_per_wall_s
        );
        group.throughput(Throughput::Elements(datagrams));
        group.bench_function(name, |b| {
            b.iter(|| {
                let report = simulate(black_box(&scenario), 1);
                assert_eq!(report.datagrams, datagrams, "{name}: not deterministic");
                report
            })
        });
    }
    group.finish();
}

criterion_group!(benches, sim_speed);
criterion_main!(benches);
