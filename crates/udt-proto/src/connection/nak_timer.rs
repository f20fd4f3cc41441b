//! When to report a loss again (the UDT draft's NAK timer, which 4.11 disabled; spec §8.10).
//!
//! Each gap the receiver detects is reported at once. If the packets are still missing after
//! `k` round-trip times, they are reported again, with `k` starting at 2 and growing by one per
//! report, as the draft specifies: a retransmission needs about one RTT to arrive, so a report
//! is only repeated once the retransmission it asked for must have been lost. Reporting sooner
//! would make the sender's congestion control see losses that did not happen.
//!
//! The schedule keeps one entry per reported gap (ordered by sequence number, like the loss
//! list); an entry covers the losses after the previous entry's `last` up to its own `last`.

use std::cell::Cell;
use std::collections::VecDeque;

use crate::seq::SeqNo;
use crate::time::Instant;

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Last sequence number covered by this entry.
    last: SeqNo,
    /// When its losses were last reported.
    reported_at: Instant,
    /// Multiple of the RTT to wait before the next report.
    k: u32,
}

/// What one call of the report callback of [`NakSchedule::take_due`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Reported {
    /// Some loss of the span went into the packet.
    pub(super) took_any: bool,
    /// The packet is full.
    pub(super) full: bool,
}

/// Report times of outstanding losses.
#[derive(Clone, Debug, Default)]
pub(super) struct NakSchedule {
    entries: VecDeque<Entry>,
    /// The last [`deadline`](Self::deadline) with the `rto_us` it was computed for, kept up to
    /// date by every change of the entries (or cleared when that would cost a walk). The
    /// connection asks after every packet; the entries and the RTT change far less often, and
    /// there may be many entries.
    cached: Cell<Option<(u64, Option<Instant>)>>,
}

/// First repeat after this many RTTs.
const FIRST_K: u32 = 2;
/// The wait stops growing here, so a long outage still gets reports.
const MAX_K: u32 = 16;

impl Entry {
    /// When this entry's losses are next due, for RTT+4·RTTVar = `rto_us`.
    fn due(&self, rto_us: u64) -> Instant {
        self.reported_at.plus_micros(u64::from(self.k) * rto_us)
    }
}

/// The earlier of an optional instant and an instant.
fn earlier(a: Option<Instant>, b: Instant) -> Option<Instant> {
    Some(a.map_or(b, |a| a.min(b)))
}

impl NakSchedule {
    /// A gap ending at `last` was detected and reported at `now`.
    pub(super) fn reported(&mut self, last: SeqNo, now: Instant) {
        let e = Entry {
            last,
            reported_at: now,
            k: FIRST_K,
        };
        // The earliest deadline can only move earlier.
        if let Some((rto, deadline)) = self.cached.get() {
            self.cached.set(Some((rto, earlier(deadline, e.due(rto)))));
        }
        self.entries.push_back(e);
    }

    /// Forgets entries wholly before `first_missing` (their losses were repaired).
    pub(super) fn prune(&mut self, first_missing: Option<SeqNo>) {
        match first_missing {
            None => self.entries.clear(),
            Some(first) => {
                while let Some(e) = self.entries.front() {
                    if !e.last.is_before(first) {
                        break;
                    }
                    // Removing an entry later than the earliest leaves the earliest alone.
                    if let Some((rto, Some(deadline))) = self.cached.get() {
                        if e.due(rto) <= deadline {
                            self.cached.set(None);
                        }
                    }
                    self.entries.pop_front();
                }
            }
        }
        if self.entries.is_empty() {
            if let Some((rto, _)) = self.cached.get() {
                self.cached.set(Some((rto, None)));
            }
        }
    }

    /// The earliest instant a report is due, for RTT+4·RTTVar = `rto_us`.
    pub(super) fn deadline(&self, rto_us: u64) -> Option<Instant> {
        if let Some((rto, deadline)) = self.cached.get() {
            if rto == rto_us {
                return deadline;
            }
        }
        let deadline = self.entries.iter().map(|e| e.due(rto_us)).min();
        self.cached.set(Some((rto_us, deadline)));
        deadline
    }

