//! The sender's loss list (spec §10.6): sequence numbers reported lost by the peer and not yet
//! retransmitted.

use super::range_set::{is_forward, RangeSet};
use super::to_u32;
use crate::seq::{SeqNo, SeqRange};

/// The set of data packet sequence numbers waiting for retransmission (spec §10.3, §10.6).
///
/// NAK ranges are inserted in any order and merged with whatever they overlap or touch;
/// retransmission takes the smallest number first; a full ACK removes everything before its ACK
/// number. Stored as ranges, so a burst loss of any size is one entry (see the
/// [module documentation](super)).
#[derive(Clone, Debug, Default)]
pub struct SenderLossList {
    set: RangeSet,
}

impl SenderLossList {
    /// An empty list. Does not allocate until the first insertion.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list with room for `ranges` disjoint ranges (not packets) before it allocates.
    pub fn with_capacity(ranges: usize) -> Self {
        SenderLossList {
            set: RangeSet::with_capacity(ranges),
        }
    }

    /// Adds every sequence number of `r`, merging with the ranges it overlaps or touches.
    /// Returns how many sequence numbers were not already in the list (the statistic of §10.6).
    ///
    /// `r` must not be reversed (`r.last` before `r.first`); NAK decoding rejects such ranges.
    /// A reversed range is a no-op returning 0 (and a debug assertion failure).
    pub fn insert(&mut self, r: SeqRange) -> u32 {
        debug_assert!(is_forward(r), "reversed range {r:?}");
        to_u32(self.set.insert(r))
    }

    /// Removes and returns the smallest sequence number: the next packet to retransmit. O(1).
    pub fn pop_first(&mut self) -> Option<SeqNo> {
        self.set.pop_first()
    }

    /// The smallest sequence number, without removing it.
    pub fn first(&self) -> Option<SeqNo> {
        self.set.first()
    }

    /// Removes every sequence number up to and including `seq` in wrap-aware order (on a full
    /// ACK with ACK number `a`, `seq` is `a.prev()`).
    pub fn remove_up_to(&mut self, seq: SeqNo) {
        self.set.remove_up_to(seq);
    }

    /// Removes one sequence number; returns whether it was present (absent: no-op).
    pub fn remove(&mut self, seq: SeqNo) -> bool {
        self.set.remove(seq)
    }

    /// Number of sequence numbers (packets) in the list. O(1).
    pub fn len(&self) -> u32 {
        to_u32(self.set.len())
    }

    /// True when no sequence number is waiting for retransmission.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Number of disjoint ranges the list is stored as (its memory footprint, in entries).
    pub fn range_count(&self) -> usize {
        self.set.range_count()
    }

