//! An ordered set of sequence numbers stored as maximal ranges: the storage shared by the sender
//! and the receiver loss lists.
//!
//! The ranges live in a `VecDeque`, sorted in wrap-aware order, pairwise disjoint and never
//! adjacent (two touching ranges are always merged), so the stored ranges are exactly the maximal
//! runs of the set. Both loss lists remove mostly at the front (retransmission of the smallest
//! loss, ACKs) and add mostly at the back (newly detected losses), which a ring buffer does in
//! O(1). An insertion or split in the middle is one `VecDeque::insert`, which shifts the shorter
//! side of the deque: a `memmove` of 8 bytes per *range* on that side, never per packet.
//!
//! # Order
//!
//! Sequence numbers wrap at 2^31, so there is no global order. Every value stored in one list
//! lies within a window far smaller than 2^30 (the flow window bounds both lists), so each
//! operation maps numbers onto a line anchored at the first stored range (`key`): their signed
//! distance from that anchor. On that line the stored ranges are strictly increasing, which is
//! what the binary searches rely on. If a caller breaks the window assumption the order may be
//! inconsistent; every operation is written so that this cannot panic (indices are bounded,
//! counts saturate), it can only give a wrong answer.
//!
//! This type performs no validation of its own beyond that: the public lists add the
//! `debug_assert!`s, so that the graceful release-mode behaviour can be tested here.

use std::collections::VecDeque;

use crate::seq::{SeqNo, SeqRange};

/// Position of `seq` on the line anchored at `anchor`: its signed distance from `anchor`, in
/// sequence numbers (the 31-bit difference, sign-extended).
///
/// This equals [`SeqNo::offset_to`] for every distance below 2^30 − 1, i.e. for all numbers that
/// can coexist in a list; unlike it, it is branch-free, which matters inside binary searches.
/// `i64` so that adding a range span can never overflow.
#[inline]
fn key(anchor: SeqNo, seq: SeqNo) -> i64 {
    let d = seq.get().wrapping_sub(anchor.get()) & SeqNo::MAX;
    // `d` has 31 significant bits: shift its bit 30 into the sign bit and back.
    i64::from(((d << 1) as i32) >> 1)
}

/// The span `last − first` of a range in sequence numbers, or `None` when the range is reversed
/// (`last` before `first`), which no operation accepts.
#[inline]
fn span(r: SeqRange) -> Option<i64> {
    let d = key(r.first, r.last);
    (d >= 0).then_some(d)
}

/// True when `r` is not reversed, in the same order as every list operation uses (for the
/// public lists' debug assertions).
pub(crate) fn is_forward(r: SeqRange) -> bool {
    span(r).is_some()
}

/// Sum of the lengths, in sequence numbers, of some ranges. Only used on ranges that an
/// operation removes or merges, so its cost is amortised against their insertion.
#[inline]
fn total_len<'a>(ranges: impl Iterator<Item = &'a SeqRange>) -> u64 {
    ranges.map(|r| u64::from(r.len())).sum()
}

/// A set of sequence numbers kept as sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Clone, Debug, Default)]
pub(crate) struct RangeSet {
    /// The maximal runs of the set, in increasing wrap-aware order.
    ranges: VecDeque<SeqRange>,
    /// Number of sequence numbers in the set, kept up to date by every operation so that
    /// [`RangeSet::len`] is O(1). `u64` so that no sum can overflow even if the window
    /// assumption is broken.
    count: u64,
}

impl RangeSet {
    /// An empty set with room for `ranges` ranges before it allocates.
    pub(crate) fn with_capacity(ranges: usize) -> Self {
        RangeSet {
            ranges: VecDeque::with_capacity(ranges),
            count: 0,
        }
    }

    /// Number of sequence numbers in the set.
    pub(crate) fn len(&self) -> u64 {
        self.count
    }

