//! A sweep over several seeds: each cell's worst and mean over the seeds.
//!
//! The simulator is deterministic for one seed, but the flows it runs are a chaotic system:
//! a change as small as one packet per second in one flow's arrival-rate input moved single
//! cells of `rtt_fairness.toml` by up to 0.07 of throughput ratio, and the mean of three
//! seeds by up to 0.07 too (`docs/results.md`, twenty-eighth round). A rule judged on one
//! seed is judged on noise; [`worst_over_seeds`] and [`mean_over_seeds`] fold the runs of
//! several seeds into one [`CellResult`] per cell, so that the sweep's table and heat maps
//! show the worst cell the seeds found (and the typical one) instead of one sample.

use crate::sweep::CellResult;
use thiserror::Error;

/// A `--seeds` argument that is not a list of seeds.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SeedsError {
    /// Not of the form `N`, `A-B` or a comma-separated list of those.
    #[error("invalid seed list {0:?}: expected N, A-B or a comma-separated list of them")]
    Invalid(String),
    /// More seeds than [`MAX_SEEDS`].
    #[error("{0} seeds asked for; at most {MAX_SEEDS}")]
    TooMany(u64),
}

/// The most seeds one list may name: each seed is a whole sweep, and a range typed with a
/// digit too many should fail at once rather than run for days.
pub const MAX_SEEDS: u64 = 1000;

/// Parses a seed list: `5`, `1-5` (inclusive), or a comma-separated list of those such as
/// `1-3,7`. Seeds keep their order; repeats are dropped.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>, SeedsError> {
    let bad = || SeedsError::Invalid(text.to_owned());
    let mut seeds = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo: u64 = lo.parse().map_err(|_| bad())?;
        let hi: u64 = hi.parse().map_err(|_| bad())?;
        if hi < lo {
            return Err(bad());
        }
        let count = hi - lo + 1;
        if count > MAX_SEEDS || seeds.len() as u64 + count > MAX_SEEDS {
            return Err(SeedsError::TooMany(seeds.len() as u64 + count));
        }
        for s in lo..=hi {
            if !seeds.contains(&s) {
                seeds.push(s);
            }
        }
    }
    if seeds.is_empty() {
        return Err(bad());
    }
    Ok(seeds)
}

/// Each cell's worst result over the runs (one run per seed, every run with the cells in the
/// same order): the lowest utilization, Jain's index, throughput ratio and friendliness index
/// T (the least room left to TCP); the highest loss rate, retransmission ratio, stability
/// index and queueing delay; the latest t90 (`None`, never reaching 90 %, is the worst); the
/// integrity check passed only if it passed in every run; the wall-clock seconds summed.
/// Empty if `runs` is empty; cells come from the first run, and a run with fewer cells than
/// the first leaves the remaining cells to the runs that have them.
pub fn worst_over_seeds(runs: &[Vec<CellResult>]) -> Vec<CellResult> {
    fold(runs, |rs| {
        let mut w = rs[0].clone();
        for r in &rs[1..] {
            w.utilization = w.utilization.min(r.utilization);
            w.loss_rate = w.loss_rate.max(r.loss_rate);
            w.retrans_ratio = w.retrans_ratio.max(r.retrans_ratio);
            w.t90_s = match (w.t90_s, r.t90_s) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
            w.jain = opt(w.jain, r.jain, f64::min);
            w.throughput_ratio = opt(w.throughput_ratio, r.throughput_ratio, f64::min);
            w.stability = opt(w.stability, r.stability, f64::max);
            w.friendliness = opt(w.friendliness, r.friendliness, f64::min);
            w.queueing_ms = w.queueing_ms.max(r.queueing_ms);
            w.integrity_ok &= r.integrity_ok;
            w.wall_s += r.wall_s;
        }
        w
    })
}

