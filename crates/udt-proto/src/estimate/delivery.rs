//! The sender's delivery-rate estimate: how fast the receiver has been acknowledging data,
//! from the progress of the cumulative ACK (full and light) over time. The same history of
//! (time, running count) also records the packets sent, so that what was delivered can be
//! compared with what was sent one round trip earlier.
//!
//! It needs nothing from the receiver but its ACK numbers, so it is the same whether the peer
//! is ours or UDT4 4.11, and it does not depend on packet spacing at all: packets that reach
//! the receiver in clumps (interrupt coalescing, GRO, a busy emulator) or ACKs that reach the
//! sender in clumps (ACK compression) shift a measurement's ends by at most the clumping
//! interval, which a window of tens of milliseconds makes negligible. A hole in the
//! sequence holds the cumulative ACK back until the retransmission fills it, so short windows
//! read low, then high; the window is therefore at least one round trip, and callers that
//! keep a maximum should keep it over windows at least that long.

use std::collections::VecDeque;

use crate::time::Instant;

/// Samples are merged when closer than this, µs: bounds memory at high ACK rates (light ACKs
/// every 64 packets are 13 000 a second at 10 Gbit/s).
const GRANULARITY_US: u64 = 1_000;
/// Most samples kept: four seconds of history at the granularity.
const MAX_SAMPLES: usize = 4_096;

/// Delivery-rate estimator (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct DeliveryRate {
    /// (time, packets acknowledged in total) at ACKs that advanced, oldest first.
    history: VecDeque<(Instant, u64)>,
    /// Packets acknowledged in total.
    acked: u64,
}

impl DeliveryRate {
    /// An estimator with no history.
    pub fn new() -> Self {
        Self::default()
    }

    /// The count advanced by `newly_acked` packets at `now` (the cumulative ACK advanced, or
    /// packets were sent).
    pub fn on_ack(&mut self, now: Instant, newly_acked: u64) {
        if newly_acked == 0 {
            return;
        }
        self.acked += newly_acked;
        // The newest sample moves forward until it is a granule past the one before it; then
        // a new one starts. Samples are therefore at least a granule apart, whatever the ACK
        // rate, and the newest is always the latest ACK.
        let len = self.history.len();
        if len >= 2 && now.micros_since(self.history[len - 2].0) < GRANULARITY_US {
            self.history[len - 1] = (now, self.acked);
            return;
        }
        if self.history.len() == MAX_SAMPLES {
            self.history.pop_front();
        }
        self.history.push_back((now, self.acked));
    }

    /// Packets acknowledged so far.
    pub fn acked_pkts(&self) -> u64 {
        self.acked
    }

    /// Packets per second acknowledged over the last `window_us` (or the whole history when it
    /// is shorter) up to the newest ACK; `None` before two samples at least 1 ms apart exist.
    /// Measured between ACK arrivals, so an idle gap before the newest ACK lowers it, as it
    /// should: nothing was delivered then.
    pub fn rate_pps(&self, window_us: u64) -> Option<f64> {
        let ((t0, a0), (t_end, a_end)) = self.window_ends(window_us)?;
        Some((a_end - a0) as f64 * 1e6 / t_end.micros_since(t0) as f64)
    }

    /// [`DeliveryRate::rate_pps`], but never faster than the packets it counts were first
    /// sent, by `sent`: the history of new packets sent, counted from the same first
    /// sequence number. A hole holds the cumulative ACK back until its retransmission
    /// arrives, and the ACK then jumps past packets sent over one to several round trips;
    /// over the ACK's span alone, at 100 Mb/s and 400 ms behind a full queue, that read four
    /// times the link. The span used is the longer of the ACKs' and the sends' (as BBR's
    /// delivery-rate sample does). Where `sent` no longer reaches back to the window's first
    /// packet, its oldest sample stands in: the send span is then shorter than the truth
    /// and the bound looser, never tighter.
    pub fn rate_pps_bounded_by_sending(&self, sent: &DeliveryRate, window_us: u64) -> Option<f64> {
        let ((t0, a0), (t_end, a_end)) = self.window_ends(window_us)?;
        let send_span = match (sent.time_reaching(a0), sent.time_reaching(a_end)) {
            (Some(s0), Some(s1)) => s1.micros_since(s0),
            _ => 0,
        };
        let span = t_end.micros_since(t0).max(send_span);
        Some((a_end - a0) as f64 * 1e6 / span as f64)
    }

