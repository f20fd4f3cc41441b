//! HighSpeed TCP (S. Floyd, RFC 3649, "HighSpeed TCP for Large Congestion Windows", 2003) on
//! [`Tcp`](super::ctcp::Tcp).
//!
//! Up to `Low_Window` = 38 packets it is NewReno. Above, the response function is
//! `w = 0.12 / p^0.835` packets, reached by the RFC's formulas (§5), computed here rather than
//! read from the RFC's table (which rounds them):
//! * `b(w) = (High_Decrease − 0.5) · (ln w − ln Low_Window) / (ln High_Window − ln Low_Window)
//!   + 0.5`, with `High_Window` = 83 000 packets and `High_Decrease` = 0.1;
//! * `p(w) = 0.078 / w^1.2`;
//! * `a(w) = w² · p(w) · 2 · b(w) / (2 − b(w))` packets per RTT;
//! * per acknowledged packet `cwnd += a(w)/w`; at a loss event `cwnd ← (1 − b(w)) · cwnd`.

use super::ctcp::{Tcp, TcpRules};
use super::CcContext;

/// Window up to which NewReno's rules apply, packets (RFC 3649 `Low_Window`).
pub const LOW_WINDOW_PKTS: f64 = 38.0;
/// Window at which the decrease reaches `HIGH_DECREASE`, packets (`High_Window`).
pub const HIGH_WINDOW_PKTS: f64 = 83_000.0;
/// Decrease fraction at `High_Window` (`High_Decrease`).
pub const HIGH_DECREASE: f64 = 0.1;

/// The decrease fraction `b(w)` at window `w` packets.
pub fn b(w: f64) -> f64 {
    if w <= LOW_WINDOW_PKTS {
        return 0.5;
    }
    let x = (w.ln() - LOW_WINDOW_PKTS.ln()) / (HIGH_WINDOW_PKTS.ln() - LOW_WINDOW_PKTS.ln());
    (HIGH_DECREASE - 0.5) * x.min(1.0) + 0.5
}

/// The increase `a(w)` at window `w`, packets per RTT.
pub fn a(w: f64) -> f64 {
    if w <= LOW_WINDOW_PKTS {
        return 1.0;
    }
    let p = 0.078 / w.powf(1.2);
    let bw = b(w);
    (w * w * p * 2.0 * bw / (2.0 - bw)).max(1.0)
}

/// HighSpeed TCP's rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct HighSpeedRules;

impl TcpRules for HighSpeedRules {
    fn increase(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        a(cwnd) / cwnd
    }
    fn decrease(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        cwnd * (1.0 - b(cwnd))
    }
}

/// HighSpeed TCP.
pub type HighSpeed = Tcp<HighSpeedRules>;

/// A HighSpeed TCP instance.
pub fn highspeed() -> HighSpeed {
    Tcp::new(HighSpeedRules)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of RFC 3649's table (Appendix B): window, a(w), b(w).
    #[test]
    fn formulas_match_the_rfc_table() {
        for (w, aw, bw) in [
            (38.0, 1.0, 0.50),
            (118.0, 2.0, 0.44),
            (221.0, 3.0, 0.41),
            (347.0, 4.0, 0.38),
            (1058.0, 8.0, 0.33),
            (10661.0, 30.0, 0.21),
            (84035.0, 71.0, 0.10),
        ] {
            assert!((a(w) - aw).abs() / aw < 0.1, "a({w}) = {}", a(w));
            assert!((b(w) - bw).abs() < 0.011, "b({w}) = {}", b(w));
        }
    }

    #[test]
    fn reno_below_low_window() {
        let mut r = HighSpeedRules;
        let inputs = crate::cc::testkit::Harness::new(Box::new(highspeed())).inputs;
        let mut controls = crate::cc::CcControls::default();
        let ctx = CcContext::new(&inputs, &mut controls);
        assert_eq!(r.increase(&ctx, 20.0), 1.0 / 20.0);
        assert_eq!(r.decrease(&ctx, 20.0), 10.0);
        assert!((r.decrease(&ctx, 10_000.0) - 10_000.0 * (1.0 - b(10_000.0))).abs() < 1e-9);
    }
}
