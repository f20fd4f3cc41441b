//! The result of a simulation run, as printed and as written to JSON.

use serde::Serialize;

use crate::metrics::{self, FlowReport, PhaseReport};
use crate::scenario::Scenario;
use crate::world::{RunOutput, World};

/// Everything a run reports.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Seed used.
    pub seed: u64,
    /// Simulated seconds.
    pub duration_s: f64,
    /// Throughput sample width, seconds.
    pub sample_interval_s: f64,
    /// Bottleneck rate, Mb/s.
    pub link_rate_mbps: f64,
    /// Per-flow results.
    pub flows: Vec<FlowReport>,
    /// Per-phase metrics.
    pub phases: Vec<PhaseReport>,
    /// Every byte every receiver read matched what its sender wrote, with nothing duplicated,
    /// and every finite transfer that finished arrived whole.
    pub integrity_ok: bool,
    /// Per-flow integrity accounting.
    pub integrity: Vec<IntegrityReport>,
    /// Wall-clock seconds the simulation took.
    pub wall_s: f64,
    /// Events processed.
    pub events: u64,
    /// Datagrams offered to the links (both directions).
    pub datagrams: u64,
    /// Datagrams simulated per wall-clock second.
    pub datagrams_per_wall_s: f64,
    /// Datagrams dropped by a full queue.
    pub dropped_queue: u64,
    /// Datagrams dropped by the random loss model.
    pub dropped_loss: u64,
}

/// Integrity of one flow.
#[derive(Debug, Clone, Serialize)]
pub struct IntegrityReport {
    /// Flow ID.
    pub id: usize,
    /// Bytes queued by the sending application.
    pub bytes_written: u64,
    /// Bytes read by the receiving application.
    pub bytes_received: u64,
    /// Bytes read that did not match the sent stream at their offset.
    pub corrupt_bytes: u64,
    /// A finite transfer delivered all its bytes (always true for unlimited flows).
    pub complete: bool,
    /// Longest time the receiver got no data while the transfer was incomplete, seconds.
    pub max_silence_s: f64,
}

/// Runs `scenario` with `seed` and analyses the result.
pub fn simulate(scenario: &Scenario, seed: u64) -> Report {
    let started = std::time::Instant::now();
    let out: RunOutput = World::new(scenario, seed).run();
    let wall_s = started.elapsed().as_secs_f64();
    let (flows, phases) = metrics::analyze(&out.record);
    let integrity: Vec<IntegrityReport> = out
        .flows
        .iter()
        .enumerate()
        .map(|(id, f)| IntegrityReport {
            id,
            bytes_written: f.bytes_written,
            bytes_received: f.bytes_received,
            corrupt_bytes: f.corrupt_bytes,
            complete: f.complete,
            max_silence_s: f.max_silence_s,
        })
        .collect();
    Report {
        seed,
        duration_s: scenario.duration_s,
        sample_interval_s: scenario.sample_interval_s,
        link_rate_mbps: scenario.link.rate_mbps,
        flows,
        phases,
        integrity_ok: out.flows.iter().all(|f| f.ok()),
        integrity,
        wall_s,
        events: out.events,
        datagrams: out.datagrams,
        datagrams_per_wall_s: out.datagrams as f64 / wall_s.max(1e-9),
        dropped_queue: out.dropped_queue,
        dropped_loss: out.dropped_loss,
    }
}

impl Report {
    /// A human-readable summary: one line per flow, then the phase table.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "simulated {:.1} s in {:.1} s wall ({:.0} datagrams/s), seed {}, integrity {}",
            self.duration_s,
            self.wall_s,
            self.datagrams_per_wall_s,
            self.seed,
            if self.integrity_ok { "ok" } else { "FAILED" }
        );
        let _ = writeln!(
            s,
            "{:>4} {:>10} {:>8} {:>8} {:>8} {:>10} {:>12}",
            "flow", "cc", "rtt_ms", "start", "stop", "avg_mbps", "retrans"
        );
        for f in &self.flows {
            let _ = writeln!(
                s,
                "{:>4} {:>10} {:>8.1} {:>8.1} {:>8.1} {:>10.1} {:>12}",
                f.id, f.cc, f.rtt_ms, f.start_s, f.stop_s, f.avg_mbps, f.retransmitted_pkts
            );
        }
        let _ = writeln!(
            s,
            "{:>8} {:>8} {:>6} {:>10} {:>6} {:>6} {:>6} {:>9} {:>7} {:>8}",
            "start",
            "end",
            "flows",
            "eff_mbps",
            "util",
            "jain",
            "stab",
            "loss",
            "rtt_ms",
            "queue_ms"
        );
        for p in &self.phases {
            let _ = writeln!(
                s,
                "{:>8.1} {:>8.1} {:>6} {:>10.1} {:>6.3} {:>6.3} {:>6.3} {:>9.2e} {:>7.1} {:>8.2}",
                p.start_s,
                p.end_s,
                p.flows.len(),
                p.efficiency_mbps,
                p.utilization,
                p.jain,
                p.stability,
                p.loss_rate,
                p.avg_rtt_ms,
                p.avg_queueing_ms
            );
        }
        s
    }
}
