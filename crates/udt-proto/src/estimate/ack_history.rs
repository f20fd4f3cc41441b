//! The receiver's window of recently sent full ACKs, matched against ACK2 to sample the RTT
//! (spec §8.5).

use std::collections::VecDeque;

use crate::seq::{AckNo, SeqNo};
use crate::time::Instant;

/// Number of ACKs remembered; storing into a full window overwrites the oldest.
pub const ACK_HISTORY_LEN: usize = 1024;

#[derive(Clone, Copy, Debug)]
struct Entry {
    ack_no: AckNo,
    ack: SeqNo,
    sent_at: Instant,
}

/// Full ACKs sent and not yet confirmed by an ACK2.
#[derive(Clone, Debug, Default)]
pub struct AckHistory {
    entries: VecDeque<Entry>,
}

/// What an ACK2 confirmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckConfirmed {
    /// The ACK number (data sequence) carried by the confirmed ACK.
    pub ack: SeqNo,
    /// Time from sending the ACK to receiving its ACK2, µs.
    pub rtt_us: u64,
}

impl AckHistory {
    /// Records a full ACK sent at `now`.
    pub fn record(&mut self, ack_no: AckNo, ack: SeqNo, now: Instant) {
        if self.entries.len() == ACK_HISTORY_LEN {
            self.entries.pop_front();
        }
        self.entries.push_back(Entry {
            ack_no,
            ack,
            sent_at: now,
        });
    }

    /// Matches an ACK2 for `ack_no` received at `now`. On a match the entry and every older one
    /// are discarded. Returns `None` if no entry matches or the elapsed time is not positive.
    pub fn confirm(&mut self, ack_no: AckNo, now: Instant) -> Option<AckConfirmed> {
        let pos = self.entries.iter().position(|e| e.ack_no == ack_no)?;
        let e = self.entries[pos];
        self.entries.drain(..=pos);
        let rtt_us = now.micros_since(e.sent_at);
        (rtt_us > 0).then_some(AckConfirmed { ack: e.ack, rtt_us })
    }

    /// Number of unconfirmed ACKs remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no ACK awaits confirmation.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(n: u32) -> AckNo {
        AckNo::new(n).unwrap()
    }

    #[test]
    fn confirm_discards_older_entries() {
        let mut h = AckHistory::default();
        for i in 1..=5 {
            h.record(
                a(i),
                SeqNo::new(i * 10).unwrap(),
                Instant::from_micros(u64::from(i) * 100),
            );
        }
        let c = h.confirm(a(3), Instant::from_micros(1300)).unwrap();
        assert_eq!(c.ack.get(), 30);
        assert_eq!(c.rtt_us, 1000);
        assert_eq!(h.len(), 2);
        assert!(h.confirm(a(2), Instant::from_micros(2000)).is_none());
        assert!(h.confirm(a(99), Instant::from_micros(2000)).is_none());
    }

    #[test]
    fn window_is_bounded() {
        let mut h = AckHistory::default();
        for i in 0..(ACK_HISTORY_LEN as u32 + 10) {
            h.record(a(i), SeqNo::new(i).unwrap(), Instant::ZERO);
        }
        assert_eq!(h.len(), ACK_HISTORY_LEN);
        assert!(h.confirm(a(0), Instant::from_micros(5)).is_none());
    }
}
