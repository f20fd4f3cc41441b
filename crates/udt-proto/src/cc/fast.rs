//! FAST TCP (C. Jin, D. X. Wei, S. H. Low, "FAST TCP: Motivation, Architecture, Algorithms,
//! Performance", IEEE Infocom 2004) on the delay machinery of [`vegas`](super::vegas).
//!
//! Once per round trip the window moves toward the equilibrium where each flow keeps `α`
//! packets queued:
//! `w ← min(2w, (1 − γ)·w + γ·(BaseRTT/RTT · w + α))`.
//! The `2w` bound makes start-up a doubling per RTT (no separate slow start). Loss and timeout
//! handling, the per-packet RTT and the ACK interval are Vegas's.
//!
//! Parameters: `α` = [`ALPHA_PKTS`] packets per flow (the paper's experiments used 200 at
//! 800 Mb/s; 50 keeps about 0.6 ms of queue per flow at 1 Gb/s), `γ` = [`GAMMA`].

use super::vegas::{DelayRules, DelayTcp};

/// Packets each flow aims to keep queued.
pub const ALPHA_PKTS: f64 = 50.0;
/// Weight of the new target in each update.
pub const GAMMA: f64 = 0.5;

/// FAST's update law.
#[derive(Clone, Copy, Debug)]
pub struct FastRules {
    /// Target of own queued packets.
    pub alpha: f64,
    /// Smoothing weight in (0, 1].
    pub gamma: f64,
}

impl Default for FastRules {
    fn default() -> Self {
        FastRules {
            alpha: ALPHA_PKTS,
            gamma: GAMMA,
        }
    }
}

impl DelayRules for FastRules {
    fn per_rtt(&mut self, w: f64, base: f64, rtt: f64) -> f64 {
        let target = base / rtt.max(1.0) * w + self.alpha;
        (2.0 * w).min((1.0 - self.gamma) * w + self.gamma * target)
    }
    fn uses_slow_start(&self) -> bool {
        false
    }
}

/// FAST TCP.
pub type Fast = DelayTcp<FastRules>;

/// A FAST TCP instance with the default parameters.
pub fn fast() -> Fast {
    DelayTcp::new(FastRules::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equilibrium_keeps_alpha_packets_queued() {
        let mut r = FastRules::default();
        // Pipe of 1000 packets (base 100 ms); a window w queues w − 1000 packets, which adds
        // (w − 1000)/1000 of the base RTT.
        let mut w = 10.0;
        for _ in 0..200 {
            let rtt = 100_000.0 * (w / 1000.0f64).max(1.0);
            w = r.per_rtt(w, 100_000.0, rtt);
        }
        assert!((w - (1000.0 + ALPHA_PKTS)).abs() < 0.5, "{w}");
    }

    #[test]
    fn start_up_at_most_doubles() {
        let mut r = FastRules::default();
        assert_eq!(r.per_rtt(4.0, 100.0, 100.0), 8.0);
        assert_eq!(r.per_rtt(1000.0, 100.0, 100.0), 1025.0);
    }
}
