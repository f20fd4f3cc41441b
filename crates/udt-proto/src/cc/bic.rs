//! BiC TCP, binary increase congestion control (L. Xu, K. Harfoush, I. Rhee, "Binary Increase
//! Congestion Control for Fast Long-Distance Networks", IEEE Infocom 2004) on
//! [`Tcp`](super::ctcp::Tcp).
//!
//! Per RTT the window grows by an increment chosen by a binary search between the window after
//! the last loss and `W_max`, the window at which it occurred:
//! * below `W_max`: the increment is half the distance to `W_max`, clamped to
//!   `[S_min, S_max]` (additive increase far away, binary search close by);
//! * at or above `W_max` ("max probing"): the increment starts at `S_min` and grows with the
//!   distance beyond `W_max` up to `S_max`, the mirror image of the search;
//! * at a loss event the window is multiplied by `1 − β`; with fast convergence, if the window
//!   had not reached the previous `W_max`, `W_max` is lowered to `(2 − β)/2 · w` so that a new
//!   flow can take bandwidth.
//!
//! Parameters are the paper's: `S_max` = 32, `S_min` = 0.01, `β` = 0.125, and NewReno's rules
//! at or below the low window of 14 packets.

use super::ctcp::{Tcp, TcpRules};
use super::CcContext;

/// Largest increment per RTT, packets (`S_max`).
pub const S_MAX: f64 = 32.0;
/// Smallest increment per RTT, packets (`S_min`).
pub const S_MIN: f64 = 0.01;
/// Multiplicative decrease fraction (`β`).
pub const BETA: f64 = 0.125;
/// Window up to which NewReno's rules apply, packets.
pub const LOW_WINDOW_PKTS: f64 = 14.0;

/// BiC's state: the window at the last loss.
#[derive(Clone, Copy, Debug, Default)]
pub struct BicRules {
    /// `W_max`, packets (0 before the first loss: max probing from the start).
    w_max: f64,
}

impl BicRules {
    /// The increment per RTT at window `w`, packets.
    pub fn increment_per_rtt(&self, w: f64) -> f64 {
        if w < self.w_max {
            ((self.w_max - w) / 2.0).clamp(S_MIN, S_MAX)
        } else {
            (w - self.w_max).clamp(S_MIN, S_MAX)
        }
    }

    /// `W_max`, packets.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }
}

impl TcpRules for BicRules {
    fn increase(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        if cwnd <= LOW_WINDOW_PKTS {
            1.0 / cwnd
        } else {
            self.increment_per_rtt(cwnd) / cwnd
        }
    }
    fn decrease(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        if cwnd <= LOW_WINDOW_PKTS {
            self.w_max = cwnd;
            return cwnd / 2.0;
        }
        // Fast convergence: a flow that lost before reaching its old maximum gives way.
        self.w_max = if cwnd < self.w_max {
            cwnd * (2.0 - BETA) / 2.0
        } else {
            cwnd
        };
        cwnd * (1.0 - BETA)
    }
}

/// BiC TCP.
pub type Bic = Tcp<BicRules>;

/// A BiC TCP instance.
pub fn bic() -> Bic {
    Tcp::new(BicRules::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testkit::Harness;

    fn ctx_parts() -> (crate::cc::CcInputs, crate::cc::CcControls) {
        (
            Harness::new(Box::new(bic())).inputs,
            crate::cc::CcControls::default(),
        )
    }

    #[test]
    fn binary_search_towards_w_max_then_max_probing() {
        let (inputs, mut controls) = ctx_parts();
        let ctx = CcContext::new(&inputs, &mut controls);
        let mut r = BicRules::default();
        let after = r.decrease(&ctx, 1000.0);
        assert_eq!(after, 875.0);
        assert_eq!(r.w_max(), 1000.0);
        // 125 below W_max: additive, capped at S_max.
        assert_eq!(r.increment_per_rtt(875.0), S_MAX);
        // 40 below: half the distance.
        assert_eq!(r.increment_per_rtt(960.0), 20.0);
        // Very close: S_min.
        assert_eq!(r.increment_per_rtt(999.999), S_MIN);
        // Max probing grows with the distance beyond W_max.
        assert_eq!(r.increment_per_rtt(1000.0), S_MIN);
        assert_eq!(r.increment_per_rtt(1004.0), 4.0);
        assert_eq!(r.increment_per_rtt(1100.0), S_MAX);
        // Per packet: the increment spread over one window.
        assert_eq!(r.increase(&ctx, 960.0), 20.0 / 960.0);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let (inputs, mut controls) = ctx_parts();
        let ctx = CcContext::new(&inputs, &mut controls);
        let mut r = BicRules::default();
        r.decrease(&ctx, 1000.0);
        r.decrease(&ctx, 900.0);
        assert!((r.w_max() - 900.0 * (2.0 - BETA) / 2.0).abs() < 1e-9);
        // Low windows: NewReno.
        assert_eq!(r.decrease(&ctx, 10.0), 5.0);
        assert_eq!(r.increase(&ctx, 10.0), 0.1);
    }

    #[test]
    fn window_converges_to_w_max_within_a_few_rounds() {
        let mut h = Harness::new(Box::new(bic()));
        for _ in 0..9 {
            h.round(100_000); // slow start to 1024
        }
        let last = h.send(h.cwnd() as u32);
        h.loss(last, last);
        h.ack(last.next());
        assert_eq!(h.cwnd(), 1024.0 * 0.875);
        // 128 below W_max: steps of up to 32 per round, then halving steps.
        for _ in 0..3 {
            h.round(100_000);
        }
        assert!(h.cwnd() > 980.0 && h.cwnd() < 1000.0, "{}", h.cwnd());
        for _ in 0..6 {
            h.round(100_000);
        }
        assert!(h.cwnd() > 1018.0 && h.cwnd() <= 1024.5, "{}", h.cwnd());
    }
}
