//! Analysis of a simulation run: per-flow reports and per-phase metrics of the UDT papers.
//!
//! The simulator records raw counters per *sample bucket* (a fixed time interval of
//! [`RunRecord::sample_interval_s`] seconds; bucket `k` covers `[k·dt, (k+1)·dt)`, the last one
//! may be cut short by the end of the run). [`analyze`] turns such a [`RunRecord`] into
//!
//! * one [`FlowReport`] per flow: average throughput over its active interval and the
//!   throughput time series (Mb/s) of every bucket, ready for plotting;
//! * one [`PhaseReport`] per *phase*, a maximal interval with a constant set of active flows
//!   (the columns of Table 4 of the UDT paper), with the metrics of its §5.1:
//!   efficiency `E = Σ x̄ᵢ`, utilization `E / link rate`, Jain's fairness index
//!   `J = (Σ x̄ᵢ)² / (n · Σ x̄ᵢ²)`, stability index `S = (1/n) Σ sᵢ / x̄ᵢ` (with `sᵢ` the sample
//!   standard deviation of flow `i`'s throughput samples in the phase), loss rate and average RTT.
//!
//! Units: times in seconds (`_s`), rates in megabits per second (`_mbps`, 1 Mb = 10⁶ bits),
//! RTTs in milliseconds (`_ms`) or microseconds (`_us`), volumes in bytes or packets.
//!
//! Nothing here panics: malformed input (NaN, infinities, negative or zero durations, vectors of
//! the wrong length) yields empty or zero results, and every `f64` of the output is finite.

use serde::Serialize;

/// Largest number of sample buckets [`analyze`] accepts (`⌈duration_s / sample_interval_s⌉`);
/// beyond it the record is considered malformed and the result is empty. 2²⁴ buckets is more
/// than 190 days of simulated time at 1 s samples, or 4.6 hours at 1 ms samples.
pub const MAX_BUCKETS: usize = 1 << 24;

/// Relative tolerance (as a fraction of the sample interval) used when comparing times with
/// bucket edges, so that `0.1 * 3` still counts as lying on the edge of bucket 3.
const EDGE_EPS: f64 = 1e-9;

/// The raw record of one simulation run, as produced by the simulator core.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRecord {
    /// Simulated run length, seconds.
    pub duration_s: f64,
    /// Width of every sample bucket, seconds; bucket `k` covers `[k·dt, (k+1)·dt)`, the last
    /// bucket ends at `duration_s` and may therefore be shorter.
    pub sample_interval_s: f64,
    /// Bottleneck link rate, Mb/s.
    pub link_rate_mbps: f64,
    /// Seconds skipped at the start of every phase before the phase metrics are measured
    /// (0 = none).
    pub warmup_s: f64,
    /// Every flow of the run.
    pub flows: Vec<FlowRecord>,
    /// Per sample bucket: data and control packets offered to the bottleneck queue.
    pub link_offered_pkts: Vec<u64>,
    /// Per sample bucket: of the offered packets, those dropped (queue overflow or random loss).
    pub link_dropped_pkts: Vec<u64>,
}

/// The raw record of one flow of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowRecord {
    /// Flow identifier (shown in reports and plot legends).
    pub id: usize,
    /// Name of the congestion control algorithm (e.g. `"udt"`).
    pub cc: String,
    /// Configured base round-trip time, milliseconds.
    pub rtt_ms: f64,
    /// Start of the active interval `[start_s, stop_s)`, seconds.
    pub start_s: f64,
    /// End of the active interval, seconds: when the flow was stopped, finished its finite
    /// transfer, or the run ended.
    pub stop_s: f64,
    /// Total application bytes delivered to the receiver.
    pub bytes_delivered: u64,
    /// Per sample bucket (whole run, zero outside activity): application bytes delivered.
    pub delivered_bytes: Vec<u64>,
    /// Per sample bucket: sum of this flow's RTT measurements, microseconds.
    pub rtt_sum_us: Vec<f64>,
    /// Per sample bucket: number of this flow's RTT measurements.
    pub rtt_count: Vec<u64>,
    /// Data packets retransmitted by the sender over the whole run.
    pub retransmitted_pkts: u64,
    /// Data packets sent by the sender over the whole run (first transmissions and
    /// retransmissions).
    pub sent_pkts: u64,
}

/// Per-flow summary of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowReport {
    /// Flow identifier, copied from [`FlowRecord::id`].
    pub id: usize,
    /// Congestion control name, copied from [`FlowRecord::cc`].
    pub cc: String,
    /// Configured base round-trip time, milliseconds.
    pub rtt_ms: f64,
    /// Start of the active interval, seconds (as recorded).
    pub start_s: f64,
    /// End of the active interval, seconds (as recorded).
    pub stop_s: f64,
    /// Total application bytes delivered.
    pub bytes_delivered: u64,
    /// Average throughput over the active interval, Mb/s:
    /// `bytes_delivered · 8 / 10⁶ / (stop_s − start_s)`, with the interval clipped to the run
    /// `[0, duration_s]`; 0 if that interval is empty.
    pub avg_mbps: f64,
    /// Throughput of every sample bucket of the run, Mb/s (`bytes · 8 / 10⁶ / width`, where the
    /// width of the last, possibly partial, bucket is its real width).
    pub samples_mbps: Vec<f64>,
    /// Data packets retransmitted over the whole run.
    pub retransmitted_pkts: u64,
    /// Data packets sent over the whole run.
    pub sent_pkts: u64,
}

