//! Sweeps: one experiment run over a matrix of paths — rate × RTT × queue × loss × path
//! impairment (clumped delivery, ACK compression, jitter, reverse loss) — for several
//! congestion-control algorithms side by side, with the metrics that judge each shape of
//! experiment.
//!
//! A sweep file (TOML) names the shape and the axes:
//!
//! ```toml
//! name = "single flow"
//! shape = "single"          # single | rtt_fairness | staggered | friendliness
//! ccs = ["udt", "udt4"]
//! rates_mbps = [10, 100, 1000]
//! rtts_ms = [1, 10, 100, 400]
//! queue_bdp = [0.1, 1, 4]   # DropTail queue, in bandwidth-delay products (of the largest RTT)
//! loss = [0, 0.001, 0.01]   # random loss per data packet
//! duration_s = 40
//! measure_from_s = 10
//! [[path]]
//! name = "plain"
//! [[path]]
//! name = "clumped"
//! rx_coalesce_us = 125
//! rx_coalesce_pkts = 32
//! ```
//!
//! Shapes:
//! * `single`: one flow. Utilization from `measure_from_s` to the end, the time until a 1 s
//!   sample first reaches 90 % of the link rate, loss and retransmissions.
//! * `rtt_fairness`: `flows` flows (each count of the list is a cell) whose RTTs are spread
//!   geometrically from `min_rtt_ms` to the cell's RTT (paper 001 Fig. 6 with more flows):
//!   the ratio of the smallest to the largest flow's throughput, Jain's index, utilization.
//! * `staggered`: paper 000 Table 4's shape: four flows, one joining every `phase_s` seconds
//!   and leaving in reverse order (seven phases). Per phase, after `phase_warmup_s`: the worst
//!   utilization, Jain's index and stability.
//! * `friendliness`: paper 001's TCP-friendliness test: `udt_flows` flows of the algorithm
//!   with `tcp_flows` `tcp` flows, against a run of as many `tcp` flows alone; T = the mean
//!   `tcp` throughput in the first run over the second's (1 = ideal, < 1 = the algorithm
//!   takes more than TCP would).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::metrics::{FlowReport, PhaseReport};
use crate::report::simulate;
use crate::scenario::{FlowSpec, LinkSpec, Scenario};

/// Bytes of a full-sized packet on the wire, for bandwidth-delay products.
const PACKET_BYTES: f64 = 1500.0;

/// The experiment run in every cell.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// One flow.
    Single,
    /// Flows with different RTTs sharing the link.
    RttFairness,
    /// Four flows joining and leaving one by one.
    Staggered,
    /// The algorithm against TCP.
    Friendliness,
}

/// One impairment profile of the path (an axis of the matrix).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Name shown in tables and heat maps.
    pub name: String,
    /// See [`LinkSpec::rx_coalesce_us`].
    #[serde(default)]
    pub rx_coalesce_us: f64,
    /// See [`LinkSpec::rx_coalesce_pkts`].
    #[serde(default)]
    pub rx_coalesce_pkts: u32,
    /// See [`LinkSpec::rx_clump_gap_us`].
    #[serde(default)]
    pub rx_clump_gap_us: f64,
    /// See [`LinkSpec::ack_coalesce_us`].
    #[serde(default)]
    pub ack_coalesce_us: f64,
    /// See [`LinkSpec::ack_coalesce_pkts`].
    #[serde(default)]
    pub ack_coalesce_pkts: u32,
    /// See [`LinkSpec::sender_burst_us`].
    #[serde(default)]
    pub sender_burst_us: f64,
    /// See [`LinkSpec::sender_burst_by_rtt`].
    #[serde(default)]
    pub sender_burst_by_rtt: bool,
    /// See [`LinkSpec::jitter_ms`].
    #[serde(default)]
    pub jitter_ms: f64,
    /// See [`LinkSpec::reverse_loss`].
    #[serde(default)]
    pub reverse_loss: f64,
    /// See [`LinkSpec::stall_ms`].
    #[serde(default)]
    pub stall_ms: f64,
    /// See [`LinkSpec::stall_every_ms`].
    #[serde(default)]
    pub stall_every_ms: f64,
}

