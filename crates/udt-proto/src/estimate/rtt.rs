//! Smoothed RTT and RTT variance (spec §8.4).

/// Initial smoothed RTT before any sample, µs (10 × SYN).
pub const INITIAL_RTT_US: u32 = 100_000;
/// Initial RTT variance before any sample, µs.
pub const INITIAL_RTT_VAR_US: u32 = 50_000;
/// Samples above this are clamped, µs. An RTT sample can come straight from the peer (the RTT
/// word of an ACK), so a hostile value must not push timers into the far future.
pub const MAX_RTT_SAMPLE_US: u32 = 60_000_000;

/// Exponentially weighted RTT estimate with the weights of UDT (7/8 and 3/4), in integer µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    rtt_us: u32,
    var_us: u32,
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new(INITIAL_RTT_US, INITIAL_RTT_VAR_US)
    }
}

impl RttEstimator {
    /// An estimator starting from the given RTT and variance, µs.
    pub fn new(rtt_us: u32, var_us: u32) -> Self {
        RttEstimator { rtt_us, var_us }
    }

    /// Folds in one sample, µs. The variance is updated first, against the old RTT, as 4.11
    /// does: `var ← (3·var + |s − rtt|) / 4`, `rtt ← (7·rtt + s) / 8`.
    pub fn update(&mut self, sample_us: u32) {
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

    /// Smoothed RTT variance, µs.
    pub fn var_us(&self) -> u32 {
        self.var_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_uses_udt_weights() {
        let mut e = RttEstimator::default();
        e.update(20_000);
        // var = (3·50000 + 80000)/4 = 57500; rtt = (7·100000 + 20000)/8 = 90000
        assert_eq!(e.var_us(), 57_500);
        assert_eq!(e.rtt_us(), 90_000);
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