    /// Calls `report` with the span `(previous entry's last, last]` of every entry due at
    /// `now`, in ascending order, and marks the entries reported. `report` says whether the
    /// packet filled up and whether it took anything of the span: the walk stops at a full
    /// packet, and an entry of which nothing fitted stays due for the next packet. An entry is
    /// marked even when only part of its losses fitted (the rest waits one more interval), so
    /// every call makes progress and a report is never repeated in a tight loop.
    pub(super) fn take_due(
        &mut self,
        now: Instant,
        rto_us: u64,
        mut report: impl FnMut(Option<SeqNo>, SeqNo) -> Reported,
    ) {
        let mut prev_last: Option<SeqNo> = None;
        // The new earliest deadline, found on the way.
        let mut earliest = None;
        let mut entries = self.entries.iter_mut();
        for e in &mut entries {
            let mut full = false;
            if now >= e.due(rto_us) {
                let r = report(prev_last, e.last);
                if !r.full || r.took_any {
                    e.reported_at = now;
                    e.k = (e.k + 1).min(MAX_K);
                }
                full = r.full;
            }
            earliest = earlier(earliest, e.due(rto_us));
            if full {
                break;
            }
            prev_last = Some(e.last);
        }
        for e in entries {
            earliest = earlier(earliest, e.due(rto_us));
        }
        self.cached.set(Some((rto_us, earliest)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u32) -> SeqNo {
        SeqNo::new(n).unwrap()
    }
    fn t(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    #[test]
    fn reports_repeat_after_growing_multiples_of_the_rtt() {
        let mut n = NakSchedule::default();
        n.reported(s(10), t(0));
        n.reported(s(20), t(500));
        assert_eq!(n.deadline(1000), Some(t(2000)));
        let mut got = vec![];
        n.take_due(t(2000), 1000, |prev, last| {
            got.push((prev, last));
            Reported {
                took_any: true,
                full: false,
            }
        });
        assert_eq!(got, vec![(None, s(10))]);
        // Entry 1 now waits 3 RTTs from 2000; entry 2 is due at 2500.
        assert_eq!(n.deadline(1000), Some(t(2500)));
        got.clear();
        n.take_due(t(2500), 1000, |prev, last| {
            got.push((prev, last));
            Reported {
                took_any: true,
                full: false,
            }
        });
        assert_eq!(got, vec![(Some(s(10)), s(20))]);
        assert_eq!(n.deadline(1000), Some(t(5000)));
    }

    #[test]
    fn repaired_gaps_are_forgotten() {
        let mut n = NakSchedule::default();
        n.reported(s(10), t(0));
        n.reported(s(20), t(0));
        n.prune(Some(s(15)));
        assert_eq!(n.entries.len(), 1);
        n.prune(None);
        assert_eq!(n.deadline(1000), None);
    }

    #[test]
    fn a_full_packet_stops_the_walk_but_progress_is_kept() {
        let mut n = NakSchedule::default();
        n.reported(s(10), t(0));
        n.reported(s(20), t(0));
        n.reported(s(30), t(0));
        // The first span partly fits: it is marked, and the walk stops.
        let mut calls = 0;
        n.take_due(t(5000), 1000, |_, _| {
            calls += 1;
            Reported {
                took_any: true,
                full: true,
            }
        });
        assert_eq!(calls, 1);
        // The second span fits, the third not at all: it stays due for the next packet.
        let mut spans = vec![];
        n.take_due(t(5000), 1000, |prev, last| {
            spans.push((prev, last));
            let second = spans.len() > 1;
            Reported {
                took_any: !second,
                full: second,
            }
        });
        assert_eq!(spans, vec![(Some(s(10)), s(20)), (Some(s(20)), s(30))]);
        // The third entry keeps its old deadline, already past: it is still due.
        assert_eq!(n.deadline(1000), Some(t(2000)));
    }

    #[test]
    fn an_entry_with_nothing_left_to_report_does_not_stay_due() {
        let mut n = NakSchedule::default();
        n.reported(s(10), t(0));
        n.take_due(t(5000), 1000, |_, _| Reported {
            took_any: false,
            full: false,
        });
        assert_eq!(n.deadline(1000), Some(t(5000 + 3000)));
    }

    /// The cached earliest deadline always equals a fresh computation over the entries.
    #[test]
    fn cached_deadline_matches_a_fresh_computation() {
        let mut n = NakSchedule::default();
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let (mut now, mut next_seq, mut first_missing) = (0u64, 0u32, 0u32);
        for _ in 0..20_000 {
            now += rnd(300);
            let rto = [1000, 1000, 1000, 2500, 10_000][rnd(5) as usize];
            match rnd(4) {
                0 => {
                    next_seq += 1 + rnd(5) as u32;
                    n.reported(s(next_seq), t(now));
                }
                1 => {
                    if rnd(8) == 0 {
                        n.prune(None);
                        first_missing = next_seq + 1;
                    } else {
                        first_missing = (first_missing + rnd(4) as u32).min(next_seq + 1);
                        n.prune(Some(s(first_missing)));
                    }
                }
                2 => {
                    let mut room = rnd(4);
                    n.take_due(t(now), rto, |_, _| {
                        room = room.saturating_sub(1);
                        Reported {
                            took_any: rnd(3) > 0,
                            full: room == 0,
                        }
                    });
                }
                _ => {}
            }
            let fresh = n.entries.iter().map(|e| e.due(rto)).min();
            assert_eq!(n.deadline(rto), fresh);
        }
    }
}
