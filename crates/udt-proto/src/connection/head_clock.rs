//! A loss whose loss report was lost too, found by the sender itself.
//!
//! The receiver reports a gap once, when the packet after it arrives. If that NAK is lost on
//! the way back, 4.11 never reports the gap again, and our receiver only after its NAK timer
//! (600 ms at the least, for 4.11 senders' sake; see `nak_timer`). Meanwhile the cumulative
//! ACK waits on the hole and the window fills behind it: with 1 % loss both ways at 1 Gbit/s,
//! 100 ms, about eight NAKs a second are lost, and each held the ACK for 0.7 s — most of a
//! 65 536-packet flight window.
//!
//! The sender can tell such a hole from its own clock: the packet the cumulative ACK waits on
//! (the head) has left, and a retransmission timeout after it became the head, with no NAK for
//! it, no ACK has passed it. A packet still in flight is acknowledged within a round trip and
//! the ACK timer; a reported one has been retransmitted, and `retx_watch` judges that copy. So
//! the head is sent again, once; the copy then enters `retx_watch` like any retransmission.
//! Congestion control is not told: the loss was already counted when it happened, or it was
//! never seen, and a resend is no new signal. A spurious copy costs one packet.

use crate::seq::SeqNo;
use crate::time::Instant;

/// Since when the current head of the send buffer has been the head and sent.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct HeadClock {
    /// The head and when it became the head (or was sent, if later).
    since: Option<(SeqNo, Instant)>,
    /// The head was already sent again on this clock.
    fired: bool,
}

impl HeadClock {
    /// The head is now `head`; `sent` says whether it has left. Restarts the clock when the
    /// head changes or leaves for the first time.
    pub(super) fn observe(&mut self, head: SeqNo, sent: bool, now: Instant) {
        match self.since {
            Some((h, _)) if h == head && sent => {}
            _ => {
                self.since = sent.then_some((head, now));
                self.fired = false;
            }
        }
    }

    /// When the head times out, if it has not yet.
    pub(super) fn deadline(&self, timeout_us: u64) -> Option<Instant> {
        match self.since {
            Some((_, t)) if !self.fired => Some(t.plus_micros(timeout_us)),
            _ => None,
        }
    }

    /// True, once per head, when `head` has been the head for `timeout_us` or more.
    pub(super) fn expired(&mut self, now: Instant, timeout_us: u64, head: SeqNo) -> bool {
        match self.since {
            Some((h, t)) if h == head && !self.fired && now.micros_since(t) >= timeout_us => {
                self.fired = true;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(n: u32) -> SeqNo {
        SeqNo::new(n).unwrap()
    }
    fn t(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    #[test]
    fn a_head_that_stays_times_out_once() {
        let mut c = HeadClock::default();
        c.observe(seq(10), true, t(1_000));
        c.observe(seq(10), true, t(3_000)); // same head: the clock keeps running
        assert_eq!(c.deadline(5_000), Some(t(6_000)));
        assert!(!c.expired(t(5_999), 5_000, seq(10)));
        assert!(c.expired(t(6_000), 5_000, seq(10)));
        assert!(!c.expired(t(9_000), 5_000, seq(10)), "once");
        assert_eq!(c.deadline(5_000), None);
    }

    #[test]
    fn the_clock_starts_when_the_head_changes_or_leaves() {
        let mut c = HeadClock::default();
        // Everything acknowledged; the next packet has not left yet.
        c.observe(seq(20), false, t(1_000));
        assert_eq!(c.deadline(5_000), None);
        c.observe(seq(20), true, t(4_000));
        assert_eq!(c.deadline(5_000), Some(t(9_000)));
        // The ACK moves on.
        c.observe(seq(25), true, t(7_000));
        assert!(!c.expired(t(9_000), 5_000, seq(25)));
        assert!(!c.expired(t(20_000), 5_000, seq(20)), "an old head");
        assert!(c.expired(t(12_000), 5_000, seq(25)));
    }
}