    /// The (time, count) samples at the ends of the last `window_us`: the newest sample, and
    /// the newest at or before it minus the window (else the oldest); `None` unless they are
    /// at least a granule apart.
    fn window_ends(&self, window_us: u64) -> Option<((Instant, u64), (Instant, u64))> {
        let &end = self.history.back()?;
        let from = end.0.as_micros().saturating_sub(window_us);
        let idx = self
            .history
            .partition_point(|&(t, _)| t.as_micros() <= from);
        let &start = self.history.get(idx.saturating_sub(1))?;
        (end.0.micros_since(start.0) >= GRANULARITY_US).then_some((start, end))
    }

    /// When the running count reached `count`: the time of the first sample at or past it
    /// (at most a granule late), the oldest sample's when the history starts after it, and
    /// `None` when the count has not got there.
    fn time_reaching(&self, count: u64) -> Option<Instant> {
        let idx = self.history.partition_point(|&(_, n)| n < count);
        self.history.get(idx).map(|&(t, _)| t)
    }

    /// Packets per second counted over the `window_us` that ended at `end` (the newest sample
    /// at or before each end of the window is used); `None` without two samples at least
    /// 1 ms apart in that span. With the send history and `end` one RTT ago this is the rate
    /// at which the packets being acknowledged now were sent.
    pub fn rate_ending(&self, end: Instant, window_us: u64) -> Option<f64> {
        let at_or_before = |t: u64| {
            let idx = self.history.partition_point(|&(s, _)| s.as_micros() <= t);
            self.history.get(idx.checked_sub(1)?)
        };
        let &(t1, a1) = at_or_before(end.as_micros())?;
        let &(t0, a0) = at_or_before(end.as_micros().saturating_sub(window_us))
            .or_else(|| self.history.front())?;
        let span = t1.micros_since(t0);
        if span < GRANULARITY_US {
            return None;
        }
        Some((a1 - a0) as f64 * 1e6 / span as f64)
    }