    /// The list as maximal ranges of consecutive sequence numbers, smallest first.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = SeqRange> + DoubleEndedIterator + '_ {
        self.set.iter()
    }

    /// Removes every sequence number, keeping the allocated capacity.
    pub fn clear(&mut self) {
        self.set.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss_list::model::{base_strategy, Model};
    use crate::seq::test_util::{r, s};
    use proptest::prelude::*;

    fn ranges(list: &SenderLossList) -> Vec<SeqRange> {
        list.ranges().collect()
    }

    #[test]
    fn nak_ranges_merge_in_any_order() {
        let mut list = SenderLossList::new();
        assert!(list.is_empty());
        assert_eq!(list.insert(r(20, 29)), 10);
        assert_eq!(list.insert(r(5, 5)), 1);
        assert_eq!(
            list.insert(r(25, 34)),
            5,
            "overlap counts only the new numbers"
        );
        assert_eq!(list.insert(r(30, 30)), 0, "a repeated report adds nothing");
        assert_eq!(list.insert(r(6, 19)), 14, "bridges the two ranges");
        assert_eq!(ranges(&list), vec![r(5, 34)]);
        assert_eq!(list.range_count(), 1);
        assert_eq!(list.len(), 30);
    }

    #[test]
    fn retransmission_takes_the_smallest_first() {
        let mut list = SenderLossList::new();
        list.insert(r(10, 11));
        list.insert(r(3, 3));
        list.insert(r(7, 8));
        assert_eq!(list.first(), Some(s(3)));
        let order: Vec<_> = std::iter::from_fn(|| list.pop_first()).collect();
        assert_eq!(order, vec![s(3), s(7), s(8), s(10), s(11)]);
        assert_eq!(list.pop_first(), None);
        assert_eq!(list.len(), 0);
    }

    #[test]
    fn ack_removes_up_to_and_single_removal_splits() {
        let mut list = SenderLossList::new();
        list.insert(r(100, 199));
        list.insert(r(300, 309));
        list.remove_up_to(s(149));
        assert_eq!(ranges(&list), vec![r(150, 199), r(300, 309)]);
        assert!(list.remove(s(160)));
        assert!(!list.remove(s(160)));
        assert_eq!(ranges(&list), vec![r(150, 159), r(161, 199), r(300, 309)]);
        list.remove_up_to(s(99));
        assert_eq!(list.len(), 59);
        list.remove_up_to(s(1000));
        assert!(list.is_empty());
        list.insert(r(1, 1));
        list.clear();
        assert!(list.is_empty() && list.first().is_none());
    }

    #[test]
    fn wrap_around_max() {
        let max = SeqNo::MAX;
        let mut list = SenderLossList::with_capacity(4);
        assert_eq!(list.insert(r(1, 3)), 3);
        assert_eq!(list.insert(r(max - 1, max)), 2);
        assert_eq!(
            list.insert(r(0, 0)),
            1,
            "joins the ranges on both sides of the wrap"
        );
        assert_eq!(ranges(&list), vec![r(max - 1, 3)]);
        list.remove_up_to(s(max));
        assert_eq!(list.first(), Some(s(0)));
        assert_eq!(list.pop_first(), Some(s(0)));
        assert_eq!(list.pop_first(), Some(s(1)));
        assert_eq!(list.len(), 2);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "reversed range")]
    fn reversed_range_asserts_in_debug() {
        SenderLossList::new().insert(r(10, 5));
    }

    #[test]
    #[cfg(not(debug_assertions))]
    fn reversed_range_is_ignored_in_release() {
        let mut list = SenderLossList::new();
        list.insert(r(1, 2));
        assert_eq!(list.insert(r(10, 5)), 0);
        assert_eq!(ranges(&list), vec![r(1, 2)]);
        assert_eq!(list.len(), 2);
    }

    /// A sender operation on offsets from the model's base.
    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u64),
        PopFirst,
        Remove(u64),
        RemoveUpTo(u64),
        Clear,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (100u64..5100, 1u64..64).prop_map(|(o, l)| Op::Insert(o, l)),
            1 => (100u64..5100, 1u64..2000).prop_map(|(o, l)| Op::Insert(o, l)),
            4 => Just(Op::PopFirst),
            3 => (0u64..5200).prop_map(Op::Remove),
            1 => (0u64..5200).prop_map(Op::RemoveUpTo),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        #[test]
        fn matches_model(base in base_strategy(), ops in prop::collection::vec(op(), 1..200)) {
            let mut list = SenderLossList::new();
            let mut model = Model::new(base);
            for op in ops {
                match op {
                    Op::Insert(o, l) => {
                        prop_assert_eq!(u64::from(list.insert(model.range(o, l))), model.insert(o, l));
                    }
                    Op::PopFirst => prop_assert_eq!(list.pop_first(), model.pop_first()),
                    Op::Remove(o) => prop_assert_eq!(list.remove(model.seq(o)), model.remove(o)),
                    Op::RemoveUpTo(o) => {
                        list.remove_up_to(model.seq(o));
                        model.remove_up_to(o);
                    }
                    Op::Clear => {
                        list.clear();
                        model.clear();
                    }
                }
                list.set.check_invariants();
                prop_assert_eq!(u64::from(list.len()), model.len());
                prop_assert_eq!(list.is_empty(), model.len() == 0);
                prop_assert_eq!(list.first(), model.first());
                let runs = model.runs();
                prop_assert_eq!(list.range_count(), runs.len());
                prop_assert_eq!(ranges(&list), runs);
            }
        }
    }
}