    /// True when the set holds no sequence number.
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Number of maximal ranges the set is stored as.
    pub(crate) fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// The maximal ranges of the set, smallest first.
    pub(crate) fn iter(
        &self,
    ) -> impl ExactSizeIterator<Item = SeqRange> + DoubleEndedIterator + '_ {
        self.ranges.iter().copied()
    }

    /// Removes everything, keeping the allocated capacity.
    pub(crate) fn clear(&mut self) {
        self.ranges.clear();
        self.count = 0;
    }

    /// The smallest sequence number in the set.
    pub(crate) fn first(&self) -> Option<SeqNo> {
        self.ranges.front().map(|r| r.first)
    }

    /// Removes and returns the smallest sequence number in the set. O(1).
    pub(crate) fn pop_first(&mut self) -> Option<SeqNo> {
        let front = self.ranges.front_mut()?;
        let seq = front.first;
        if front.first == front.last {
            self.ranges.pop_front();
        } else {
            front.first = seq.next();
        }
        self.count = self.count.saturating_sub(1);
        Some(seq)
    }

    /// Index of the range holding `seq`, if any. O(log n).
    fn find(&self, seq: SeqNo) -> Option<usize> {
        let front = self.ranges.front()?;
        let anchor = front.first;
        let k = key(anchor, seq);
        if k < 0 {
            return None;
        }
        if k <= key(anchor, front.last) {
            // Retransmissions come smallest first, so they mostly hit the front range.
            return Some(0);
        }
        // First range that does not end before `seq`: the only one that can hold it.
        let i = self.ranges.partition_point(|x| key(anchor, x.last) < k);
        let hit = self.ranges.get(i)?;
        (key(anchor, hit.first) <= k).then_some(i)
    }

    /// True when `seq` is in the set. O(log n).
    pub(crate) fn contains(&self, seq: SeqNo) -> bool {
        self.find(seq).is_some()
    }

    /// Adds every number of `r`, merging with the ranges it overlaps or touches. Returns how many
    /// numbers were not already present. A reversed range is ignored (returns 0).
    ///
    /// O(log n) search, then either one `VecDeque` insertion or the removal of the ranges that
    /// `r` bridges (each of which was inserted once, so this is amortised O(1) per range).
    pub(crate) fn insert(&mut self, r: SeqRange) -> u64 {
        let Some(span) = span(r) else { return 0 };
        let Some(front) = self.ranges.front() else {
            self.ranges.push_back(r);
            self.count = u64::from(r.len());
            return self.count;
        };
        let anchor = front.first;
        let a = key(anchor, r.first);
        let b = a + span;
        if let Some(back) = self.ranges.back() {
            if a > key(anchor, back.last) + 1 {
                // The usual NAK: losses newer than everything reported so far.
                self.ranges.push_back(r);
                let added = u64::from(r.len());
                self.count += added;
                return added;
            }
        }
        // Ranges in `lo..hi` overlap `r` or touch it (end at a − 1 or start at b + 1); the ones
        // before `lo` end before a − 1 and the ones from `hi` on start after b + 1.
        let lo = self.ranges.partition_point(|x| key(anchor, x.last) + 1 < a);
        let hi = self
            .ranges
            .partition_point(|x| key(anchor, x.first) <= b + 1);
        if hi <= lo {
            // Nothing to merge with (`hi < lo` only if the order is inconsistent; inserting at
            // `lo` then still keeps indices in bounds).
            self.ranges.insert(lo, r);
            let added = u64::from(r.len());
            self.count += added;
            return added;
        }
        let head = self.ranges[lo];
        let tail = self.ranges[hi - 1];
        let merged = SeqRange {
            first: if key(anchor, head.first) < a {
                head.first
            } else {
                r.first
            },
            last: if key(anchor, tail.last) > b {
                tail.last
            } else {
                r.last
            },
        };
        let covered = total_len(self.ranges.range(lo..hi));
        let added = u64::from(merged.len()).saturating_sub(covered);
        self.ranges[lo] = merged;
        self.ranges.drain(lo + 1..hi);
        self.count += added;
        added
    }

    /// Adds `r`, which is expected to lie after everything present (the receiver's case): O(1),
    /// merging with the last range when `r` starts right after it. Returns `false`, after
    /// falling back to [`RangeSet::insert`], when `r` does not lie after everything present, and
    /// also `false` (without any change) when `r` is reversed.
    pub(crate) fn push_back(&mut self, r: SeqRange) -> bool {
        if span(r).is_none() {
            return false;
        }
        let (Some(front), Some(back)) = (self.ranges.front(), self.ranges.back()) else {
            self.insert(r);
            return true;
        };
        let anchor = front.first;
        let gap = key(anchor, r.first) - key(anchor, back.last);
        if gap <= 0 {
            self.insert(r);
            return false;
        }
        if gap == 1 {
            // Contiguous with the last range: extend it so that ranges stay maximal.
            if let Some(back) = self.ranges.back_mut() {
                back.last = r.last;
            }
        } else {
            self.ranges.push_back(r);
        }
        self.count += u64::from(r.len());
        true
    }

    /// Removes `seq`; returns whether it was present. Removing a number from the middle of a
    /// range splits it in two (one `VecDeque` insertion). O(log n).
    pub(crate) fn remove(&mut self, seq: SeqNo) -> bool {
        let Some(i) = self.find(seq) else {
            return false;
        };
        let hit = self.ranges[i];
        if hit.first == hit.last {
            self.ranges.remove(i);
        } else if hit.first == seq {
            self.ranges[i].first = seq.next();
        } else if hit.last == seq {
            self.ranges[i].last = seq.prev();
        } else {
            self.ranges[i].last = seq.prev();
            self.ranges.insert(
                i + 1,
                SeqRange {
                    first: seq.next(),
                    last: hit.last,
                },
            );
        }
        self.count = self.count.saturating_sub(1);
        true
    }

    /// Removes every number of `r`; returns how many were present. A reversed range is ignored
    /// (returns 0).
    ///
    /// O(log n) search, then at most one insertion (when `r` lies strictly inside one range) or
    /// the removal of the ranges `r` covers entirely (amortised against their insertion).
    pub(crate) fn remove_range(&mut self, r: SeqRange) -> u64 {
        let Some(span) = span(r) else { return 0 };
        let Some(front) = self.ranges.front() else {
            return 0;
        };
        let anchor = front.first;
        let a = key(anchor, r.first);
        let b = a + span;
        // Ranges in `lo..hi` intersect `[a, b]`.
        let lo = self.ranges.partition_point(|x| key(anchor, x.last) < a);
        let hi = self.ranges.partition_point(|x| key(anchor, x.first) <= b);
        if hi <= lo {
            return 0;
        }
        let head = self.ranges[lo];
        let tail = self.ranges[hi - 1];
        // The parts of the outermost intersected ranges that stick out of `r` survive.
        let left = (key(anchor, head.first) < a).then(|| SeqRange {
            first: head.first,
            last: r.first.prev(),
        });
        let right = (key(anchor, tail.last) > b).then(|| SeqRange {
            first: r.last.next(),
            last: tail.last,
        });
        let covered = total_len(self.ranges.range(lo..hi));
        let kept = total_len(left.iter().chain(right.iter()));
        let removed = covered.saturating_sub(kept);
        match (left, right) {
            (Some(left), Some(right)) if hi - lo == 1 => {
                // `r` lies strictly inside one range: split it.
                self.ranges[lo] = left;
                self.ranges.insert(lo + 1, right);
            }
            (Some(left), Some(right)) => {
                self.ranges[lo] = left;
                self.ranges[hi - 1] = right;
                self.ranges.drain(lo + 1..hi - 1);
            }
            (Some(left), None) => {
                self.ranges[lo] = left;
                self.ranges.drain(lo + 1..hi);
            }
            (None, Some(right)) => {
                self.ranges[hi - 1] = right;
                self.ranges.drain(lo..hi - 1);
            }
            (None, None) => {
                self.ranges.drain(lo..hi);
            }
        }
        self.count = self.count.saturating_sub(removed);
        removed
    }

    /// Removes every number up to and including `seq` (wrap-aware); returns how many were
    /// removed. O(1) when everything or nothing goes, otherwise one step per range removed from
    /// the front (amortised against their insertion).
    pub(crate) fn remove_up_to(&mut self, seq: SeqNo) -> u64 {
        let (Some(front), Some(back)) = (self.ranges.front(), self.ranges.back()) else {
            return 0;
        };
        let anchor = front.first;
        let k = key(anchor, seq);
        if k < 0 {
            return 0;
        }
        if key(anchor, back.last) <= k {
            // The common case of an ACK that covers every outstanding loss.
            let removed = self.count;
            self.clear();
            return removed;
        }
        let mut removed = 0;
        while let Some(front) = self.ranges.front_mut() {
            if key(anchor, front.last) <= k {
                removed += u64::from(front.len());
                self.ranges.pop_front();
            } else {
                if key(anchor, front.first) <= k {
                    removed += u64::from(front.first.range_len(seq));
                    front.first = seq.next();
                }
                break;
            }
        }
        self.count = self.count.saturating_sub(removed);
        removed
    }

    /// Panics unless the representation invariants hold: every range is forward, consecutive
    /// ranges are increasing with a gap of at least one number, and `count` is their total.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let Some(front) = self.ranges.front() else {
            assert_eq!(self.count, 0, "empty set with a non-zero count");
            return;
        };
        let anchor = front.first;
        let mut prev_last: Option<i64> = None;
        for r in &self.ranges {
            assert!(span(*r).is_some(), "reversed range {r:?}");
            let first = key(anchor, r.first);
            if let Some(p) = prev_last {
                assert!(
                    first > p + 1,
                    "ranges not disjoint and non-adjacent: {:?}",
                    self.ranges
                );
            }
            prev_last = Some(key(anchor, r.last));
        }
        assert_eq!(
            self.count,
            total_len(self.ranges.iter()),
            "count out of date"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss_list::model::{base_strategy, Model};
    use crate::seq::test_util::{r, s};
    use proptest::prelude::*;

    fn set_of(ranges: &[SeqRange]) -> RangeSet {
        let mut set = RangeSet::default();
        for &x in ranges {
            set.insert(x);
        }
        set.check_invariants();
        set
    }

    fn runs(set: &RangeSet) -> Vec<SeqRange> {
        set.iter().collect()
    }

    #[test]
    fn insert_into_empty_and_disjoint() {
        let mut set = RangeSet::default();
        assert_eq!(set.insert(r(10, 19)), 10);
        assert_eq!(set.insert(r(30, 30)), 1);
        assert_eq!(set.insert(r(0, 5)), 6);
        set.check_invariants();
        assert_eq!(runs(&set), vec![r(0, 5), r(10, 19), r(30, 30)]);
        assert_eq!(set.len(), 17);
        assert_eq!(set.first(), Some(s(0)));
    }

    #[test]
    fn insert_merges_overlap() {
        let mut set = set_of(&[r(10, 19)]);
        assert_eq!(set.insert(r(15, 25)), 6);
        assert_eq!(set.insert(r(5, 12)), 5);
        assert_eq!(
            set.insert(r(12, 14)),
            0,
            "fully covered insert adds nothing"
        );
        set.check_invariants();
        assert_eq!(runs(&set), vec![r(5, 25)]);
        assert_eq!(set.len(), 21);
    }

    #[test]
    fn insert_merges_adjacent_on_both_sides() {
        let mut set = set_of(&[r(10, 19)]);
        assert_eq!(set.insert(r(20, 20)), 1, "touching on the right");
        assert_eq!(set.insert(r(7, 9)), 3, "touching on the left");
        set.check_invariants();
        assert_eq!(runs(&set), vec![r(7, 20)]);

        let mut set = set_of(&[r(0, 4), r(6, 9)]);
        assert_eq!(
            set.insert(r(5, 5)),
            1,
            "filling a one-number hole joins both neighbours"
        );
        set.check_invariants();
        assert_eq!(runs(&set), vec![r(0, 9)]);
    }

    #[test]
    fn insert_bridges_several_ranges() {
        let mut set = set_of(&[r(0, 1), r(5, 6), r(10, 12), r(20, 20), r(40, 41)]);
        assert_eq!(set.len(), 10);
        assert_eq!(set.insert(r(3, 19)), 17 - 5);
        set.check_invariants();
        assert_eq!(runs(&set), vec![r(0, 1), r(3, 20), r(40, 41)]);
        assert_eq!(set.insert(r(2, 39)), 1 + 19);
        assert_eq!(runs(&set), vec![r(0, 41)]);
        assert_eq!(set.len(), 42);
        set.check_invariants();
    }

    #[test]
    fn insert_before_front_becomes_new_front() {
        let mut set = set_of(&[r(100, 110)]);
        assert_eq!(set.insert(r(50, 60)), 11);
        assert_eq!(set.first(), Some(s(50)));
        assert_eq!(set.insert(r(61, 99)), 39);
        assert_eq!(runs(&set), vec![r(50, 110)]);
        set.check_invariants();
    }

    #[test]
    fn remove_splits_and_trims() {
        let mut set = set_of(&[r(10, 20)]);
        assert!(set.remove(s(15)));
        assert_eq!(runs(&set), vec![r(10, 14), r(16, 20)]);
        assert!(set.remove(s(10)));
        assert!(set.remove(s(20)));
        assert_eq!(runs(&set), vec![r(11, 14), r(16, 19)]);
        assert!(!set.remove(s(15)), "absent number");
        assert!(!set.remove(s(9)));
        assert!(!set.remove(s(1000)));
        assert_eq!(set.len(), 8);
        set.check_invariants();

        let mut set = set_of(&[r(5, 5), r(7, 7)]);
        assert!(set.remove(s(5)));
        assert_eq!(runs(&set), vec![r(7, 7)]);
        assert!(set.remove(s(7)));
        assert!(set.is_empty());
        assert!(!set.remove(s(7)), "removal from an empty set is a no-op");
        set.check_invariants();
    }

    #[test]
    fn remove_range_cases() {
        // Strictly inside one range: split.
        let mut set = set_of(&[r(0, 99)]);
        assert_eq!(set.remove_range(r(10, 19)), 10);
        assert_eq!(runs(&set), vec![r(0, 9), r(20, 99)]);
        // Across several ranges, trimming both ends.
        let mut set = set_of(&[r(0, 9), r(20, 29), r(40, 49), r(60, 69)]);
        assert_eq!(set.remove_range(r(5, 64)), 5 + 10 + 10 + 5);
        assert_eq!(runs(&set), vec![r(0, 4), r(65, 69)]);
        set.check_invariants();
        // Covering whole ranges exactly, and gaps only.
        let mut set = set_of(&[r(0, 9), r(20, 29), r(40, 49)]);
        assert_eq!(set.remove_range(r(10, 19)), 0);
        assert_eq!(set.remove_range(r(20, 29)), 10);
        assert_eq!(set.remove_range(r(0, 5)), 6);
        assert_eq!(set.remove_range(r(45, 100)), 5);
        assert_eq!(runs(&set), vec![r(6, 9), r(40, 44)]);
        assert_eq!(set.len(), 9);
        set.check_invariants();
    }

    #[test]
    fn remove_up_to_cases() {
        let mut set = set_of(&[r(10, 19), r(30, 39), r(50, 59)]);
        assert_eq!(set.remove_up_to(s(5)), 0, "before everything");
        assert_eq!(set.remove_up_to(s(15)), 6, "inside the first range");
        assert_eq!(runs(&set), vec![r(16, 19), r(30, 39), r(50, 59)]);
        assert_eq!(set.remove_up_to(s(40)), 14, "in a gap");
        assert_eq!(runs(&set), vec![r(50, 59)]);
        assert_eq!(set.remove_up_to(s(59)), 10, "exactly the end");
        assert!(set.is_empty());
        assert_eq!(set.remove_up_to(s(100)), 0);
        set.check_invariants();
    }

    #[test]
    fn pop_first_walks_in_order() {
        let mut set = set_of(&[r(3, 5), r(7, 7)]);
        let popped: Vec<_> = std::iter::from_fn(|| set.pop_first()).collect();
        assert_eq!(popped, vec![s(3), s(4), s(5), s(7)]);
        assert!(set.is_empty());
        assert_eq!(set.len(), 0);
        set.check_invariants();
    }

    #[test]
    fn wraps_at_max() {
        let max = SeqNo::MAX;
        let mut set = RangeSet::default();
        assert_eq!(set.insert(r(2, 4)), 3);
        assert_eq!(set.insert(r(max - 3, max - 1)), 3);
        assert_eq!(
            runs(&set),
            vec![r(max - 3, max - 1), r(2, 4)],
            "order is wrap-aware"
        );
        assert_eq!(set.insert(r(max, 0)), 2, "a range crossing the wrap point");
        assert_eq!(runs(&set), vec![r(max - 3, 0), r(2, 4)]);
        assert_eq!(set.insert(r(1, 1)), 1);
        assert_eq!(runs(&set), vec![r(max - 3, 4)]);
        assert_eq!(set.len(), 9);
        assert!(set.contains(s(0)) && set.contains(s(max)) && !set.contains(s(5)));
        assert!(set.remove(s(0)));
        assert_eq!(runs(&set), vec![r(max - 3, max), r(1, 4)]);
        assert_eq!(set.remove_up_to(s(max - 1)), 3);
        assert_eq!(set.pop_first(), Some(s(max)));
        assert_eq!(set.pop_first(), Some(s(1)));
        assert_eq!(set.remove_range(r(max, 3)), 2);
        assert_eq!(runs(&set), vec![r(4, 4)]);
        set.check_invariants();
    }

    #[test]
    fn push_back_appends_merges_and_falls_back() {
        let mut set = RangeSet::default();
        assert!(set.push_back(r(10, 12)));
        assert!(
            set.push_back(r(13, 15)),
            "contiguous: merged with the last range"
        );
        assert!(set.push_back(r(20, 20)));
        assert_eq!(runs(&set), vec![r(10, 15), r(20, 20)]);
        assert!(
            !set.push_back(r(14, 21)),
            "overlap falls back to a general insert"
        );
        assert_eq!(runs(&set), vec![r(10, 21)]);
        assert!(!set.push_back(r(1, 2)));
        assert_eq!(runs(&set), vec![r(1, 2), r(10, 21)]);
        assert_eq!(set.len(), 14);
        set.check_invariants();
    }

    #[test]
    fn reversed_ranges_are_ignored() {
        let mut set = set_of(&[r(10, 20)]);
        assert_eq!(set.insert(r(30, 25)), 0);
        assert!(!set.push_back(r(30, 25)));
        assert_eq!(set.remove_range(r(18, 12)), 0);
        assert_eq!(runs(&set), vec![r(10, 20)]);
        assert_eq!(set.len(), 11);
        set.check_invariants();
    }

    #[test]
    fn clear_keeps_working() {
        let mut set = set_of(&[r(1, 5), r(9, 9)]);
        set.clear();
        assert!(set.is_empty());
        assert_eq!((set.len(), set.first(), set.range_count()), (0, None, 0));
        assert_eq!(set.insert(r(SeqNo::MAX, 3)), 5);
        set.check_invariants();
    }

    /// An operation of the general model test, on offsets from the model's base.
    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u64),
        PushBack(u64, u64),
        Remove(u64),
        RemoveRange(u64, u64),
        RemoveUpTo(u64),
        PopFirst,
        Clear,
    }

    fn op() -> impl Strategy<Value = Op> {
        let off = 0u64..5200;
        prop_oneof![
            6 => (100u64..5100, 1u64..64).prop_map(|(o, l)| Op::Insert(o, l)),
            1 => (100u64..5100, 1u64..1500).prop_map(|(o, l)| Op::Insert(o, l)),
            3 => (100u64..5100, 1u64..64).prop_map(|(o, l)| Op::PushBack(o, l)),
            4 => off.clone().prop_map(Op::Remove),
            2 => (off.clone(), 1u64..300).prop_map(|(o, l)| Op::RemoveRange(o, l)),
            1 => off.prop_map(Op::RemoveUpTo),
            3 => Just(Op::PopFirst),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        /// Every operation, including out-of-order `push_back` (the release-mode fallback of the
        /// receiver list), against a `BTreeSet` model, across the wrap point.
        #[test]
        fn matches_model(base in base_strategy(), ops in prop::collection::vec(op(), 1..200)) {
            let mut set = RangeSet::default();
            let mut model = Model::new(base);
            for op in ops {
                match op {
                    Op::Insert(o, l) => {
                        prop_assert_eq!(set.insert(model.range(o, l)), model.insert(o, l));
                    }
                    Op::PushBack(o, l) => {
                        let in_order = model.last().is_none_or(|last| o > last);
                        prop_assert_eq!(set.push_back(model.range(o, l)), in_order);
                        model.insert(o, l);
                    }
                    Op::Remove(o) => prop_assert_eq!(set.remove(model.seq(o)), model.remove(o)),
                    Op::RemoveRange(o, l) => {
                        prop_assert_eq!(set.remove_range(model.range(o, l)), model.remove_range(o, l));
                    }
                    Op::RemoveUpTo(o) => {
                        prop_assert_eq!(set.remove_up_to(model.seq(o)), model.remove_up_to(o));
                    }
                    Op::PopFirst => prop_assert_eq!(set.pop_first(), model.pop_first()),
                    Op::Clear => {
                        set.clear();
                        model.clear();
                    }
                }
                set.check_invariants();
                prop_assert_eq!(set.len(), model.len());
                prop_assert_eq!(set.first(), model.first());
                prop_assert_eq!(runs(&set), model.runs());
            }
        }

        /// The branch-free `key` agrees with the spec's `off` (`SeqNo::offset_to`) over any
        /// distance a list can hold, in both directions and across the wrap point.
        #[test]
        fn key_matches_offset_to(a in 0u32..=SeqNo::MAX, n in 0u32..SeqNo::THRESHOLD) {
            let a = s(a);
            let b = a.add(n);
            prop_assert_eq!(key(a, b), i64::from(a.offset_to(b)));
            prop_assert_eq!(key(b, a), i64::from(b.offset_to(a)));
        }

        /// Arbitrary numbers anywhere in the space, reversed ranges included, break the window
        /// assumption; nothing may panic.
        #[test]
        fn never_panics(ops in prop::collection::vec(
            (0u8..7, 0u32..=SeqNo::MAX, 0u32..=SeqNo::MAX), 1..100)
        ) {
            let mut set = RangeSet::default();
            for (kind, a, b) in ops {
                let x = SeqRange { first: s(a), last: s(b) };
                match kind {
                    0 => { set.insert(x); }
                    1 => { set.push_back(x); }
                    2 => { set.remove(x.first); }
                    3 => { set.remove_range(x); }
                    4 => { set.remove_up_to(x.first); }
                    5 => { set.pop_first(); }
                    _ => { set.contains(x.first); }
                }
                let _ = (set.len(), set.first(), set.iter().count());
            }
        }
    }
}