/// Metrics of one phase: a maximal interval of the run with a constant, non-empty set of
/// active flows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseReport {
    /// Phase start, seconds.
    pub start_s: f64,
    /// Phase end, seconds.
    pub end_s: f64,
    /// Ids of the flows active during the whole phase, in the order of [`RunRecord::flows`].
    pub flows: Vec<usize>,
    /// Average throughput `x̄ᵢ` of every active flow over the measured part of the phase, Mb/s,
    /// in the order of [`PhaseReport::flows`].
    pub flow_mbps: Vec<f64>,
    /// Efficiency index `E = Σ x̄ᵢ` (aggregate throughput), Mb/s.
    pub efficiency_mbps: f64,
    /// `E / link_rate_mbps` (dimensionless; 0 if the link rate is not positive).
    pub utilization: f64,
    /// Jain's fairness index of the `x̄ᵢ`, in `[0, 1]` (see [`jain`]).
    pub jain: f64,
    /// Stability index `S = mean of sᵢ / x̄ᵢ` over active flows with `x̄ᵢ > 0`
    /// (dimensionless; see [`stability`]).
    pub stability: f64,
    /// Dropped / offered packets at the bottleneck during the measured part of the phase, in
    /// `[0, 1]` (0 if nothing was offered).
    pub loss_rate: f64,
    /// Mean over the active flows (with at least one RTT measurement) of each flow's average
    /// measured RTT during the measured part of the phase, milliseconds (0 if none).
    pub avg_rtt_ms: f64,
    /// Mean over the same flows of each flow's average time spent queued (average measured
    /// RTT minus the flow's base RTT: the waits in the access and bottleneck queues),
    /// milliseconds (0 if none).
    pub avg_queueing_ms: f64,
}

/// Jain's fairness index `J = (Σ xᵢ)² / (n · Σ xᵢ²)` of the throughputs `xs` (any unit).
///
/// The result lies in `[0, 1]`; it is 1 for a single flow or equal shares, and `1/n` when one
/// flow takes everything. It is defined as 0 for an empty slice or when all throughputs are 0.
/// Negative and non-finite entries are counted as 0 throughput (they still count in `n`).
pub fn jain(xs: &[f64]) -> f64 {
    let clean = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    let scale = xs.iter().copied().map(clean).fold(0.0, f64::max);
    if xs.is_empty() || scale <= 0.0 {
        return 0.0;
    }
    // J is scale invariant; normalising by the largest value avoids overflow of the squares.
    let (sum, sum_sq) = xs.iter().fold((0.0, 0.0), |(s, q), &x| {
        let v = clean(x) / scale;
        (s + v, q + v * v)
    });
    let j = sum * sum / (xs.len() as f64 * sum_sq);
    finite_or_zero(j).clamp(0.0, 1.0)
}

/// Sample standard deviation (denominator `m − 1`) of `xs`, in the unit of `xs`.
///
/// Non-finite entries are ignored; 0 if fewer than two finite entries remain.
pub fn sample_std_dev(xs: &[f64]) -> f64 {
    let weighted: Vec<(f64, f64)> = xs
        .iter()
        .filter(|x| x.is_finite())
        .map(|&x| (x, 1.0))
        .collect();
    finite_or_zero(weighted_moments(&weighted).map_or(0.0, |m| m.std_dev))
}

/// Stability index `S = (1/n) Σᵢ sᵢ / x̄ᵢ` of the UDT paper (§5.1), dimensionless.
///
/// `samples[i]` holds the throughput samples `xᵢ(k)` of flow `i` (any unit, the same for all
/// samples of a flow); `x̄ᵢ` is their mean and `sᵢ` their sample standard deviation
/// (denominator `m − 1`, 0 if fewer than two samples). The mean is taken over the flows with
/// `x̄ᵢ > 0` only (a flow that sent nothing has no meaningful oscillation); 0 if there is none.
/// Non-finite samples are ignored. A constant series has stability 0.
pub fn stability(samples: &[&[f64]]) -> f64 {
    let ratios: Vec<f64> = samples
        .iter()
        .filter_map(|flow| {
            let weighted: Vec<(f64, f64)> = flow
                .iter()
                .filter(|x| x.is_finite())
                .map(|&x| (x, 1.0))
                .collect();
            weighted_moments(&weighted).and_then(|m| m.cv)
        })
        .collect();
    mean_or_zero(&ratios)
}