/// Each cell's mean result over the runs (see [`worst_over_seeds`] for the layout): every
/// metric averaged over the runs that have it; t90 only if every run reached 90 %.
pub fn mean_over_seeds(runs: &[Vec<CellResult>]) -> Vec<CellResult> {
    fold(runs, |rs| {
        let n = rs.len() as f64;
        let mean = |f: fn(&CellResult) -> f64| rs.iter().map(f).sum::<f64>() / n;
        let mean_opt = |f: fn(&CellResult) -> Option<f64>| {
            let xs: Vec<f64> = rs.iter().filter_map(f).collect();
            (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
        };
        let mut m = rs[0].clone();
        m.utilization = mean(|r| r.utilization);
        m.loss_rate = mean(|r| r.loss_rate);
        m.retrans_ratio = mean(|r| r.retrans_ratio);
        m.t90_s = if rs.iter().all(|r| r.t90_s.is_some()) {
            mean_opt(|r| r.t90_s)
        } else {
            None
        };
        m.jain = mean_opt(|r| r.jain);
        m.throughput_ratio = mean_opt(|r| r.throughput_ratio);
        m.stability = mean_opt(|r| r.stability);
        m.friendliness = mean_opt(|r| r.friendliness);
        m.queueing_ms = mean(|r| r.queueing_ms);
        m.integrity_ok = rs.iter().all(|r| r.integrity_ok);
        m.wall_s = rs.iter().map(|r| r.wall_s).sum();
        m
    })
}

/// Applies `f` to each cell's results across the runs (at least one per cell).
fn fold(runs: &[Vec<CellResult>], f: impl Fn(&[CellResult]) -> CellResult) -> Vec<CellResult> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|i| {
            let rs: Vec<CellResult> = runs.iter().filter_map(|r| r.get(i).cloned()).collect();
            f(&rs)
        })
        .collect()
}

/// Combines two optional metrics with `f`; one that is missing leaves the other.
fn opt(a: Option<f64>, b: Option<f64>, f: fn(f64, f64) -> f64) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(f(x, y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Cell;

    fn result(util: f64, ratio: f64, stab: f64, t90: Option<f64>, ok: bool) -> CellResult {
        CellResult {
            cell: Cell {
                cc: "udt".into(),
                rate_mbps: 100.0,
                rtt_ms: 10.0,
                queue_bdp: 1.0,
                queue_pkts: 83,
                loss: 0.0,
                path: "plain".into(),
                flows: 2,
            },
            utilization: util,
            loss_rate: 1e-3 * util,
            retrans_ratio: 0.0,
            t90_s: t90,
            jain: Some(ratio),
            throughput_ratio: Some(ratio),
            stability: Some(stab),
            friendliness: None,
            queueing_ms: 10.0 * stab,
            integrity_ok: ok,
            wall_s: 1.0,
        }
    }

    #[test]
    fn seed_lists_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_seeds("3"), Ok(vec![3]));
        assert_eq!(parse_seeds("1-4"), Ok(vec![1, 2, 3, 4]));
        assert_eq!(parse_seeds("1-3, 7,2"), Ok(vec![1, 2, 3, 7]));
        for bad in ["", "x", "3-1", "1-", "-2", "1,,2", "1.5"] {
            assert!(
                matches!(parse_seeds(bad), Err(SeedsError::Invalid(_))),
                "{bad:?}"
            );
        }
        assert_eq!(parse_seeds("1-100000"), Err(SeedsError::TooMany(100_000)));
        assert!(matches!(
            parse_seeds("1-600,601-1200"),
            Err(SeedsError::TooMany(_))
        ));
    }

    #[test]
    fn the_worst_takes_each_metric_in_its_own_bad_direction() {
        let runs = vec![
            vec![result(0.95, 0.80, 0.10, Some(4.0), true)],
            vec![result(0.90, 0.95, 0.20, Some(6.0), true)],
            vec![result(0.97, 0.90, 0.05, Some(5.0), false)],
        ];
        let w = &worst_over_seeds(&runs)[0];
        assert_eq!(w.utilization, 0.90);
        assert_eq!(w.throughput_ratio, Some(0.80));
        assert_eq!(w.jain, Some(0.80));
        assert_eq!(w.stability, Some(0.20));
        assert!((w.queueing_ms - 2.0).abs() < 1e-12);
        assert_eq!(w.t90_s, Some(6.0));
        assert!(!w.integrity_ok);
        assert_eq!(w.wall_s, 3.0);
        let m = &mean_over_seeds(&runs)[0];
        assert!((m.utilization - 0.94).abs() < 1e-12);
        assert!((m.throughput_ratio.unwrap() - 2.65 / 3.0).abs() < 1e-12);
        assert_eq!(m.t90_s, Some(5.0));
        assert!(!m.integrity_ok);
    }

    #[test]
    fn a_seed_that_never_reached_ninety_percent_is_the_worst_t90() {
        let runs = vec![
            vec![result(0.95, 1.0, 0.1, Some(4.0), true)],
            vec![result(0.95, 1.0, 0.1, None, true)],
        ];
        assert_eq!(worst_over_seeds(&runs)[0].t90_s, None);
        assert_eq!(mean_over_seeds(&runs)[0].t90_s, None);
        assert!(worst_over_seeds(&[]).is_empty());
    }
}