fn default_measure_from() -> f64 {
    10.0
}
fn default_duration() -> f64 {
    40.0
}
fn default_seed() -> u64 {
    1
}
fn default_min_queue() -> u32 {
    10
}
fn default_min_rtt() -> f64 {
    1.0
}
fn default_phase() -> f64 {
    60.0
}
fn default_phase_warmup() -> f64 {
    15.0
}
fn default_flows() -> Vec<u32> {
    vec![2]
}
fn default_udt_flows() -> u32 {
    5
}
fn default_tcp_flows() -> u32 {
    10
}
fn default_paths() -> Vec<PathSpec> {
    vec![PathSpec {
        name: "plain".to_owned(),
        ..Default::default()
    }]
}

/// A sweep as written in a TOML file (see the module documentation).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Title of the sweep.
    pub name: String,
    /// The experiment of every cell.
    pub shape: Shape,
    /// Algorithms compared, side by side on every cell.
    pub ccs: Vec<String>,
    /// Bottleneck rates, Mb/s.
    pub rates_mbps: Vec<f64>,
    /// RTTs, ms (for `rtt_fairness`: the largest RTT of the cell).
    pub rtts_ms: Vec<f64>,
    /// Queue sizes in bandwidth-delay products (rate × largest RTT / 1500 bytes).
    pub queue_bdp: Vec<f64>,
    /// Random loss probabilities of data packets.
    #[serde(default)]
    pub loss: Vec<f64>,
    /// Path impairment profiles.
    #[serde(rename = "path", default = "default_paths")]
    pub paths: Vec<PathSpec>,
    /// Run length, s (`single`, `rtt_fairness`, `friendliness`).
    #[serde(default = "default_duration")]
    pub duration_s: f64,
    /// Start of the measured interval, s (`single`, `rtt_fairness`, `friendliness`).
    #[serde(default = "default_measure_from")]
    pub measure_from_s: f64,
    /// Smallest queue, packets, whatever the BDP.
    #[serde(default = "default_min_queue")]
    pub min_queue_pkts: u32,
    /// `rtt_fairness`: flow counts (an axis).
    #[serde(default = "default_flows")]
    pub flows: Vec<u32>,
    /// `rtt_fairness`: the smallest RTT of a cell, ms.
    #[serde(default = "default_min_rtt")]
    pub min_rtt_ms: f64,
    /// `staggered`: seconds between flow arrivals (phase length).
    #[serde(default = "default_phase")]
    pub phase_s: f64,
    /// `staggered`: seconds at the start of each phase left out of its metrics.
    #[serde(default = "default_phase_warmup")]
    pub phase_warmup_s: f64,
    /// `friendliness`: flows of the algorithm.
    #[serde(default = "default_udt_flows")]
    pub udt_flows: u32,
    /// `friendliness`: `tcp` flows beside them.
    #[serde(default = "default_tcp_flows")]
    pub tcp_flows: u32,
    /// Seed of every cell.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

/// A sweep that cannot run.
#[derive(Debug, Error)]
pub enum SweepError {
    /// The TOML could not be parsed.
    #[error("sweep file: {0}")]
    Parse(#[from] toml::de::Error),
    /// A value is out of range, or a cell's scenario is invalid.
    #[error("sweep: {0}")]
    Invalid(String),
}

/// One cell of the matrix, for one algorithm.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Cell {
    /// Algorithm.
    pub cc: String,
    /// Bottleneck rate, Mb/s.
    pub rate_mbps: f64,
    /// RTT, ms (largest RTT for `rtt_fairness`).
    pub rtt_ms: f64,
    /// Queue, bandwidth-delay products.
    pub queue_bdp: f64,
    /// Queue, packets.
    pub queue_pkts: u32,
    /// Random loss of data packets.
    pub loss: f64,
    /// Path profile name.
    pub path: String,
    /// Flows of the cell's algorithm.
    pub flows: u32,
}