/// Analyses a run: one [`FlowReport`] per flow (in the order of `run.flows`) and one
/// [`PhaseReport`] per phase (in time order).
///
/// # Sample grid
/// The run has `⌈duration_s / sample_interval_s⌉` buckets (with a relative tolerance of 10⁻⁹
/// so that rounding noise does not create a sliver bucket). Per-bucket vectors that are shorter
/// are padded with zeros; extra entries are ignored. If `duration_s` or `sample_interval_s` is
/// not a positive finite number, or the grid would exceed [`MAX_BUCKETS`], both results are
/// empty.
///
/// # Phases
/// Boundaries are `0`, `duration_s`, and every flow's `start_s` and `stop_s` clipped to
/// `[0, duration_s]` (flows with a NaN bound or an empty clipped interval contribute none and
/// are never active). Sorted boundaries closer than half a sample interval to their predecessor
/// are merged into one (chains merge transitively); a merged boundary sits at `0` or
/// `duration_s` if it contains one of them, otherwise at its earliest member. A flow is active in
/// a phase if its (merged) start is at or before the phase start and its (merged) stop at or
/// after the phase end. Adjacent phases with the same set of active flows are joined (so phases
/// are maximal) and phases without active flows are omitted.
///
/// # Measured buckets
/// Phase metrics use the buckets lying entirely within the window
/// `[start_s + warmup_s, end_s)` (if the warm-up would consume the whole phase, it is not
/// applied to that phase). The flow mean `x̄ᵢ` is time-weighted: each bucket counts with its
/// width, which equals the plain mean of the samples except when the partial last bucket of the
/// run is included. `sᵢ` is the weighted sample standard deviation with reliability weights
/// (`Σw(x−x̄)² / (V₁ − V₂/V₁)`, `V₁ = Σw`, `V₂ = Σw²`), which is exactly the `m − 1` sample
/// standard deviation when all buckets have the same width.
///
/// If no bucket lies entirely within the window (a phase shorter than about one sample
/// interval), the buckets overlapping it are used instead, each weighted by the fraction of the
/// bucket inside the window: rates with weight = overlap time, counters (bytes, packets, RTT
/// sums and counts) scaled by that fraction. A phase inside a single bucket thus gets that
/// bucket's rate and `sᵢ = 0`.
pub fn analyze(run: &RunRecord) -> (Vec<FlowReport>, Vec<PhaseReport>) {
    let Some(grid) = Grid::new(run.duration_s, run.sample_interval_s) else {
        return (Vec::new(), Vec::new());
    };
    let rates: Vec<Vec<f64>> = run
        .flows
        .iter()
        .map(|f| {
            (0..grid.n)
                .map(|k| {
                    let bytes = f.delivered_bytes.get(k).copied().unwrap_or(0);
                    finite_or_zero(bytes_to_mbit(bytes) / grid.width(k))
                })
                .collect()
        })
        .collect();

    let flow_reports = run
        .flows
        .iter()
        .zip(&rates)
        .map(|(f, samples)| {
            let active_s = match grid.clip_interval(f.start_s, f.stop_s) {
                Some((a, b)) => b - a,
                None => 0.0,
            };
            let avg_mbps = if active_s > 0.0 {
                finite_or_zero(bytes_to_mbit(f.bytes_delivered) / active_s)
            } else {
                0.0
            };
            FlowReport {
                id: f.id,
                cc: f.cc.clone(),
                rtt_ms: f.rtt_ms,
                start_s: f.start_s,
                stop_s: f.stop_s,
                bytes_delivered: f.bytes_delivered,
                avg_mbps,
                samples_mbps: samples.clone(),
                retransmitted_pkts: f.retransmitted_pkts,
                sent_pkts: f.sent_pkts,
            }
        })
        .collect();

    let phases = find_phases(run, &grid)
        .into_iter()
        .map(|p| phase_report(run, &grid, &rates, p))
        .collect();
    (flow_reports, phases)
}

/// Bytes to megabits.
fn bytes_to_mbit(bytes: u64) -> f64 {
    bytes as f64 * 8.0 / 1e6
}

