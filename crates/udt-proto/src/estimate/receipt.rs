//! The sender's count of packets the receiver is known to hold, and the rate it grows at.
//!
//! The cumulative ACK says that every packet before it arrived; a NAK says more. A receiver
//! reports a loss when a later packet arrives (spec §6.3): the packet after a reported range
//! was received. So the highest packet known received runs ahead of the ACK whenever there
//! are holes, and, less the packets reported lost for the first time, it counts what reached
//! the receiver without waiting for any hole to fill.
//!
//! Why: under random loss the cumulative ACK is held by some hole almost all the time once a
//! window holds more than about a hundred packets (at 1 % loss), and waits a round trip or
//! more for each retransmission. The delivery rate read from it ([`super::DeliveryRate`])
//! then swings between a few per cent of the rate and several times it. Through `udt relay`
//! at 1 Gbit/s, 100 ms, 1 % loss, its best value over the last seconds sat at half the
//! sending rate for 0.8 s of the start-up while the path carried all of it.
//!
//! Only what the peer sends in ACKs and NAKs is used, as 4.11 sends them, so the count is the
//! same with a UDT4 receiver. A NAK that names packets never sent is rejected before it gets
//! here; one that names no new loss moves nothing. A lying receiver can make the count run
//! ahead, as it can with ACKs.

use crate::seq::{SeqNo, SeqRange};
use crate::time::Instant;

use super::DeliveryRate;

/// Packets known to have reached the receiver, over time (see the module documentation).
#[derive(Clone, Debug)]
pub struct Receipts {
    /// One past the highest packet known received.
    next: SeqNo,
    /// One past the highest packet ever reported lost: reports at or beyond it are first
    /// reports.
    loss_mark: SeqNo,
    /// Sequence numbers `next` has moved past since the start, less the packets among them
    /// first reported lost: packets known received.
    received: u64,
    /// Losses first reported but not yet subtracted because `next` had not yet passed them
    /// (a periodic report can name a range ahead of what the count has reached).
    owed: u64,
    /// `received` over time.
    history: DeliveryRate,
}

impl Receipts {
    /// A count that starts at the connection's first sequence number.
    pub fn new(first: SeqNo) -> Self {
        Receipts {
            next: first,
            loss_mark: first,
            received: 0,
            owed: 0,
            history: DeliveryRate::new(),
        }
    }

    /// The cumulative ACK reached `ack`: every packet before it was received.
    pub fn on_ack(&mut self, now: Instant, ack: SeqNo) {
        self.reach(now, ack);
    }

    /// A loss report's ranges, validated by the caller (each range within the packets sent):
    /// the packet after each range was received, unless it was never sent (`sent_end`, one
    /// past the newest packet sent), and the packets at or past the loss mark are reported
    /// for the first time.
    pub fn on_nak(&mut self, now: Instant, ranges: &[SeqRange], sent_end: SeqNo) {
        let mut next = self.next;
        for r in ranges {
            if !r.last.is_before(self.loss_mark) {
                let first = r.first.max_wrapping(self.loss_mark);
                self.owed += u64::from(first.range_len(r.last));
                self.loss_mark = r.last.next();
            }
            let after = r.last.next();
            if after.is_before(sent_end) {
                next = next.max_wrapping(after.next());
            }
        }
        self.reach(now, next);
    }

    fn reach(&mut self, now: Instant, next: SeqNo) {
        if !next.is_after(self.next) {
            return;
        }
        let passed = u64::from(self.next.range_len(next.prev()));
        self.next = next;
        // A loss first reported from now on lies past what the receiver is known to hold.
        // Keeping the mark there also keeps it within wrap-aware reach of new reports after
        // a long run without loss.
        self.loss_mark = self.loss_mark.max_wrapping(next);
        let lost = self.owed.min(passed);
        self.owed -= lost;
        self.received += passed - lost;
        self.history.on_ack(now, passed - lost);
    }

    /// Packets known received since the start.
    pub fn received_pkts(&self) -> u64 {
        self.received
    }

    /// The history of [`Receipts::received_pkts`], for rates over a window (see
    /// [`DeliveryRate::rate_pps_bounded_by_sending`]).
    pub fn history(&self) -> &DeliveryRate {
        &self.history
    }

    /// Forgets history older than `keep_us` before the newest sample.
    pub fn prune(&mut self, keep_us: u64) {
        self.history.prune(keep_us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seq::test_util::{r as range, s};

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1_000)
    }

    #[test]
    fn a_nak_shows_the_packets_behind_a_hole_before_the_ack_does() {
        let mut r = Receipts::new(s(0));
        r.on_ack(at(10), s(100));
        assert_eq!(r.received_pkts(), 100);
        // Packets 100-109 lost, 110 arrived: 110 known received, 100-109 not.
        r.on_nak(at(20), &[range(100, 109)], s(500));
        assert_eq!(r.received_pkts(), 101);
        // Later a loss of 300: everything up to 301 reached except 100-109 and 300.
        r.on_nak(at(30), &[range(300, 300)], s(500));
        assert_eq!(r.received_pkts(), 302 - 11);
        // The ACK that follows the retransmissions moves nothing it already counted.
        r.on_ack(at(40), s(250));
        assert_eq!(r.received_pkts(), 291);
        // Beyond the count it adds what it passes.
        r.on_ack(at(50), s(400));
        assert_eq!(r.received_pkts(), 291 + 98);
    }

    #[test]
    fn a_repeated_report_is_not_counted_twice() {
        let mut r = Receipts::new(s(0));
        r.on_nak(at(10), &[range(10, 19)], s(100));
        assert_eq!(r.received_pkts(), 11);
        // The periodic report repeats the range: nothing new.
        r.on_nak(at(20), &[range(10, 19)], s(100));
        assert_eq!(r.received_pkts(), 11);
        // A report that repeats the old range beside a new one counts only the new one.
        r.on_nak(at(30), &[range(10, 19), range(25, 29)], s(100));
        assert_eq!(r.received_pkts(), 31 - 15);
    }

    #[test]
    fn a_range_that_ends_at_the_newest_packet_sent_shows_nothing_received_after_it() {
        let mut r = Receipts::new(s(0));
        r.on_nak(at(10), &[range(90, 99)], s(100));
        assert_eq!(r.received_pkts(), 0);
        // The losses are owed until the count passes them.
        r.on_ack(at(20), s(120));
        assert_eq!(r.received_pkts(), 110);
    }

    #[test]
    fn the_rate_counts_packets_received_not_sequence_numbers() {
        let mut r = Receipts::new(s(0));
        // 1 000 sequence numbers a second, one in ten reported lost.
        for i in 1..=100u32 {
            let t = at(u64::from(i) * 10);
            r.on_nak(t, &[range(i * 10 - 1, i * 10 - 1)], s(10_000));
        }
        let rate = r.history().rate_pps(1_000_000).unwrap();
        assert!((rate - 900.0).abs() < 10.0, "{rate}");
    }

    #[test]
    fn sequence_numbers_wrap() {
        let top = SeqNo::MAX;
        let mut r = Receipts::new(s(top - 4));
        r.on_nak(at(10), &[range(top - 1, top)], s(20));
        // top - 4 .. top - 2 and 0 (the packet after the range) received.
        assert_eq!(r.received_pkts(), 4);
        r.on_ack(at(20), s(10));
        assert_eq!(r.received_pkts(), 4 + 9);
    }
}
