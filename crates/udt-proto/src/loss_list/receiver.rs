//! The receiver's loss list (spec §9.3): sequence numbers detected as missing and not yet
//! received.

use super::range_set::{is_forward, RangeSet};
use super::to_u32;
use crate::seq::{SeqNo, SeqRange};

/// The set of data packet sequence numbers the receiver is missing (spec §9.2 step 9, §9.3).
///
/// A gap is detected when a packet arrives beyond `inc(RcvCurrSeqNo)`, so new losses always lie
/// after everything present and are appended ([`push_back`](Self::push_back), O(1), merged with
/// the last range when contiguous). Retransmissions remove single numbers anywhere, splitting a
/// range when they fill the middle of a gap; drop requests remove whole ranges. The smallest
/// element bounds the ACK number (§8.2). Stored as ranges, so a burst loss of any size is one
/// entry (see the [module documentation](super)).
#[derive(Clone, Debug, Default)]
pub struct ReceiverLossList {
    set: RangeSet,
}

impl ReceiverLossList {
    /// An empty list. Does not allocate until the first insertion.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list with room for `ranges` disjoint ranges (not packets) before it allocates.
    pub fn with_capacity(ranges: usize) -> Self {
        ReceiverLossList {
            set: RangeSet::with_capacity(ranges),
        }
    }

    /// Appends a newly detected gap `r` (sequence numbers `inc(RcvCurrSeqNo) ..= dec(seq)`),
    /// which must lie after every number already present and must not be reversed. O(1).
    ///
    /// Violations are debug assertion failures; in release builds an out-of-order `r` is merged
    /// by a general (O(log n)) insertion instead and a reversed `r` is ignored, so the list
    /// stays consistent either way.
    pub fn push_back(&mut self, r: SeqRange) {
        debug_assert!(is_forward(r), "reversed range {r:?}");
        let in_order = self.set.push_back(r);
        debug_assert!(
            in_order,
            "receiver loss {r:?} does not come after the list's last range"
        );
    }

    /// Removes one sequence number (a retransmission or late packet arrived); returns whether
    /// it was present (absent: no-op). Filling the middle of a gap splits its range.
    pub fn remove(&mut self, seq: SeqNo) -> bool {
        self.set.remove(seq)
    }

    /// Removes every sequence number of `r` (a message drop request, §9.6); returns how many
    /// were present. `r` must not be reversed: a reversed range is a no-op returning 0 (and a
    /// debug assertion failure), so the caller validates ranges received from the peer.
    pub fn remove_range(&mut self, r: SeqRange) -> u32 {
        debug_assert!(is_forward(r), "reversed range {r:?}");
        to_u32(self.set.remove_range(r))
    }

    /// Removes every sequence number up to and including `seq`, in wrap-aware order.
    pub fn remove_up_to(&mut self, seq: SeqNo) {
        self.set.remove_up_to(seq);
    }

    /// The smallest missing sequence number: while the list is non-empty it is the ACK number.
    pub fn first(&self) -> Option<SeqNo> {
        self.set.first()
    }

    /// Number of missing sequence numbers (packets). O(1).
    pub fn len(&self) -> u32 {
        to_u32(self.set.len())
    }

    /// True when nothing is missing.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Number of disjoint ranges the list is stored as (its memory footprint, in entries).
    pub fn range_count(&self) -> usize {
        self.set.range_count()
    }

