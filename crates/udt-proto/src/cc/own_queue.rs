//! The queue a flow's own excess over the link would build at the bottleneck.
//!
//! Delay tells an overflow from random loss only when the queue is deep enough to show above
//! the RTT's noise. A shallow one overflows unseen: a tenth of a BDP at 1 Gbit/s, 2 ms holds
//! 0.2 ms, under every delay threshold, and a flow that took each of its overflow losses for
//! random loss crept to 1.04 times the link and lost 3.3 % of its packets.
//!
//! [`OwnQueue`] is a fluid model of that queue: every packet sent flows in, the link capacity
//! drains it. Alone on the path it matches the queue the RTT shows, a round trip late. When it
//! holds far more than the RTT shows, the packets are not queued anywhere: the queue is
//! shallower than the excess, and they were dropped. Sharing the path, a flow sends below the
//! capacity and the model stays empty, so it never speaks for other flows' queues.
//!
//! The model is only as good as the capacity. An estimate still converging reads low (87–91
//! Mbit/s on a 100 Mbit/s link, 0.6 s after slow start), and against it a rate under the link
//! looks like excess: a model that kept it held 3 ms that no queue had, and a 1 % lossy
//! link's random loss took 0.015 of the link from the first 30 s. So a capacity that rises
//! empties the model.
//!
//! Packets that random loss takes never reach the queue: the caller gives each packet sent
//! the share expected to arrive (one minus the background loss rate). Counted whole, at
//! 100 Mbit/s, 100 ms with 1 % random loss a rate 1 % above the link read 4.2 ms of model
//! against 0.2 ms seen.

use crate::time::Instant;

/// The model holds at most this many µs of queue: enough to say it exceeds any threshold,
/// and bounded whatever a hostile capacity report says.
const MAX_QUEUE_US: f64 = 10_000_000.0;

/// A capacity estimate that rises by more than this fraction empties the model.
const CAPACITY_RISE: f64 = 0.01;

/// A fluid model of the bottleneck queue this flow alone would build (see the module
/// documentation).
#[derive(Clone, Debug, Default)]
pub struct OwnQueue {
    /// Packets in the model queue (fractional).
    pkts: f64,
    /// The capacity of the last drain, packets/s.
    capacity_pps: f64,
    /// When the model was last drained.
    drained_at: Option<Instant>,
}

impl OwnQueue {
    /// An empty model.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one packet sent (new or retransmitted: both occupy the queue), of which
    /// `arriving` (0–1) is expected to reach the queue: a path that loses packets at random
    /// takes that share before they can queue.
    pub fn on_sent(&mut self, arriving: f64) {
        self.pkts += arriving.clamp(0.0, 1.0);
    }

    /// Drains the model at `capacity_pps` (packets/s) from the last call up to `now`. Without
    /// a capacity there is nothing to model, and the model empties.
    pub fn drain(&mut self, now: Instant, capacity_pps: Option<f64>) {
        let since = self.drained_at.map_or(0, |at| now.micros_since(at));
        self.drained_at = Some(now);
        match capacity_pps.filter(|c| c.is_finite() && *c > 0.0) {
            // A capacity that rose says the one the model was drained at was too low: what
            // it counted as excess may have been none (see the module documentation).
            Some(c) if c > self.capacity_pps * (1.0 + CAPACITY_RISE) => {
                self.pkts = 0.0;
                self.capacity_pps = c;
            }
            Some(c) => {
                let max = MAX_QUEUE_US * c / 1e6;
                self.pkts = (self.pkts - since as f64 * c / 1e6).clamp(0.0, max);
                self.capacity_pps = c;
            }
            None => {
                self.pkts = 0.0;
                self.capacity_pps = 0.0;
            }
        }
    }

    /// The model queue's delay at `capacity_pps` (packets/s), µs.
    pub fn delay_us(&self, capacity_pps: f64) -> f64 {
        if capacity_pps > 0.0 {
            self.pkts * 1e6 / capacity_pps
        } else {
            0.0
        }
    }

    /// Sets the model to a queue of `delay_us` (µs) at `capacity_pps` (packets/s): what the
    /// RTT shows after a congestion event, when the excess beyond it has been dropped.
    pub fn set_delay(&mut self, delay_us: f64, capacity_pps: f64) {
        self.pkts = (delay_us.max(0.0) * capacity_pps.max(0.0) / 1e6).min(f64::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::ZERO.plus_micros(us)
    }

    /// 1 000 packets/s of capacity, 1 100 sent in a second: 100 packets (0.1 s) are queued;
    /// then at 900/s for half a second, 50 of them drain.
    #[test]
    fn the_queue_holds_what_was_sent_beyond_the_capacity() {
        let mut q = OwnQueue::new();
        q.drain(at(0), Some(1000.0));
        for _ in 0..1100 {
            q.on_sent(1.0);
        }
        q.drain(at(1_000_000), Some(1000.0));
        assert!((q.delay_us(1000.0) - 100_000.0).abs() < 1e-6);
        for _ in 0..450 {
            q.on_sent(1.0);
        }
        q.drain(at(1_500_000), Some(1000.0));
        assert!((q.delay_us(1000.0) - 50_000.0).abs() < 1e-6);
    }

    /// A rising capacity estimate voids what was counted against the lower one.
    #[test]
    fn a_rising_capacity_empties_the_queue() {
        let mut q = OwnQueue::new();
        q.drain(at(0), Some(1000.0));
        for _ in 0..1100 {
            q.on_sent(1.0);
        }
        q.drain(at(1_000_000), Some(1000.0));
        assert!(q.delay_us(1000.0) > 90_000.0);
        q.drain(at(1_000_000), Some(1050.0));
        assert_eq!(q.delay_us(1050.0), 0.0);
    }

    /// Below the capacity the model never goes negative, and without a capacity it empties.
    #[test]
    fn the_queue_is_never_negative_and_empties_without_a_capacity() {
        let mut q = OwnQueue::new();
        q.drain(at(0), Some(1000.0));
        q.on_sent(1.0);
        q.drain(at(1_000_000), Some(1000.0));
        assert_eq!(q.delay_us(1000.0), 0.0);
        for _ in 0..10 {
            q.on_sent(1.0);
        }
        q.drain(at(1_000_000), None);
        assert_eq!(q.delay_us(1000.0), 0.0);
    }

    /// At 1 % random loss, 1 010 packets sent against a capacity of 1 000 queue nothing.
    #[test]
    fn random_loss_takes_its_share_before_the_queue() {
        let mut q = OwnQueue::new();
        q.drain(at(0), Some(1000.0));
        for _ in 0..1010 {
            q.on_sent(0.99);
        }
        q.drain(at(1_000_000), Some(1000.0));
        assert!(q.delay_us(1000.0) < 100.0, "{}", q.delay_us(1000.0));
    }

    /// A hostile capacity (zero, infinite, NaN) neither panics nor grows the model without
    /// bound.
    #[test]
    fn a_hostile_capacity_keeps_the_model_bounded() {
        let mut q = OwnQueue::new();
        for c in [0.0, f64::INFINITY, f64::NAN, -5.0] {
            q.on_sent(1.0);
            q.drain(at(10), Some(c));
            assert_eq!(q.delay_us(1000.0), 0.0);
        }
        q.drain(at(0), Some(1.0));
        for _ in 0..100 {
            q.on_sent(1.0);
        }
        q.drain(at(0), Some(1.0));
        assert!(q.delay_us(1.0) <= MAX_QUEUE_US);
    }
}