/// What one cell measured. Fields that do not apply to the shape are `None`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CellResult {
    /// The cell.
    #[serde(flatten)]
    pub cell: Cell,
    /// Aggregate goodput over the measured interval (worst phase for `staggered`) / link rate.
    pub utilization: f64,
    /// Packets dropped at the bottleneck / offered, over the measured interval (worst phase).
    pub loss_rate: f64,
    /// Packets retransmitted / packets sent, whole run, all flows of the algorithm.
    pub retrans_ratio: f64,
    /// Seconds until a 1 s sample of the aggregate first reached 90 % of the link rate
    /// (`single`); `None` if it never did.
    pub t90_s: Option<f64>,
    /// Jain's index (worst phase for `staggered`).
    pub jain: Option<f64>,
    /// Smallest over largest flow throughput (`rtt_fairness`).
    pub throughput_ratio: Option<f64>,
    /// Worst stability index over phases (`staggered`), or of the measured interval.
    pub stability: Option<f64>,
    /// TCP friendliness index T (`friendliness`).
    pub friendliness: Option<f64>,
    /// Mean queueing delay experienced, ms (measured interval; worst phase).
    pub queueing_ms: f64,
    /// Every byte arrived intact in every run of the cell.
    pub integrity_ok: bool,
    /// Wall-clock seconds the cell took.
    pub wall_s: f64,
}