    /// The list as maximal ranges of consecutive missing sequence numbers, smallest first.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = SeqRange> + DoubleEndedIterator + '_ {
        self.set.iter()
    }

    /// True when `seq` is missing. O(log n) in the number of ranges.
    pub fn contains(&self, seq: SeqNo) -> bool {
        self.set.contains(seq)
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

    fn ranges(list: &ReceiverLossList) -> Vec<SeqRange> {
        list.ranges().collect()
    }

    #[test]
    fn appends_and_merges_contiguous_gaps() {
        let mut list = ReceiverLossList::new();
        list.push_back(r(10, 14));
        list.push_back(r(15, 15));
        list.push_back(r(20, 29));
        assert_eq!(ranges(&list), vec![r(10, 15), r(20, 29)]);
        assert_eq!(list.len(), 16);
        assert_eq!(list.first(), Some(s(10)));
        assert!(list.contains(s(15)) && !list.contains(s(16)) && list.contains(s(29)));
    }

    #[test]
    fn retransmissions_fill_holes_and_split() {
        let mut list = ReceiverLossList::new();
        list.push_back(r(10, 19));
        assert!(list.remove(s(12)));
        assert!(list.remove(s(19)));
        assert!(list.remove(s(10)));
        assert!(!list.remove(s(10)), "duplicate retransmission");
        assert!(!list.remove(s(40)), "never lost");
        assert_eq!(ranges(&list), vec![r(11, 11), r(13, 18)]);
        assert_eq!(
            list.first(),
            Some(s(11)),
            "the ACK number moves up to the next hole"
        );
        assert!(list.remove(s(11)));
        assert_eq!(list.first(), Some(s(13)));
        assert_eq!(list.len(), 6);
    }

    #[test]
    fn drop_request_removes_a_range() {
        let mut list = ReceiverLossList::new();
        list.push_back(r(10, 19));
        list.push_back(r(30, 39));
        list.push_back(r(50, 59));
        assert_eq!(list.remove_range(r(15, 54)), 5 + 10 + 5);
        assert_eq!(ranges(&list), vec![r(10, 14), r(55, 59)]);
        assert_eq!(list.remove_range(r(20, 40)), 0);
        assert_eq!(list.remove_range(r(11, 12)), 2);
        assert_eq!(ranges(&list), vec![r(10, 10), r(13, 14), r(55, 59)]);
        list.remove_up_to(s(13));
        assert_eq!(ranges(&list), vec![r(14, 14), r(55, 59)]);
        list.clear();
        assert!(list.is_empty());
        assert_eq!((list.len(), list.range_count()), (0, 0));
    }

    #[test]
    fn wrap_around_max() {
        let max = SeqNo::MAX;
        let mut list = ReceiverLossList::with_capacity(4);
        list.push_back(r(max - 2, max));
        list.push_back(r(0, 1));
        assert_eq!(
            ranges(&list),
            vec![r(max - 2, 1)],
            "contiguous across the wrap point"
        );
        list.push_back(r(5, 5));
        assert!(list.remove(s(max)));
        assert_eq!(ranges(&list), vec![r(max - 2, max - 1), r(0, 1), r(5, 5)]);
        assert!(list.contains(s(0)) && !list.contains(s(max)));
        list.remove_up_to(s(0));
        assert_eq!(ranges(&list), vec![r(1, 1), r(5, 5)]);
        assert_eq!(list.remove_range(r(max, 5)), 2);
        assert!(list.is_empty());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "does not come after")]
    fn out_of_order_push_asserts_in_debug() {
        let mut list = ReceiverLossList::new();
        list.push_back(r(10, 20));
        list.push_back(r(15, 25));
    }

    #[test]
    #[cfg(not(debug_assertions))]
    fn out_of_order_push_and_reversed_ranges_in_release() {
        let mut list = ReceiverLossList::new();
        list.push_back(r(10, 20));
        list.push_back(r(15, 25));
        list.push_back(r(1, 2));
        list.push_back(r(40, 30));
        assert_eq!(list.remove_range(r(9, 3)), 0);
        assert_eq!(ranges(&list), vec![r(1, 2), r(10, 25)]);
        assert_eq!(list.len(), 18);
    }

    /// A receiver operation. Removal offsets are taken modulo the current extent of the list so
    /// that they hit it often.
    #[derive(Clone, Debug)]
    enum Op {
        /// A gap after `skip` further numbers beyond the last one pushed, of `len` numbers.
        PushBack {
            skip: u64,
            len: u64,
        },
        Remove(u64),
        RemoveRange(u64, u64),
        RemoveUpTo(u64),
        Contains(u64),
        Clear,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u64..20, 1u64..32).prop_map(|(skip, len)| Op::PushBack { skip, len }),
            1 => (0u64..4, 1u64..1000).prop_map(|(skip, len)| Op::PushBack { skip, len }),
            6 => any::<u64>().prop_map(Op::Remove),
            2 => (any::<u64>(), 1u64..100).prop_map(|(o, l)| Op::RemoveRange(o, l)),
            1 => any::<u64>().prop_map(Op::RemoveUpTo),
            2 => any::<u64>().prop_map(Op::Contains),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        #[test]
        fn matches_model(base in base_strategy(), ops in prop::collection::vec(op(), 1..200)) {
            let mut list = ReceiverLossList::new();
            let mut model = Model::new(base);
            // Largest offset ever pushed; new gaps start after it, as losses are detected in
            // sequence order. Offsets start at 100 so that removals can target numbers before.
            let mut tail = 99u64;
            for op in ops {
                let extent = tail + 10;
                match op {
                    Op::PushBack { skip, len } => {
                        let first = tail + 1 + skip;
                        list.push_back(model.range(first, len));
                        model.insert(first, len);
                        tail = first + len - 1;
                    }
                    Op::Remove(o) => {
                        let o = o % extent;
                        prop_assert_eq!(list.remove(model.seq(o)), model.remove(o));
                    }
                    Op::RemoveRange(o, l) => {
                        let o = o % extent;
                        let got = u64::from(list.remove_range(model.range(o, l)));
                        prop_assert_eq!(got, model.remove_range(o, l));
                    }
                    Op::RemoveUpTo(o) => {
                        let o = o % extent;
                        list.remove_up_to(model.seq(o));
                        model.remove_up_to(o);
                    }
                    Op::Contains(o) => {
                        let o = o % extent;
                        prop_assert_eq!(list.contains(model.seq(o)), model.contains(o));
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
