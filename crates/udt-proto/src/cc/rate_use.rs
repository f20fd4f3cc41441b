//! How much of its pacing rate a sender actually uses.
//!
//! A rate-based sender is often held by something other than its rate: the congestion window,
//! the receiver's flow window (packets behind a hole stay in it until the retransmission
//! fills the hole), or an application that writes less than the rate allows. An increase of
//! the rate in that state is never tested against the path. When the window opens, the sender
//! leaves at the untested rate: under 1 % random loss at 1 Gbit/s, 200 ms, the rate of `udt`
//! climbed to 2.3 Gbit/s while it sent about half of that, and the burst that followed
//! overflowed a 200 ms queue (a third of a round trip's packets lost). This is the rate-based
//! form of TCP's congestion-window validation (RFC 7661): grow only what is being used.
//!
//! [`RateUse`] compares the packets sent with the packets the rate allowed, integrated over
//! time (so a rate that changed within the window is counted at each value it had), in windows
//! of a set length.

use crate::time::Instant;

/// Packets sent against the packets the pacing rate allowed (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct RateUse {
    /// When the allowance was last brought up to date.
    accrued_at: Option<Instant>,
    /// Start of the current window.
    window_start: Option<Instant>,
    /// Packets the rate allowed in the current window (fractional).
    allowed: f64,
    /// Packets sent in the current window.
    sent: u64,
    /// Sent over allowed in the last complete window, if it allowed enough packets to say.
    last_fraction: Option<f64>,
}

/// A window says nothing when its rate allowed fewer packets than this.
const MIN_ALLOWED_PKTS: f64 = 8.0;

impl RateUse {
    /// A measurement with no windows yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts the packets `rate_pps` (packets/s, the rate in effect since the last call)
    /// allowed up to `now`, and closes the window once it is `window_us` (µs) long. Call it
    /// before anything changes the rate.
    pub fn accrue(&mut self, now: Instant, rate_pps: f64, window_us: u64) {
        if let Some(at) = self.accrued_at {
            self.allowed += now.micros_since(at) as f64 * rate_pps.max(0.0) / 1e6;
        }
        self.accrued_at = Some(now);
        let start = *self.window_start.get_or_insert(now);
        if now.micros_since(start) >= window_us {
            self.last_fraction =
                (self.allowed >= MIN_ALLOWED_PKTS).then(|| self.sent as f64 / self.allowed);
            self.window_start = Some(now);
            self.allowed = 0.0;
            self.sent = 0;
        }
    }

    /// Counts one packet sent (new or retransmitted).
    pub fn on_sent(&mut self) {
        self.sent += 1;
    }

    /// Packets sent over packets allowed in the last complete window; `None` before one has
    /// completed, or when its rate allowed too few packets to tell.
    pub fn fraction(&self) -> Option<f64> {
        self.last_fraction
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::ZERO.plus_micros(us)
    }

    /// 20 ms at a rate of 10 000 packets/s (a chance every 100 µs, windows of 10 ms), sending
    /// at every `nth` chance; the fraction of the last complete window.
    fn send_every(nth: u64) -> f64 {
        let mut u = RateUse::new();
        for i in 0..=200 {
            u.accrue(at(i * 100), 10_000.0, 10_000);
            if i % nth == 0 {
                u.on_sent();
            }
        }
        u.fraction().expect("two windows completed")
    }

    #[test]
    fn a_sender_that_keeps_to_its_rate_uses_all_of_it() {
        let f = send_every(1);
        assert!((f - 1.0).abs() < 0.02, "fraction {f}");
    }

    #[test]
    fn a_sender_held_by_its_window_shows_the_share_it_used() {
        // Only every other chance is taken.
        let f = send_every(2);
        assert!((f - 0.5).abs() < 0.02, "fraction {f}");
    }

    #[test]
    fn the_allowance_follows_the_rate_in_effect_at_each_moment() {
        let mut u = RateUse::new();
        // 5 ms at 10 000 packets/s (50 allowed), then 5 ms at 20 000 (100 allowed): 150.
        u.accrue(at(0), 10_000.0, 10_000);
        u.accrue(at(5_000), 10_000.0, 10_000);
        for _ in 0..150 {
            u.on_sent();
        }
        u.accrue(at(10_000), 20_000.0, 10_000);
        let f = u.fraction().expect("one window completed");
        assert!((f - 1.0).abs() < 1e-9, "fraction {f}");
    }

    #[test]
    fn a_window_with_too_few_packets_allowed_says_nothing() {
        let mut u = RateUse::new();
        // 100 packets/s over 10 ms allows one packet.
        u.accrue(at(0), 100.0, 10_000);
        u.accrue(at(10_000), 100.0, 10_000);
        assert_eq!(u.fraction(), None);
    }
}
