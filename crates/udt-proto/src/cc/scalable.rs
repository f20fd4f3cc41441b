//! Scalable TCP (T. Kelly, "Scalable TCP: Improving Performance in Highspeed Wide Area
//! Networks", ACM CCR 33(2), 2003) on [`Tcp`](super::ctcp::Tcp).
//!
//! Above the legacy window, every acknowledged packet adds `a = 0.01` packets and a loss event
//! removes `b = 0.125` of the window, so the time to recover from a loss is about
//! `log(1/(1-b))/log(1+a)` ≈ 13 RTTs whatever the window. At or below the legacy window
//! ([`LEGACY_WINDOW_PKTS`]) it behaves as NewReno, to share low-speed links fairly.

use super::ctcp::{Tcp, TcpRules};
use super::CcContext;

/// Increase per acknowledged packet, packets (Kelly's `a`).
pub const A: f64 = 0.01;
/// Fraction of the window removed at a loss event (Kelly's `b`).
pub const B: f64 = 0.125;
/// Window up to which NewReno's rules apply, packets (Kelly's `lwnd`).
pub const LEGACY_WINDOW_PKTS: f64 = 16.0;

/// Scalable TCP's rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScalableRules;

impl TcpRules for ScalableRules {
    fn increase(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        if cwnd <= LEGACY_WINDOW_PKTS {
            1.0 / cwnd
        } else {
            A
        }
    }
    fn decrease(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        if cwnd <= LEGACY_WINDOW_PKTS {
            cwnd / 2.0
        } else {
            cwnd * (1.0 - B)
        }
    }
}

/// Scalable TCP.
pub type Scalable = Tcp<ScalableRules>;

/// A Scalable TCP instance.
pub fn scalable() -> Scalable {
    Tcp::new(ScalableRules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testkit::Harness;

    #[test]
    fn multiplicative_increase_and_one_eighth_decrease() {
        let mut h = Harness::new(Box::new(scalable()));
        let first = h.send(1);
        h.loss(first, first); // leave slow start at cwnd 2
        h.ack(first.next());
        // Grow past the legacy window with NewReno rules.
        while h.cwnd() <= LEGACY_WINDOW_PKTS {
            h.round(100_000);
        }
        let w = h.cwnd();
        h.round(100_000);
        let n = w.floor();
        assert!(
            (h.cwnd() - (w + A * n)).abs() < 1e-9,
            "{} vs {}",
            h.cwnd(),
            w
        );
        // Decrease by 1/8.
        let w = h.cwnd();
        let last = h.send(w as u32);
        h.loss(last, last);
        h.ack(last.next());
        assert!((h.cwnd() - w * 0.875).abs() < 1e-9);
    }

    #[test]
    fn legacy_window_behaves_as_reno() {
        let mut r = ScalableRules;
        let inputs = crate::cc::testkit::Harness::new(Box::new(scalable())).inputs;
        let mut controls = crate::cc::CcControls::default();
        let ctx = CcContext::new(&inputs, &mut controls);
        assert_eq!(r.increase(&ctx, 10.0), 0.1);
        assert_eq!(r.decrease(&ctx, 10.0), 5.0);
        assert_eq!(r.increase(&ctx, 1000.0), A);
        assert_eq!(r.decrease(&ctx, 1000.0), 875.0);
    }
}
