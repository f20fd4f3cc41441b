//! Lost retransmissions, found by the sender itself.
//!
//! A retransmission can be lost too. UDT's receiver reports a loss again only after its NAK
//! interval (4.11 never does; we do, but no sooner than 4.11's 300 ms floor, because a 4.11
//! sender collapses under faster repeats), and the sender's EXP timer answers a long silence
//! by sending everything unacknowledged again (go-back-N). On a path with 1 % random loss, one
//! retransmission in a hundred is lost, and each such loss held the cumulative ACK — and with
//! it the window — for 300 ms, then cost a burst of needless copies. The sender knows when it
//! retransmitted each packet: one still unacknowledged a retransmission timeout later is
//! sent again. A peer sees only an extra retransmission, which UDT allows.
//!
//! Only the head's retransmission can be judged from the cumulative ACK. When the peer never
//! reports a loss twice (4.11), the others would be found one at a time, as each becomes the
//! head: a round trip per lost copy. After a start-up overshoot into a 4.11 receiver with a
//! large buffer, thousands of copies were lost in one burst, and the connection crawled at a
//! hole per round trip (71 MB in 100 s on a 1 Gbit/s path). So once the head's copy is known
//! lost and the peer has never repeated a report, every copy overdue by more than three
//! retransmission timeouts is sent again ([`RetxWatch::take_overdue`]): our receiver would
//! have reported a lost one again by then (two timeouts after its first report), so a copy
//! still unacknowledged is either lost to a peer that stays silent, or received behind the
//! head. The first kind is why; the second costs a needless copy. Our receiver's repeats come
//! late enough that the head's copy is usually judged first, so the sender rarely learns that
//! it repeats: a younger threshold (one timeout) raised the copies sent in the simulator's
//! lossy cells by half.

use std::collections::VecDeque;

use crate::seq::SeqNo;
use crate::time::Instant;

/// Most retransmissions watched at once; older ones are forgotten (EXP still covers them).
const MAX_WATCHED: usize = 1 << 16;

/// The retransmissions not yet acknowledged, oldest first.
#[derive(Debug, Default)]
pub(super) struct RetxWatch {
    sent: VecDeque<(SeqNo, Instant)>,
}

impl RetxWatch {
    /// Packet `seq` was retransmitted at `now`.
    pub(super) fn retransmitted(&mut self, seq: SeqNo, now: Instant) {
        if self.sent.len() == MAX_WATCHED {
            self.sent.pop_front();
        }
        self.sent.push_back((seq, now));
    }

    /// Forgets the retransmissions before `first_unacked` (acknowledged).
    pub(super) fn acknowledged(&mut self, first_unacked: SeqNo) {
        self.sent.retain(|&(s, _)| !s.is_before(first_unacked));
    }

    /// True when the retransmission of `head`, the oldest unacknowledged packet (the one the
    /// cumulative ACK waits on), was sent `timeout_us` or more before `now`: it was lost
    /// again. It leaves the watch (the next retransmission enters it anew).
    ///
    /// Only the head is judged: a later retransmission's ACK cannot pass the head's hole, so
    /// its silence says nothing; it is judged once it is the head.
    pub(super) fn head_lost(&mut self, now: Instant, timeout_us: u64, head: SeqNo) -> bool {
        let Some(i) = self
            .sent
            .iter()
            .take_while(|&&(_, t)| now.micros_since(t) >= timeout_us)
            .position(|&(s, _)| s == head)
        else {
            return false;
        };
        self.sent.remove(i);
        true
    }

    /// Takes out every retransmission sent `age_us` or more before `now`, oldest first, and
    /// returns the packets among them that were not sent again since (each enters the watch
    /// anew when it is sent again).
    pub(super) fn take_overdue(&mut self, now: Instant, age_us: u64) -> Vec<SeqNo> {
        let n = self
            .sent
            .iter()
            .take_while(|&&(_, t)| now.micros_since(t) >= age_us)
            .count();
        let overdue: Vec<SeqNo> = self.sent.drain(..n).map(|(s, _)| s).collect();
        if overdue.is_empty() {
            return overdue;
        }
        let newer: std::collections::HashSet<SeqNo> = self.sent.iter().map(|&(s, _)| s).collect();
        overdue.into_iter().filter(|s| !newer.contains(s)).collect()
    }

    /// When the retransmission of `head` times out, if it is watched.
    pub(super) fn head_deadline(&self, timeout_us: u64, head: SeqNo) -> Option<Instant> {
        self.sent
            .iter()
            .find(|&&(s, _)| s == head)
            .map(|&(_, t)| t.plus_micros(timeout_us))
    }

    /// True when packet `seq` was retransmitted and is still watched.
    pub(super) fn watches(&self, seq: SeqNo) -> bool {
        self.sent.iter().any(|&(s, _)| s == seq)
    }

    /// Forgets everything (the connection went back N).
    pub(super) fn clear(&mut self) {
        self.sent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(n: u32) -> SeqNo {
        SeqNo::new(n).unwrap()
    }

    #[test]
    fn only_the_head_retransmission_is_judged_and_once() {
        let mut w = RetxWatch::default();
        w.retransmitted(seq(10), Instant::from_micros(1_000));
        w.retransmitted(seq(20), Instant::from_micros(2_000));
        w.retransmitted(seq(30), Instant::from_micros(3_000));
        assert_eq!(
            w.head_deadline(5_000, seq(10)),
            Some(Instant::from_micros(6_000))
        );
        w.acknowledged(seq(15));
        assert_eq!(w.head_deadline(5_000, seq(10)), None);
        let head = seq(20);
        assert_eq!(
            w.head_deadline(5_000, head),
            Some(Instant::from_micros(7_000))
        );
        assert!(!w.head_lost(Instant::from_micros(6_999), 5_000, head));
        // 30 has timed out too, but it is not the head: its ACK waits on 20.
        assert!(!w.head_lost(Instant::from_micros(9_000), 5_000, seq(25)));
        assert!(w.head_lost(Instant::from_micros(9_000), 5_000, head));
        assert!(
            !w.head_lost(Instant::from_micros(9_000), 5_000, head),
            "once"
        );
        assert_eq!(
            w.head_deadline(5_000, seq(30)),
            Some(Instant::from_micros(8_000))
        );
    }

    #[test]
    fn overdue_copies_are_taken_oldest_first_and_the_rest_stay() {
        let mut w = RetxWatch::default();
        w.retransmitted(seq(30), Instant::from_micros(1_000));
        w.retransmitted(seq(10), Instant::from_micros(2_000));
        w.retransmitted(seq(20), Instant::from_micros(4_000));
        // 30 was sent again since: its newer copy is not overdue yet.
        w.retransmitted(seq(30), Instant::from_micros(4_500));
        assert_eq!(
            w.take_overdue(Instant::from_micros(7_000), 5_000),
            vec![seq(10)]
        );
        assert!(w
            .take_overdue(Instant::from_micros(7_000), 5_000)
            .is_empty());
        assert!(w.watches(seq(20)) && w.watches(seq(30)));
        assert!(!w.watches(seq(10)));
    }

    #[test]
    fn memory_is_bounded() {
        let mut w = RetxWatch::default();
        for i in 0..(MAX_WATCHED as u32 + 10) {
            w.retransmitted(seq(i), Instant::from_micros(u64::from(i)));
        }
        assert_eq!(w.sent.len(), MAX_WATCHED);
    }
}