fn finite_or_zero(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

fn mean_or_zero(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        finite_or_zero(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// Weighted mean, weighted sample standard deviation and coefficient of variation.
struct Moments {
    mean: f64,
    std_dev: f64,
    /// `std_dev / mean`, `None` unless `mean > 0`.
    cv: Option<f64>,
}

/// Moments of `(value, weight)` pairs (all finite, weights > 0 are used; others ignored).
/// `None` if no usable pair. The standard deviation uses reliability weights
/// (`Σw(x−x̄)² / (V₁ − V₂/V₁)`), 0 for a single pair. Values and weights are normalised by
/// their largest magnitude first, so nothing overflows.
fn weighted_moments(pairs: &[(f64, f64)]) -> Option<Moments> {
    let usable: Vec<(f64, f64)> = pairs
        .iter()
        .copied()
        .filter(|&(x, w)| x.is_finite() && w.is_finite() && w > 0.0)
        .collect();
    if usable.is_empty() {
        return None;
    }
    let xscale = usable.iter().fold(0.0_f64, |m, &(x, _)| m.max(x.abs()));
    let wscale = usable.iter().fold(0.0_f64, |m, &(_, w)| m.max(w));
    if xscale == 0.0 {
        return Some(Moments {
            mean: 0.0,
            std_dev: 0.0,
            cv: None,
        });
    }
    let norm: Vec<(f64, f64)> = usable
        .iter()
        .map(|&(x, w)| (x / xscale, w / wscale))
        .collect();
    let v1: f64 = norm.iter().map(|&(_, w)| w).sum();
    let v2: f64 = norm.iter().map(|&(_, w)| w * w).sum();
    let mean_n = norm.iter().map(|&(x, w)| w * x).sum::<f64>() / v1;
    let denom = v1 - v2 / v1;
    let sd_n = if norm.len() >= 2 && denom > 0.0 {
        let ss: f64 = norm
            .iter()
            .map(|&(x, w)| w * (x - mean_n) * (x - mean_n))
            .sum();
        (ss / denom).max(0.0).sqrt()
    } else {
        0.0
    };
    let cv = (mean_n > 0.0).then(|| finite_or_zero(sd_n / mean_n));
    Some(Moments {
        mean: finite_or_zero(mean_n * xscale),
        std_dev: finite_or_zero(sd_n * xscale),
        cv,
    })
}

/// The sample grid of a run.
struct Grid {
    duration: f64,
    dt: f64,
    n: usize,
}

impl Grid {
    fn new(duration: f64, dt: f64) -> Option<Grid> {
        if !(duration.is_finite() && duration > 0.0 && dt.is_finite() && dt > 0.0) {
            return None;
        }
        let buckets = (duration / dt - EDGE_EPS).ceil().max(1.0);
        if !buckets.is_finite() || buckets > MAX_BUCKETS as f64 {
            return None;
        }
        Some(Grid {
            duration,
            dt,
            n: buckets as usize,
        })
    }

    fn start(&self, k: usize) -> f64 {
        k as f64 * self.dt
    }

    fn end(&self, k: usize) -> f64 {
        ((k + 1) as f64 * self.dt).min(self.duration)
    }

    /// Real width of bucket `k` (always > 0 for `k < n`).
    fn width(&self, k: usize) -> f64 {
        (self.end(k) - self.start(k)).max(f64::MIN_POSITIVE)
    }

    fn clip(&self, t: f64) -> Option<f64> {
        (!t.is_nan()).then(|| t.clamp(0.0, self.duration))
    }

    /// `[start, stop)` clipped to the run, `None` if a bound is NaN or the result is empty.
    fn clip_interval(&self, start: f64, stop: f64) -> Option<(f64, f64)> {
        let (a, b) = (self.clip(start)?, self.clip(stop)?);
        (a < b).then_some((a, b))
    }

    /// Bucket index at or after time `t` (clamped to `0..=n`), tolerant of rounding.
    fn first_bucket_from(&self, t: f64) -> usize {
        let k = (t / self.dt - EDGE_EPS).ceil();
        if k.is_nan() {
            0
        } else {
            k.clamp(0.0, self.n as f64) as usize
        }
    }

    /// Buckets measured for the window `[a, b)`, as `(bucket, fraction inside, time inside)`.
    fn window(&self, a: f64, b: f64) -> Vec<(usize, f64, f64)> {
        let tol = EDGE_EPS * self.dt;
        let full: Vec<(usize, f64, f64)> = (self.first_bucket_from(a)..self.n)
            .take_while(|&k| self.end(k) <= b + tol)
            .map(|k| (k, 1.0, self.width(k)))
            .collect();
        if !full.is_empty() {
            return full;
        }
        let first = (a / self.dt).floor();
        let first = if first.is_nan() {
            0
        } else {
            first.clamp(0.0, self.n as f64) as usize
        };
        (first..self.n)
            .take_while(|&k| self.start(k) < b)
            .filter_map(|k| {
                let overlap = self.end(k).min(b) - self.start(k).max(a);
                (overlap > 0.0).then(|| (k, (overlap / self.width(k)).min(1.0), overlap))
            })
            .collect()
    }
}

/// A phase before measurement: bounds and indices (into `run.flows`) of its active flows.
struct Phase {
    start: f64,
    end: f64,
    active: Vec<usize>,
}

fn find_phases(run: &RunRecord, grid: &Grid) -> Vec<Phase> {
    let intervals: Vec<Option<(f64, f64)>> = run
        .flows
        .iter()
        .map(|f| grid.clip_interval(f.start_s, f.stop_s))
        .collect();
    let mut raw: Vec<f64> = vec![0.0, grid.duration];
    raw.extend(intervals.iter().flatten().flat_map(|&(a, b)| [a, b]));
    raw.sort_by(f64::total_cmp);
    raw.dedup();

    // Cluster consecutive boundaries closer than half a sample interval.
    let half = grid.dt / 2.0;
    let mut cluster_of = Vec::with_capacity(raw.len());
    let mut members: Vec<Vec<f64>> = Vec::new();
    for (i, &t) in raw.iter().enumerate() {
        if i == 0 || t - raw[i - 1] >= half {
            members.push(Vec::new());
        }
        if let Some(m) = members.last_mut() {
            m.push(t);
        }
        cluster_of.push(members.len().saturating_sub(1));
    }
    let reps: Vec<f64> = members
        .iter()
        .map(|m| {
            if m.contains(&0.0) {
                0.0
            } else if m.contains(&grid.duration) {
                grid.duration
            } else {
                m.first().copied().unwrap_or(0.0)
            }
        })
        .collect();
    let cluster = |t: f64| -> usize {
        let i = raw.partition_point(|&r| r < t);
        cluster_of.get(i).copied().unwrap_or(0)
    };
    let spans: Vec<Option<(usize, usize)>> = intervals
        .iter()
        .map(|iv| iv.map(|(a, b)| (cluster(a), cluster(b))))
        .collect();

    let mut phases: Vec<Phase> = Vec::new();
    for c in 0..reps.len().saturating_sub(1) {
        let active: Vec<usize> = spans
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Some((a, b)) if *a <= c && c < *b))
            .map(|(i, _)| i)
            .collect();
        match phases.last_mut() {
            Some(last) if last.active == active => last.end = reps[c + 1],
            _ => phases.push(Phase {
                start: reps[c],
                end: reps[c + 1],
                active,
            }),
        }
    }
    phases.retain(|p| !p.active.is_empty() && p.end > p.start);
    phases
}

fn phase_report(run: &RunRecord, grid: &Grid, rates: &[Vec<f64>], p: Phase) -> PhaseReport {
    let warmup = if run.warmup_s.is_finite() && run.warmup_s > 0.0 {
        run.warmup_s
    } else {
        0.0
    };
    let from = if p.start + warmup < p.end {
        p.start + warmup
    } else {
        p.start
    };
    let buckets = grid.window(from, p.end);

    let mut flow_mbps = Vec::with_capacity(p.active.len());
    let mut cvs = Vec::new();
    let mut rtts_ms = Vec::new();
    let mut queueing_ms = Vec::new();
    for &i in &p.active {
        let pairs: Vec<(f64, f64)> = buckets
            .iter()
            .map(|&(k, _, time)| (rates[i].get(k).copied().unwrap_or(0.0), time))
            .collect();
        let m = weighted_moments(&pairs);
        flow_mbps.push(m.as_ref().map_or(0.0, |m| m.mean));
        cvs.extend(m.and_then(|m| m.cv));

        let f = &run.flows[i];
        let (mut sum_us, mut count) = (0.0, 0.0);
        for &(k, frac, _) in &buckets {
            let s = f.rtt_sum_us.get(k).copied().unwrap_or(0.0);
            let c = f.rtt_count.get(k).copied().unwrap_or(0);
            if s.is_finite() && c > 0 {
                sum_us += frac * s;
                count += frac * c as f64;
            }
        }
        if count > 0.0 {
            let rtt = sum_us / count / 1000.0;
            if rtt.is_finite() {
                rtts_ms.push(rtt);
                queueing_ms.push((rtt - f.rtt_ms).max(0.0));
            }
        }
    }

    let (mut offered, mut dropped) = (0.0, 0.0);
    for &(k, frac, _) in &buckets {
        offered += frac * run.link_offered_pkts.get(k).copied().unwrap_or(0) as f64;
        dropped += frac * run.link_dropped_pkts.get(k).copied().unwrap_or(0) as f64;
    }
    let loss_rate = if offered > 0.0 {
        finite_or_zero(dropped / offered).clamp(0.0, 1.0)
    } else {
        0.0
    };

    let efficiency_mbps = finite_or_zero(flow_mbps.iter().sum());
    let link = run.link_rate_mbps;
    let utilization = if link.is_finite() && link > 0.0 {
        finite_or_zero(efficiency_mbps / link)
    } else {
        0.0
    };
    PhaseReport {
        start_s: p.start,
        end_s: p.end,
        flows: p.active.iter().map(|&i| run.flows[i].id).collect(),
        jain: jain(&flow_mbps),
        flow_mbps,
        efficiency_mbps,
        utilization,
        stability: mean_or_zero(&cvs),
        loss_rate,
        avg_rtt_ms: mean_or_zero(&rtts_ms),
        avg_queueing_ms: mean_or_zero(&queueing_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MB: u64 = 1_000_000 / 8; // bytes in one megabit

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    /// A flow delivering `mbps` Mb/s in every bucket of `[start, stop)` of a 1 s grid.
    fn flow(id: usize, start: f64, stop: f64, n: usize, mbps: impl Fn(usize) -> u64) -> FlowRecord {
        let delivered: Vec<u64> = (0..n)
            .map(|k| {
                let t = k as f64;
                if t >= start && t < stop {
                    mbps(k) * MB
                } else {
                    0
                }
            })
            .collect();
        FlowRecord {
            id,
            cc: "udt".into(),
            rtt_ms: 100.0,
            start_s: start,
            stop_s: stop,
            bytes_delivered: delivered.iter().sum(),
            delivered_bytes: delivered,
            rtt_sum_us: vec![0.0; n],
            rtt_count: vec![0; n],
            retransmitted_pkts: 0,
            sent_pkts: 0,
        }
    }

    fn run(duration: f64, flows: Vec<FlowRecord>) -> RunRecord {
        let n = duration.ceil().max(0.0) as usize;
        RunRecord {
            duration_s: duration,
            sample_interval_s: 1.0,
            link_rate_mbps: 1000.0,
            warmup_s: 0.0,
            flows,
            link_offered_pkts: vec![0; n],
            link_dropped_pkts: vec![0; n],
        }
    }

    #[test]
    fn jain_hand_computed() {
        // (900)² / (2 · (360000 + 90000)) = 810000 / 900000
        assert!(close(jain(&[600.0, 300.0]), 0.9));
        assert_eq!(jain(&[250.0; 4]), 1.0);
        assert_eq!(jain(&[42.0]), 1.0);
        assert!(close(jain(&[100.0, 0.0, 0.0, 0.0]), 0.25));
        assert_eq!(jain(&[]), 0.0);
        assert_eq!(jain(&[0.0, 0.0]), 0.0);
        // Scale invariant and overflow-free.
        assert!(close(jain(&[6e300, 3e300]), 0.9));
        // Garbage counts as zero throughput.
        assert!(close(jain(&[100.0, f64::NAN]), 0.5));
    }

    #[test]
    fn stability_hand_computed() {
        assert_eq!(stability(&[&[5.0, 5.0, 5.0, 5.0]]), 0.0);
        // [1, 3]: mean 2, s = sqrt(((1-2)² + (3-2)²) / 1) = sqrt(2).
        assert!(close(sample_std_dev(&[1.0, 3.0]), 2f64.sqrt()));
        assert!(close(stability(&[&[1.0, 3.0]]), 2f64.sqrt() / 2.0));
        // Mean over flows: (sqrt(2)/2 + 0) / 2.
        assert!(close(
            stability(&[&[1.0, 3.0], &[7.0, 7.0]]),
            2f64.sqrt() / 4.0
        ));
        // Flows with zero mean are skipped, single samples have s = 0.
        assert!(close(
            stability(&[&[1.0, 3.0], &[0.0, 0.0]]),
            2f64.sqrt() / 2.0
        ));
        assert_eq!(stability(&[&[3.0]]), 0.0);
        assert_eq!(stability(&[]), 0.0);
        assert_eq!(sample_std_dev(&[]), 0.0);
        assert_eq!(sample_std_dev(&[1.0]), 0.0);
        // Sample (m - 1), not population (m), standard deviation.
        assert!(close(
            sample_std_dev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]),
            (32.0f64 / 7.0).sqrt()
        ));
    }

    #[test]
    fn table4_schedule_gives_seven_phases() {
        let n = 700;
        let flows = vec![
            flow(1, 0.0, 700.0, n, |_| 900),
            flow(2, 100.0, 600.0, n, |_| 450),
            flow(3, 200.0, 500.0, n, |_| 300),
            flow(4, 300.0, 400.0, n, |_| 200),
        ];
        let (reports, phases) = analyze(&run(700.0, flows));
        assert_eq!(reports.len(), 4);
        let sets: Vec<Vec<usize>> = phases.iter().map(|p| p.flows.clone()).collect();
        assert_eq!(
            sets,
            vec![
                vec![1],
                vec![1, 2],
                vec![1, 2, 3],
                vec![1, 2, 3, 4],
                vec![1, 2, 3],
                vec![1, 2],
                vec![1],
            ]
        );
        for (i, p) in phases.iter().enumerate() {
            assert_eq!(p.start_s, 100.0 * i as f64);
            assert_eq!(p.end_s, 100.0 * (i + 1) as f64);
            assert!(close(
                p.efficiency_mbps,
                900.0 + [0.0, 450.0, 750.0, 950.0, 750.0, 450.0, 0.0][i]
            ));
            assert!(close(p.utilization, p.efficiency_mbps / 1000.0));
            assert_eq!(p.stability, 0.0);
        }
        assert_eq!(phases[0].jain, 1.0);
        assert!(close(
            phases[1].jain,
            1350.0 * 1350.0 / (2.0 * (810000.0 + 202500.0))
        ));
        assert_eq!(phases[3].flow_mbps, vec![900.0, 450.0, 300.0, 200.0]);
        assert!(close(reports[1].avg_mbps, 450.0));
        assert_eq!(reports[0].samples_mbps.len(), 700);
    }

    #[test]
    fn close_boundaries_merge_and_equal_sets_join() {
        // Flow 2 starts 0.3 s after flow 3 stops: with 1 s samples that is one boundary.
        let n = 30;
        let flows = vec![
            flow(1, 0.0, 30.0, n, |_| 10),
            flow(3, 0.0, 10.0, n, |_| 10),
            flow(2, 10.0, 30.0, n, |_| 10),
        ];
        let mut r = run(30.0, flows);
        r.flows[2].start_s = 10.3;
        // A zero-length flow and a flow outside the run do not create phases.
        r.flows.push(flow(7, 15.0, 15.0, n, |_| 0));
        r.flows.push(flow(8, 40.0, 50.0, n, |_| 0));
        // A very short flow within one sample interval is never active and its boundaries vanish.
        r.flows.push(flow(9, 20.1, 20.3, n, |_| 0));
        let (_, phases) = analyze(&r);
        let sets: Vec<(f64, f64, Vec<usize>)> = phases
            .iter()
            .map(|p| (p.start_s, p.end_s, p.flows.clone()))
            .collect();
        assert_eq!(
            sets,
            vec![(0.0, 10.0, vec![1, 3]), (10.0, 30.0, vec![1, 2])]
        );
    }

    #[test]
    fn idle_phases_are_omitted() {
        let n = 30;
        let flows = vec![flow(1, 0.0, 10.0, n, |_| 5), flow(2, 20.0, 30.0, n, |_| 5)];
        let (_, phases) = analyze(&run(30.0, flows));
        let sets: Vec<(f64, f64, Vec<usize>)> = phases
            .iter()
            .map(|p| (p.start_s, p.end_s, p.flows.clone()))
            .collect();
        assert_eq!(sets, vec![(0.0, 10.0, vec![1]), (20.0, 30.0, vec![2])]);
    }

    #[test]
    fn warmup_skips_the_start_of_each_phase() {
        // Slow start-like ramp: 0 Mb/s in the first 5 s of the phase, 100 afterwards.
        let n = 20;
        let flows = vec![flow(1, 0.0, 20.0, n, |k| if k % 10 < 5 { 0 } else { 100 })];
        let mut r = run(20.0, flows);
        r.flows
            .push(flow(2, 10.0, 20.0, n, |k| if k < 15 { 0 } else { 50 }));
        let (_, no_warmup) = analyze(&r);
        assert!(close(no_warmup[0].flow_mbps[0], 50.0));
        assert!(no_warmup[0].stability > 0.0);
        r.warmup_s = 5.0;
        let (_, with_warmup) = analyze(&r);
        assert_eq!(with_warmup.len(), 2);
        assert_eq!(with_warmup[0].flow_mbps, vec![100.0]);
        assert_eq!(with_warmup[0].stability, 0.0);
        assert_eq!(with_warmup[1].flow_mbps, vec![100.0, 50.0]);
        assert!(close(with_warmup[1].jain, 150.0 * 150.0 / (2.0 * 12500.0)));
        // The reported phase keeps its real bounds.
        assert_eq!((with_warmup[1].start_s, with_warmup[1].end_s), (10.0, 20.0));
        // A warm-up longer than the phase is not applied.
        r.warmup_s = 50.0;
        let (_, too_long) = analyze(&r);
        assert!(close(too_long[0].flow_mbps[0], 50.0));
    }

    #[test]
    fn stability_in_a_phase_uses_sample_std_dev() {
        // Samples alternate 100, 300: mean 200, s = sqrt(4 · 100² / 3).
        let n = 4;
        let flows = vec![flow(1, 0.0, 4.0, n, |k| if k % 2 == 0 { 100 } else { 300 })];
        let (_, phases) = analyze(&run(4.0, flows));
        let s = sample_std_dev(&[100.0, 300.0, 100.0, 300.0]);
        assert!(close(s, (40000.0f64 / 3.0).sqrt()));
        assert!(close(phases[0].stability, s / 200.0));
        assert!(close(phases[0].flow_mbps[0], 200.0));
    }

    #[test]
    fn partial_last_bucket() {
        // 2.5 s run, 1 s samples: buckets of 1, 1 and 0.5 s.
        let mut f = flow(1, 0.0, 2.5, 3, |_| 10);
        f.delivered_bytes[2] = 5 * MB; // 5 Mb in 0.5 s = 10 Mb/s
        f.bytes_delivered = 25 * MB;
        let (reports, phases) = analyze(&run(2.5, vec![f]));
        assert_eq!(reports[0].samples_mbps, vec![10.0, 10.0, 10.0]);
        assert!(close(reports[0].avg_mbps, 10.0));
        assert!(close(phases[0].flow_mbps[0], 10.0));
        assert_eq!(phases[0].stability, 0.0);

        // Time weighting: 12 Mb/s over the half bucket counts half.
        let mut g = flow(1, 0.0, 2.5, 3, |_| 10);
        g.delivered_bytes[2] = 6 * MB;
        let (reports, phases) = analyze(&run(2.5, vec![g]));
        assert!(close(reports[0].samples_mbps[2], 12.0));
        assert!(close(phases[0].flow_mbps[0], 26.0 / 2.5));
    }

    #[test]
    fn sub_sample_phase_uses_overlapping_buckets() {
        // Phase [0, 0.5) with dt = 1 s... boundaries closer than dt/2 merge, so use dt = 1 and a
        // flow active in [0, 0.6) of a 10 s run: the phase covers 60 % of bucket 0.
        let n = 10;
        let mut r = run(10.0, vec![flow(1, 0.0, 10.0, n, |_| 100)]);
        let mut f = flow(2, 0.0, 0.6, n, |_| 0);
        f.delivered_bytes[0] = 30 * MB;
        r.flows.push(f);
        r.link_offered_pkts[0] = 100;
        r.link_dropped_pkts[0] = 10;
        r.flows[0].rtt_sum_us[0] = 2.0 * 110_000.0;
        r.flows[0].rtt_count[0] = 2;
        let (_, phases) = analyze(&r);
        assert_eq!(phases.len(), 2);
        assert_eq!((phases[0].start_s, phases[0].end_s), (0.0, 0.6));
        assert_eq!(phases[0].flows, vec![1, 2]);
        assert!(close(phases[0].flow_mbps[0], 100.0));
        assert!(close(phases[0].flow_mbps[1], 30.0));
        assert_eq!(phases[0].stability, 0.0);
        assert!(close(phases[0].loss_rate, 0.1));
        assert!(close(phases[0].avg_rtt_ms, 110.0));
        // The second phase starts at 0.6 and measures buckets 1..10 only.
        assert_eq!(phases[1].loss_rate, 0.0);
        assert_eq!(phases[1].avg_rtt_ms, 0.0);
    }

    #[test]
    fn loss_and_rtt_per_phase() {
        let n = 4;
        let mut r = run(
            4.0,
            vec![flow(1, 0.0, 4.0, n, |_| 10), flow(2, 2.0, 4.0, n, |_| 10)],
        );
        r.link_offered_pkts = vec![100, 100, 1000, 1000];
        r.link_dropped_pkts = vec![0, 1, 10, 30];
        r.flows[0].rtt_sum_us = vec![100_000.0, 300_000.0, 0.0, 220_000.0];
        r.flows[0].rtt_count = vec![1, 2, 0, 2];
        r.flows[1].rtt_sum_us = vec![0.0, 0.0, 130_000.0, 0.0];
        r.flows[1].rtt_count = vec![0, 0, 1, 0];
        let (_, phases) = analyze(&r);
        assert_eq!(phases.len(), 2);
        assert!(close(phases[0].loss_rate, 1.0 / 200.0));
        assert!(close(phases[1].loss_rate, 40.0 / 2000.0));
        // Flow 1: 400 ms / 3 samples.
        assert!(close(phases[0].avg_rtt_ms, 400.0 / 3.0));
        // Mean of flow 1 (110 ms) and flow 2 (130 ms).
        assert!(close(phases[1].avg_rtt_ms, 120.0));
        // Queueing: the RTT above each flow's 100 ms base, averaged over the flows.
        assert!(close(phases[0].avg_queueing_ms, 400.0 / 3.0 - 100.0));
        assert!(close(phases[1].avg_queueing_ms, 20.0));
    }

    #[test]
    fn degenerate_inputs_give_empty_results() {
        let mut r = run(0.0, vec![flow(1, 0.0, 0.0, 0, |_| 0)]);
        assert_eq!(analyze(&r), (vec![], vec![]));
        r.duration_s = f64::NAN;
        assert_eq!(analyze(&r), (vec![], vec![]));
        r.duration_s = 10.0;
        r.sample_interval_s = 0.0;
        assert_eq!(analyze(&r), (vec![], vec![]));
        r.sample_interval_s = 1e-12; // too many buckets
        assert_eq!(analyze(&r), (vec![], vec![]));
        assert_eq!(analyze(&RunRecord::default()), (vec![], vec![]));
        // No flows: no phases, no reports.
        assert_eq!(analyze(&run(10.0, vec![])), (vec![], vec![]));
        // Short vectors are padded with zeros.
        let mut r = run(10.0, vec![flow(1, 0.0, 10.0, 0, |_| 0)]);
        r.link_offered_pkts.clear();
        let (reports, phases) = analyze(&r);
        assert_eq!(reports[0].samples_mbps, vec![0.0; 10]);
        assert_eq!(phases.len(), 1);
        assert_eq!(phases[0].jain, 0.0);
        assert_eq!(phases[0].stability, 0.0);
    }

    #[test]
    fn reports_serialize_to_json() {
        let (reports, phases) = analyze(&run(2.0, vec![flow(1, 0.0, 2.0, 2, |_| 1)]));
        let json = serde_json::to_string(&(reports, phases)).expect("serializable");
        assert!(json.contains("\"efficiency_mbps\":1.0"));
        assert!(json.contains("\"samples_mbps\":[1.0,1.0]"));
    }

    fn any_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => -10.0..120.0f64,
            1 => Just(0.0),
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => any::<f64>(),
        ]
    }

    fn any_flow() -> impl Strategy<Value = FlowRecord> {
        (
            (0usize..100, any_f64(), any_f64(), any_f64(), any::<u64>()),
            prop::collection::vec(prop_oneof![0u64..10_000_000, any::<u64>()], 0..150),
            prop::collection::vec(any_f64(), 0..150),
            prop::collection::vec(any::<u64>(), 0..150),
            (any::<u64>(), any::<u64>()),
        )
            .prop_map(
                |((id, rtt, start, stop, bytes), delivered, rs, rc, (re, se))| FlowRecord {
                    id,
                    cc: "udt".into(),
                    rtt_ms: rtt,
                    start_s: start,
                    stop_s: stop,
                    bytes_delivered: bytes,
                    delivered_bytes: delivered,
                    rtt_sum_us: rs,
                    rtt_count: rc,
                    retransmitted_pkts: re,
                    sent_pkts: se,
                },
            )
    }

    fn any_run() -> impl Strategy<Value = RunRecord> {
        (
            // Not `any::<f64>()`: a legal but huge grid (say 10⁷ buckets) would only make the
            // test slow; oversized grids are covered by `degenerate_inputs_give_empty_results`.
            prop_oneof![
                4 => -10.0..150.0f64,
                1 => Just(0.0),
                1 => Just(f64::NAN),
                1 => Just(f64::INFINITY),
                1 => Just(1e300),
            ],
            prop_oneof![
                6 => 0.05..5.0f64,
                1 => Just(0.0),
                1 => Just(-1.0),
                1 => Just(f64::NAN),
                1 => Just(f64::INFINITY),
                1 => Just(1e-300),
                1 => Just(1e300),
            ],
            any_f64(),
            any_f64(),
            prop::collection::vec(any_flow(), 0..6),
            prop::collection::vec(any::<u64>(), 0..150),
            prop::collection::vec(any::<u64>(), 0..150),
        )
            .prop_map(|(d, dt, link, warm, flows, off, drop)| RunRecord {
                duration_s: d,
                sample_interval_s: dt,
                link_rate_mbps: link,
                warmup_s: warm,
                flows,
                link_offered_pkts: off,
                link_dropped_pkts: drop,
            })
    }

    proptest! {
        #[test]
        fn analyze_never_panics_and_outputs_are_finite(r in any_run()) {
            let (reports, phases) = analyze(&r);
            prop_assert!(reports.is_empty() || reports.len() == r.flows.len());
            for f in &reports {
                prop_assert!(f.avg_mbps.is_finite() && f.avg_mbps >= 0.0);
                prop_assert!(f.samples_mbps.iter().all(|x| x.is_finite() && *x >= 0.0));
            }
            let mut prev_end = 0.0;
            for p in &phases {
                prop_assert!(p.start_s.is_finite() && p.end_s.is_finite());
                prop_assert!(p.start_s >= prev_end && p.end_s > p.start_s);
                prop_assert!(p.end_s <= r.duration_s);
                prev_end = p.end_s;
                prop_assert!(!p.flows.is_empty());
                prop_assert_eq!(p.flows.len(), p.flow_mbps.len());
                for x in [p.efficiency_mbps, p.utilization, p.jain, p.stability, p.loss_rate, p.avg_rtt_ms, p.avg_queueing_ms] {
                    prop_assert!(x.is_finite());
                }
                prop_assert!(p.flow_mbps.iter().all(|x| x.is_finite()));
                prop_assert!((0.0..=1.0).contains(&p.jain));
                prop_assert!((0.0..=1.0).contains(&p.loss_rate));
                prop_assert!(p.stability >= 0.0);
            }
        }

        #[test]
        fn jain_is_in_unit_interval(xs in prop::collection::vec(any_f64(), 0..20)) {
            let j = jain(&xs);
            prop_assert!((0.0..=1.0).contains(&j));
        }

        #[test]
        fn stability_is_finite_and_non_negative(
            flows in prop::collection::vec(prop::collection::vec(any_f64(), 0..20), 0..5)
        ) {
            let refs: Vec<&[f64]> = flows.iter().map(Vec::as_slice).collect();
            let s = stability(&refs);
            prop_assert!(s.is_finite() && s >= 0.0);
        }
    }
}
