//! Smoothed RTT and RTT variance (spec §8.4).

/// Initial smoothed RTT before any sample, µs (10 × SYN).
pub const INITIAL_RTT_US: u32 = 100_000;
/// Initial RTT variance before any sample, µs.
pub const INITIAL_RTT_VAR_US: u32 = 50_000;
/// Samples above this are clamped, µs. An RTT sample can come straight from the peer (the RTT
/// word of an ACK), so a hostile value must not push timers into the far future.
pub const MAX_RTT_SAMPLE_US: u32 = 60_000_000;

/// Exponentially weighted RTT estimate with the weights of UDT (7/8 and 3/4), in integer µs.
///
/// The first sample replaces the initial guess (RTT = sample, variance = sample / 2, as RFC
/// 6298 starts), where 4.11 folds it into its 100 ms guess with weight 1/8: on a 10 ms path
/// 4.11's estimate needs about twenty samples (0.2 s) to come within 10 % of the truth, and
/// every timer and rate decision made from it meanwhile is off. A peer sees only better
/// RTT values in our ACKs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    rtt_us: u32,
    var_us: u32,
    /// The latest sample, µs (the initial RTT before any).
    latest_us: u32,
    /// No sample has been folded in yet.
    initial: bool,
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new(INITIAL_RTT_US, INITIAL_RTT_VAR_US)
    }
}

impl RttEstimator {
    /// An estimator starting from the given RTT and variance, µs.
    pub fn new(rtt_us: u32, var_us: u32) -> Self {
        RttEstimator {
            rtt_us,
            var_us,
            latest_us: rtt_us,
            initial: true,
        }
    }

    /// Folds in one sample, µs: the first replaces the initial guess; later ones update the
    /// variance first, against the old RTT, as 4.11 does: `var ← (3·var + |s − rtt|) / 4`,
    /// `rtt ← (7·rtt + s) / 8`.
    pub fn update(&mut self, sample_us: u32) {
        self.latest_us = sample_us.min(MAX_RTT_SAMPLE_US);
        if self.initial {
            self.initial = false;
            let s = sample_us.min(MAX_RTT_SAMPLE_US);
            self.rtt_us = s;
            self.var_us = s / 2;
            return;
        }
        let s = u64::from(sample_us.min(MAX_RTT_SAMPLE_US));
        let rtt = u64::from(self.rtt_us);
        let diff = s.abs_diff(rtt);
        self.var_us = ((3 * u64::from(self.var_us) + diff) >> 2) as u32;
        self.rtt_us = ((7 * rtt + s) >> 3) as u32;
    }

    /// Smoothed RTT, µs.
    pub fn rtt_us(&self) -> u32 {
        self.rtt_us
    }

    /// The latest sample, µs (the initial RTT before any): what a receiver reports in its
    /// ACKs, so that the sender sees a queue as it forms rather than after the smoothing's
    /// lag (eight samples, 80 ms at one sample per SYN). The sender smooths what it gets, as
    /// 4.11's does, so the smoothing happens once instead of twice.
    pub fn latest_us(&self) -> u32 {
        self.latest_us
    }

    /// Smoothed RTT variance, µs.
    pub fn var_us(&self) -> u32 {
        self.var_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_replaces_the_guess_then_udt_weights() {
        let mut e = RttEstimator::default();
        e.update(20_000);
        assert_eq!((e.rtt_us(), e.var_us()), (20_000, 10_000));
        e.update(100_000);
        // var = (3·10000 + 80000)/4 = 27500; rtt = (7·20000 + 100000)/8 = 30000
        assert_eq!(e.var_us(), 27_500);
        assert_eq!(e.rtt_us(), 30_000);
    }

    #[test]
    fn converges_and_clamps() {
        let mut e = RttEstimator::default();
        for _ in 0..200 {
            e.update(1000);
        }
        assert!((999..=1001).contains(&e.rtt_us()));
        e.update(u32::MAX);
        assert!(e.rtt_us() <= MAX_RTT_SAMPLE_US);
    }
}