impl SweepSpec {
    /// Parses and validates a sweep file.
    pub fn from_toml(text: &str) -> Result<Self, SweepError> {
        let s: SweepSpec = toml::from_str(text)?;
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> Result<(), SweepError> {
        let bad = |m: &str| Err(SweepError::Invalid(m.to_owned()));
        if self.ccs.is_empty()
            || self.rates_mbps.is_empty()
            || self.rtts_ms.is_empty()
            || self.queue_bdp.is_empty()
            || self.paths.is_empty()
            || self.flows.is_empty()
        {
            return bad("every axis needs at least one value");
        }
        if !self.queue_bdp.iter().all(|&q| q.is_finite() && q > 0.0) {
            return bad("queue_bdp values must be positive");
        }
        if !(self.measure_from_s >= 0.0 && self.measure_from_s < self.duration_s) {
            return bad("measure_from_s must be within [0, duration_s)");
        }
        if self.shape == Shape::Staggered
            && !(self.phase_s > 0.0 && (0.0..self.phase_s).contains(&self.phase_warmup_s))
        {
            return bad("phase_s must be positive and phase_warmup_s within [0, phase_s)");
        }
        if self.flows.iter().any(|&n| n == 0 || n > 64) {
            return bad("flows must be between 1 and 64");
        }
        if self.cells().len() > 100_000 {
            return bad("too many cells (at most 100000)");
        }
        // Every cell's scenario must be valid: build them all once.
        for cell in self.cells() {
            for s in self.scenarios(&cell) {
                s.validate()
                    .map_err(|e| SweepError::Invalid(format!("{cell:?}: {e}")))?;
            }
        }
        Ok(())
    }

    fn losses(&self) -> Vec<f64> {
        if self.loss.is_empty() {
            vec![0.0]
        } else {
            self.loss.clone()
        }
    }

    /// Every cell, algorithms innermost so that a cell's algorithms sit side by side.
    pub fn cells(&self) -> Vec<Cell> {
        let flows = match self.shape {
            Shape::RttFairness => self.flows.clone(),
            Shape::Staggered => vec![4],
            Shape::Single => vec![1],
            Shape::Friendliness => vec![self.udt_flows],
        };
        let mut out = Vec::new();
        for path in &self.paths {
            for &loss in &self.losses() {
                for &queue_bdp in &self.queue_bdp {
                    for &n in &flows {
                        for &rtt in &self.rtts_ms {
                            for &rate in &self.rates_mbps {
                                let bdp = rate * 1e6 * rtt / 1e3 / 8.0 / PACKET_BYTES;
                                let queue_pkts = ((bdp * queue_bdp).round() as u32)
                                    .max(self.min_queue_pkts)
                                    .max(1);
                                for cc in &self.ccs {
                                    out.push(Cell {
                                        cc: cc.clone(),
                                        rate_mbps: rate,
                                        rtt_ms: rtt,
                                        queue_bdp,
                                        queue_pkts,
                                        loss,
                                        path: path.name.clone(),
                                        flows: n,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    fn link(&self, cell: &Cell) -> LinkSpec {
        let p = self
            .paths
            .iter()
            .find(|p| p.name == cell.path)
            .cloned()
            .unwrap_or_default();
        LinkSpec {
            rate_mbps: cell.rate_mbps,
            queue_packets: cell.queue_pkts,
            loss: cell.loss,
            reverse_loss: p.reverse_loss,
            reorder: 0.0,
            reorder_delay_ms: 1.0,
            duplicate: 0.0,
            jitter_ms: p.jitter_ms,
            access_rate_mbps: None,
            rx_coalesce_us: p.rx_coalesce_us,
            rx_coalesce_pkts: p.rx_coalesce_pkts,
            rx_clump_gap_us: p.rx_clump_gap_us,
            ack_coalesce_us: p.ack_coalesce_us,
            ack_coalesce_pkts: p.ack_coalesce_pkts,
            sender_burst_us: p.sender_burst_us,
            sender_burst_by_rtt: p.sender_burst_by_rtt,
            stall_ms: p.stall_ms,
            stall_every_ms: p.stall_every_ms,
        }
    }

    fn flow(cc: &str, rtt_ms: f64, start_s: f64, stop_s: Option<f64>) -> FlowSpec {
        FlowSpec {
            cc: cc.to_owned(),
            rtt_ms,
            start_s,
            stop_s,
            bytes: None,
            count: 1,
            mss: None,
            recv_buffer_pkts: None,
            send_buffer_pkts: None,
            flight_flag_size: None,
            message_size: None,
            periodic_nak: None,
        }
    }

    /// The scenario(s) a cell runs: one, or two for `friendliness` (mixed, then TCP alone).
    pub fn scenarios(&self, cell: &Cell) -> Vec<Scenario> {
        // Windows and buffers must cover the path, or the buffers, not the algorithm, limit
        // the flow: twice the largest BDP plus the queue, and never less than a connection's
        // default receive buffer and flight window (what a user gets without tuning). Under
        // 1 % random loss the packets held behind holes reach about eight BDPs (see
        // `udt_proto::cc::udt`); twice the BDP plus the queue, smaller than the default on a
        // 1 Gb/s, 100 ms path, held that path's one-BDP cell at 1 % loss to 0.77 of the link
        // (mean of four seeds), against 0.95 with the defaults.
        let bdp = cell.rate_mbps * 1e6 * cell.rtt_ms / 1e3 / 8.0 / PACKET_BYTES;
        let defaults = udt_proto::ConnectionConfig::default();
        let floor = defaults.recv_buffer_pkts.min(defaults.flight_flag_size);
        let window = ((2.0 * bdp) as u32 + 2 * cell.queue_pkts).clamp(floor, 1 << 20);
        let sized = |mut f: FlowSpec| {
            f.recv_buffer_pkts = Some(window);
            f.send_buffer_pkts = Some(window);
            f.flight_flag_size = Some(window);
            f
        };
        let base = |duration_s: f64, warmup_s: f64, flows: Vec<FlowSpec>| Scenario {
            duration_s,
            sample_interval_s: 1.0,
            warmup_s,
            seed: self.seed,
            link: self.link(cell),
            flows: flows.into_iter().map(sized).collect(),
        };
        match self.shape {
            Shape::Single => vec![base(
                self.duration_s,
                self.measure_from_s,
                vec![Self::flow(&cell.cc, cell.rtt_ms, 0.0, None)],
            )],
            Shape::RttFairness => {
                let n = cell.flows.max(1);
                let lo = self.min_rtt_ms.min(cell.rtt_ms).max(0.01);
                let flows = (0..n)
                    .map(|i| {
                        let f = if n == 1 {
                            0.0
                        } else {
                            f64::from(i) / f64::from(n - 1)
                        };
                        let rtt = lo * (cell.rtt_ms / lo).powf(f);
                        Self::flow(&cell.cc, rtt, 0.0, None)
                    })
                    .collect();
                vec![base(self.duration_s, self.measure_from_s, flows)]
            }
            Shape::Staggered => {
                let p = self.phase_s;
                let flows = (0..4)
                    .map(|i| {
                        let i = f64::from(i);
                        Self::flow(&cell.cc, cell.rtt_ms, i * p, Some((7.0 - i) * p))
                    })
                    .collect();
                vec![base(7.0 * p, self.phase_warmup_s, flows)]
            }
            Shape::Friendliness => {
                let mixed = (0..self.udt_flows)
                    .map(|_| Self::flow(&cell.cc, cell.rtt_ms, 0.0, None))
                    .chain((0..self.tcp_flows).map(|_| Self::flow("tcp", cell.rtt_ms, 0.0, None)))
                    .collect();
                let tcp = (0..self.udt_flows + self.tcp_flows)
                    .map(|_| Self::flow("tcp", cell.rtt_ms, 0.0, None))
                    .collect();
                vec![
                    base(self.duration_s, self.measure_from_s, mixed),
                    base(self.duration_s, self.measure_from_s, tcp),
                ]
            }
        }
    }

    /// Runs one cell.
    pub fn run_cell(&self, cell: &Cell) -> CellResult {
        let started = std::time::Instant::now();
        let reports: Vec<_> = self
            .scenarios(cell)
            .iter()
            .map(|s| simulate(s, self.seed))
            .collect();
        let integrity_ok = reports.iter().all(|r| r.integrity_ok);
        let main = &reports[0];
        let ours: Vec<&FlowReport> = main.flows.iter().filter(|f| f.cc == cell.cc).collect();
        let sent: u64 = ours.iter().map(|f| f.sent_pkts).sum();
        let retrans: u64 = ours.iter().map(|f| f.retransmitted_pkts).sum();
        let retrans_ratio = if sent > 0 {
            retrans as f64 / sent as f64
        } else {
            0.0
        };
        let mut r = CellResult {
            cell: cell.clone(),
            utilization: 0.0,
            loss_rate: 0.0,
            retrans_ratio,
            t90_s: None,
            jain: None,
            throughput_ratio: None,
            stability: None,
            friendliness: None,
            queueing_ms: 0.0,
            integrity_ok,
            wall_s: 0.0,
        };
        match self.shape {
            Shape::Single | Shape::RttFairness | Shape::Friendliness => {
                // One phase: every flow starts at 0 and runs to the end.
                if let Some(p) = main.phases.first() {
                    r.utilization = p.utilization;
                    r.loss_rate = p.loss_rate;
                    r.queueing_ms = p.avg_queueing_ms;
                    r.jain = Some(p.jain);
                    r.stability = Some(p.stability);
                    let xs: Vec<f64> = p
                        .flows
                        .iter()
                        .zip(&p.flow_mbps)
                        .filter(|(id, _)| main.flows[**id].cc == cell.cc)
                        .map(|(_, &x)| x)
                        .collect();
                    let max = xs.iter().cloned().fold(0.0, f64::max);
                    let min = xs.iter().cloned().fold(f64::INFINITY, f64::min);
                    if self.shape == Shape::RttFairness {
                        r.throughput_ratio = Some(if max > 0.0 { min / max } else { 0.0 });
                    }
                }
                if self.shape == Shape::Single {
                    r.t90_s = time_to_fraction(&main.flows, main.link_rate_mbps, 0.9);
                }
                if self.shape == Shape::Friendliness {
                    r.friendliness = friendliness_index(&reports[0], &reports[1]);
                }
            }
            Shape::Staggered => {
                let worst = |f: fn(&PhaseReport) -> f64, min: bool| {
                    let it = main.phases.iter().map(f);
                    if min {
                        it.fold(f64::INFINITY, f64::min)
                    } else {
                        it.fold(0.0, f64::max)
                    }
                };
                r.utilization = worst(|p| p.utilization, true);
                r.loss_rate = worst(|p| p.loss_rate, false);
                r.queueing_ms = worst(|p| p.avg_queueing_ms, false);
                r.jain = Some(worst(|p| p.jain, true));
                r.stability = Some(worst(|p| p.stability, false));
            }
        }
        r.wall_s = started.elapsed().as_secs_f64();
        r
    }

    /// Runs every cell on `jobs` threads (at least one), calling `progress` after each with
    /// the number done and the total; results come back in [`SweepSpec::cells`] order.
    pub fn run(
        &self,
        jobs: usize,
        progress: &(dyn Fn(usize, usize, &CellResult) + Sync),
    ) -> Vec<CellResult> {
        let cells = self.cells();
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<CellResult>>> = Mutex::new(vec![None; cells.len()]);
        // Most expensive cells first (packets simulated ∝ rate × duration), so that the last
        // cell to finish is a short one.
        let mut order: Vec<usize> = (0..cells.len()).collect();
        order.sort_by(|&a, &b| {
            cells[b]
                .rate_mbps
                .partial_cmp(&cells[a].rate_mbps)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        std::thread::scope(|s| {
            for _ in 0..jobs.max(1) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&k) = order.get(i) else { break };
                    let r = self.run_cell(&cells[k]);
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress(n, cells.len(), &r);
                    results.lock().unwrap_or_else(|p| p.into_inner())[k] = Some(r);
                });
            }
        });
        results
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_iter()
            .map(|r| r.expect("every cell ran"))
            .collect()
    }
}

/// Seconds until the aggregate of `flows`' 1 s samples first reached `fraction` of the link.
fn time_to_fraction(flows: &[FlowReport], link_mbps: f64, fraction: f64) -> Option<f64> {
    let n = flows.iter().map(|f| f.samples_mbps.len()).max()?;
    (0..n)
        .find(|&k| {
            let sum: f64 = flows
                .iter()
                .map(|f| f.samples_mbps.get(k).copied().unwrap_or(0.0))
                .sum();
            sum >= fraction * link_mbps
        })
        .map(|k| (k + 1) as f64)
}

/// Paper 001's T: mean `tcp` throughput with the algorithm / mean `tcp` throughput alone.
fn friendliness_index(mixed: &crate::Report, alone: &crate::Report) -> Option<f64> {
    let mean_tcp = |r: &crate::Report| {
        let p = r.phases.first()?;
        let xs: Vec<f64> = p
            .flows
            .iter()
            .zip(&p.flow_mbps)
            .filter(|(id, _)| r.flows[**id].cc == "tcp")
            .map(|(_, &x)| x)
            .collect();
        (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
    };
    let (m, a) = (mean_tcp(mixed)?, mean_tcp(alone)?);
    (a > 0.0).then(|| m / a)
}

/// The results as a text table, one row per cell and algorithm.
pub fn table(spec: &SweepSpec, results: &[CellResult]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "# {} ({:?})", spec.name, spec.shape);
    let _ = writeln!(
        s,
        "{:<10} {:<10} {:>8} {:>7} {:>6} {:>7} {:>5} {:>6} {:>9} {:>8} {:>6} {:>6} {:>6} {:>6} {:>7} {:>4}",
        "path",
        "cc",
        "rate",
        "rtt_ms",
        "queue",
        "loss",
        "flows",
        "util",
        "lossrate",
        "retrans",
        "t90",
        "jain",
        "ratio",
        "stab",
        "friend",
        "ok"
    );
    let opt = |x: Option<f64>, d: usize| x.map_or("-".to_owned(), |v| format!("{v:.d$}"));
    for r in results {
        let c = &r.cell;
        let _ = writeln!(
            s,
            "{:<10} {:<10} {:>8} {:>7} {:>6} {:>7} {:>5} {:>6.3} {:>9.2e} {:>8.2e} {:>6} {:>6} {:>6} {:>6} {:>7} {:>4}",
            c.path,
            c.cc,
            c.rate_mbps,
            c.rtt_ms,
            c.queue_bdp,
            c.loss,
            c.flows,
            r.utilization,
            r.loss_rate,
            r.retrans_ratio,
            opt(r.t90_s, 0),
            opt(r.jain, 3),
            opt(r.throughput_ratio, 3),
            opt(r.stability, 3),
            opt(r.friendliness, 2),
            if r.integrity_ok { "ok" } else { "FAIL" }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
name = "t"
shape = "single"
ccs = ["udt", "udt4"]
rates_mbps = [10, 100]
rtts_ms = [10, 100]
queue_bdp = [1]
loss = [0, 0.01]
[[path]]
name = "plain"
[[path]]
name = "clumped"
rx_coalesce_us = 100
rx_coalesce_pkts = 16
"#;

    #[test]
    fn cells_cover_the_matrix_with_algorithms_side_by_side() {
        let s = SweepSpec::from_toml(EXAMPLE).unwrap();
        let cells = s.cells();
        assert_eq!(cells.len(), 2 * 2 * 2 * 2 * 2);
        assert_eq!(cells[0].cc, "udt");
        assert_eq!(cells[1].cc, "udt4");
        assert_eq!(cells[0].rate_mbps, cells[1].rate_mbps);
        // 100 Mb/s × 100 ms = 833 packets of 1500 bytes.
        let c = cells
            .iter()
            .find(|c| c.rate_mbps == 100.0 && c.rtt_ms == 100.0)
            .unwrap();
        assert_eq!(c.queue_pkts, 833);
        let clumped = cells.iter().find(|c| c.path == "clumped").unwrap();
        let sc = &s.scenarios(clumped)[0];
        assert_eq!(sc.link.rx_coalesce_us, 100.0);
        assert_eq!(sc.link.rx_coalescing().unwrap().max_pkts, 16);
    }

    #[test]
    fn shapes_build_their_flows() {
        let text = EXAMPLE.replace("shape = \"single\"", "shape = \"staggered\"");
        let s = SweepSpec::from_toml(&text).unwrap();
        let sc = &s.scenarios(&s.cells()[0])[0];
        assert_eq!(sc.flows.len(), 4);
        assert_eq!(sc.flows[3].start_s, 3.0 * 60.0);
        assert_eq!(sc.flows[3].stop_s, Some(4.0 * 60.0));
        let text = EXAMPLE.replace(
            "shape = \"single\"",
            "shape = \"rtt_fairness\"\nflows = [3]",
        );
        let s = SweepSpec::from_toml(&text).unwrap();
        let c = s.cells().into_iter().find(|c| c.rtt_ms == 100.0).unwrap();
        let rtts: Vec<f64> = s.scenarios(&c)[0].flows.iter().map(|f| f.rtt_ms).collect();
        assert_eq!(rtts.len(), 3);
        assert!((rtts[0] - 1.0).abs() < 1e-9 && (rtts[1] - 10.0).abs() < 1e-9);
        assert!((rtts[2] - 100.0).abs() < 1e-9);
        let text = EXAMPLE.replace("shape = \"single\"", "shape = \"friendliness\"");
        let s = SweepSpec::from_toml(&text).unwrap();
        let sc = s.scenarios(&s.cells()[0]);
        assert_eq!(sc.len(), 2);
        assert_eq!(sc[0].flows.iter().filter(|f| f.cc == "tcp").count(), 10);
        assert!(sc[1].flows.iter().all(|f| f.cc == "tcp"));
    }

    #[test]
    fn bad_sweeps_are_refused() {
        assert!(
            SweepSpec::from_toml(&EXAMPLE.replace("queue_bdp = [1]", "queue_bdp = [0]")).is_err()
        );
        assert!(SweepSpec::from_toml(
            &EXAMPLE.replace("ccs = [\"udt\", \"udt4\"]", "ccs = [\"nope\"]")
        )
        .is_err());
        assert!(SweepSpec::from_toml(&EXAMPLE.replace("loss = [0, 0.01]", "loss = [2]")).is_err());
    }
}