    /// Forgets samples older than `keep_us` before the newest.
    pub fn prune(&mut self, keep_us: u64) {
        let Some(&(t_end, _)) = self.history.back() else {
            return;
        };
        let from = t_end.as_micros().saturating_sub(keep_us);
        while self.history.len() > 2 && self.history[1].0.as_micros() <= from {
            self.history.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    #[test]
    fn steady_acks_give_their_rate() {
        let mut d = DeliveryRate::new();
        // 1000 packets per 10 ms ACK: 100 000 pkt/s.
        for k in 1..=50u64 {
            d.on_ack(at(k * 10_000), 1000);
        }
        let r = d.rate_pps(100_000).unwrap();
        assert!((r - 100_000.0).abs() < 1.0, "{r}");
        assert_eq!(d.acked_pkts(), 50_000);
    }

    #[test]
    fn clumped_acks_do_not_inflate_a_long_window() {
        // The same delivery, but ACKs arrive in clumps of 5 within 100 µs every 50 ms.
        let mut d = DeliveryRate::new();
        for k in 0..40u64 {
            for j in 0..5u64 {
                d.on_ack(at(k * 50_000 + j * 20), 1000);
            }
        }
        let r = d.rate_pps(200_000).unwrap();
        assert!((r - 100_000.0).abs() / 100_000.0 < 0.01, "{r}");
    }

    #[test]
    fn needs_history_and_skips_non_advancing_acks() {
        let mut d = DeliveryRate::new();
        assert!(d.rate_pps(10_000).is_none());
        d.on_ack(at(1_000), 10);
        d.on_ack(at(1_500), 0);
        assert!(d.rate_pps(10_000).is_none());
        d.on_ack(at(11_000), 10);
        assert_eq!(d.rate_pps(10_000).unwrap(), 1_000.0);
    }

    #[test]
    fn frequent_acks_still_make_new_samples() {
        // An ACK every 200 µs (light ACKs at a high rate): samples must keep coming.
        let mut d = DeliveryRate::new();
        for k in 1..=10_000u64 {
            d.on_ack(at(k * 200), 1);
        }
        assert!(d.history.len() >= 1_500, "{}", d.history.len());
        let r = d.rate_pps(100_000).unwrap();
        assert!((r - 5_000.0).abs() < 1.0, "{r}");
    }

    #[test]
    fn a_rate_ending_in_the_past() {
        let mut d = DeliveryRate::new();
        // 100 pkt/ms for 100 ms, then 200 pkt/ms.
        for k in 1..=200u64 {
            d.on_ack(at(k * 1_000), if k <= 100 { 100 } else { 200 });
        }
        let old = d.rate_ending(at(100_000), 50_000).unwrap();
        assert!((old - 100_000.0).abs() < 1.0, "{old}");
        let new = d.rate_ending(at(200_000), 50_000).unwrap();
        assert!((new - 200_000.0).abs() < 1.0, "{new}");
        assert!(d.rate_ending(at(500), 10_000).is_none());
    }

    #[test]
    fn an_ack_jump_past_a_filled_hole_is_bounded_by_the_sending() {
        // 100 packets sent every ms; delivered at that rate from 100 to 200 ms. Then a hole
        // holds the ACK; at 290 ms it moves by 10 packets (to the next hole), and at 390 ms
        // it jumps past everything sent up to 300 ms.
        let (mut acked, mut sent) = (DeliveryRate::new(), DeliveryRate::new());
        for k in 1..=400u64 {
            sent.on_ack(at(k * 1_000), 100);
        }
        for k in 1..=100u64 {
            acked.on_ack(at(100_000 + k * 1_000), 100);
        }
        acked.on_ack(at(290_000), 10);
        acked.on_ack(at(390_000), 30_000 - 10_010);
        // Over the last 100 ms the ACKs alone say twice the rate; the sends say the truth.
        let by_acks = acked.rate_pps(100_000).unwrap();
        assert!((by_acks - 200_000.0).abs() < 1_000.0, "{by_acks}");
        let bounded = acked.rate_pps_bounded_by_sending(&sent, 100_000).unwrap();
        assert!((bounded - 100_000.0).abs() < 1_100.0, "{bounded}");
        // With steady delivery, the bound changes nothing.
        let (mut acked, mut sent) = (DeliveryRate::new(), DeliveryRate::new());
        for k in 1..=300u64 {
            sent.on_ack(at(k * 1_000), 100);
            acked.on_ack(at(50_000 + k * 1_000), 100);
        }
        let r = acked.rate_pps_bounded_by_sending(&sent, 100_000).unwrap();
        assert!((r - 100_000.0).abs() < 1.0, "{r}");
        // A send history that does not reach back that far loosens the bound only.
        let mut short = DeliveryRate::new();
        short.on_ack(at(200_000), 20_000);
        short.on_ack(at(300_000), 10_000);
        let loose = acked.rate_pps_bounded_by_sending(&short, 100_000).unwrap();
        assert!(loose >= r, "{loose} < {r}");
    }

    #[test]
    fn memory_is_bounded() {
        let mut d = DeliveryRate::new();
        for k in 0..100_000u64 {
            d.on_ack(at(k * 2_000), 1);
        }
        assert!(d.history.len() <= MAX_SAMPLES);
        d.prune(10_000);
        assert!(d.history.len() <= 7);
        assert!(d.rate_pps(1_000_000).is_some());
    }
}
