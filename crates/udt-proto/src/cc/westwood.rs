//! TCP Westwood (M. Gerla, M. Y. Sanadidi, R. Wang, A. Zanella, C. Casetti, S. Mascolo, "TCP
//! Westwood: Congestion Window Control Using Bandwidth Estimation", IEEE Globecom 2001), with
//! the per-RTT bandwidth sampling of Westwood+ (Mascolo et al., 2004), on
//! [`Tcp`](super::ctcp::Tcp).
//!
//! The sender estimates the bandwidth it gets from the rate of acknowledged packets: one sample
//! per RTT (`acked packets / elapsed time`), smoothed by `BWE ← 7/8·BWE + 1/8·sample`. After a
//! loss event the window is not halved but set to the pipe size the estimate implies,
//! `ssthresh = BWE · RTT_min` (the slow-start threshold after a timeout too), so random losses
//! that are not congestion cost little. Increase is NewReno's.

use super::ctcp::{Tcp, TcpRules};
use super::CcContext;
use crate::time::Instant;

/// Weight of a new bandwidth sample in the estimate.
pub const SAMPLE_WEIGHT: f64 = 1.0 / 8.0;
/// Shortest sampling interval, µs (so that tiny RTTs do not give one-ACK samples).
pub const MIN_SAMPLE_US: u64 = 10_000;

/// Westwood's bandwidth estimator.
#[derive(Clone, Copy, Debug, Default)]
pub struct WestwoodRules {
    /// Smoothed bandwidth estimate, packets per second.
    bwe_pps: f64,
    /// Smallest RTT seen, µs.
    rtt_min_us: Option<u32>,
    /// Start of the current sample and packets acknowledged since.
    sample_start: Option<Instant>,
    sample_acked: u64,
}

impl WestwoodRules {
    /// The bandwidth estimate, packets per second.
    pub fn bwe_pps(&self) -> f64 {
        self.bwe_pps
    }
}

impl TcpRules for WestwoodRules {
    fn on_acked(&mut self, ctx: &CcContext<'_>, acked: u32) {
        let rtt = ctx.rtt_us();
        if rtt > 0 {
            self.rtt_min_us = Some(self.rtt_min_us.map_or(rtt, |m| m.min(rtt)));
        }
        let now = ctx.now();
        let Some(start) = self.sample_start else {
            self.sample_start = Some(now);
            return;
        };
        self.sample_acked += u64::from(acked);
        let elapsed = now.micros_since(start);
        if elapsed >= u64::from(rtt).max(MIN_SAMPLE_US) {
            let sample = self.sample_acked as f64 * 1e6 / elapsed as f64;
            self.bwe_pps = if self.bwe_pps == 0.0 {
                sample
            } else {
                (1.0 - SAMPLE_WEIGHT) * self.bwe_pps + SAMPLE_WEIGHT * sample
            };
            self.sample_start = Some(now);
            self.sample_acked = 0;
        }
    }
    fn increase(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        1.0 / cwnd
    }
    fn decrease(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        match self.rtt_min_us {
            Some(rtt) if self.bwe_pps > 0.0 => self.bwe_pps * f64::from(rtt) / 1e6,
            // No estimate yet: NewReno.
            _ => cwnd / 2.0,
        }
    }
}

/// TCP Westwood.
pub type Westwood = Tcp<WestwoodRules>;

/// A TCP Westwood instance.
pub fn westwood() -> Westwood {
    Tcp::new(WestwoodRules::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testkit::Harness;

    #[test]
    fn window_after_loss_is_the_estimated_pipe() {
        let mut h = Harness::new(Box::new(westwood()));
        // 100 packets acknowledged every 100 ms: 1000 packets/s over a 100 ms RTT.
        for _ in 0..60 {
            let first = h.inputs.snd_curr_seq.next();
            h.send(100);
            h.advance_us(100_000);
            h.ack(first.add(100));
        }
        let cwnd_before = h.cwnd();
        let last = h.send(10);
        h.loss(last, last);
        h.ack(last.next());
        // BWE·RTTmin = 1000 pkt/s · 0.1 s = 100 packets, not half the window.
        assert!(
            (h.cwnd() - 100.0).abs() < 1.0,
            "{} (was {})",
            h.cwnd(),
            cwnd_before
        );
    }

    #[test]
    fn without_an_estimate_it_halves() {
        let mut h = Harness::new(Box::new(westwood()));
        h.round(100_000); // cwnd 4; every ACK at one instant: no sample yet
        let last = h.send(4);
        h.loss(last, last);
        h.ack(last.next());
        assert_eq!(h.cwnd(), 2.0);
    }
}
