//! Loss lists: the sets of lost data packet sequence numbers kept by each side of a connection
//! (spec §9.3 and §10.6, paper 001 appendix "Loss information processing").
//!
//! * [`ReceiverLossList`]: the numbers the receiver has detected as missing. Losses are detected
//!   in sequence order, so insertions come at the end; retransmissions and drop requests remove
//!   numbers anywhere; its smallest element bounds the ACK number.
//! * [`SenderLossList`]: the numbers the peer has reported lost (NAK) and that still have to be
//!   retransmitted. NAK ranges may arrive in any order and overlap; retransmission always takes
//!   the smallest number, and ACKs remove everything up to a point.
//!
//! # Representation
//!
//! Both lists store **ranges**, never individual packets: a sorted `VecDeque` of disjoint,
//! non-adjacent inclusive [`SeqRange`](crate::SeqRange)s (a private `RangeSet`). A burst of
//! thousands of consecutive losses, the typical pattern when a queue overflows at 1 Gb/s, is a
//! single entry, so memory and time depend on the number of loss *events*, not of lost packets.
//! This is the same idea as UDT4's static list of (start, end) nodes, with the linear search for
//! the neighbouring node replaced by a binary search.
//!
//! Sequence numbers wrap at 2^31. All numbers held by one list lie within a window far smaller
//! than 2^30 (the lists are bounded by the flow window), so ordering every number by its signed
//! distance from the list's first range is a consistent total order, and the ranges stay sorted
//! in it across the wrap point.
//!
//! # Complexity (n = number of ranges, not packets)
//!
//! | Operation | Cost |
//! |---|---|
//! | `len`, `first`, `pop_first`, receiver `push_back` | O(1) |
//! | `contains` | O(log n) (O(1) when `seq` is in the first range) |
//! | `remove` (may split a range) | `contains` + at most one `VecDeque` insert or remove |
//! | `insert` | O(1) after everything present, else O(log n) + one `VecDeque` insert, or the removal of the ranges it bridges |
//! | `remove_range` | O(log n) + one `VecDeque` insert (split), or the removal of the ranges it covers |
//! | `remove_up_to` | O(1) when it empties the list, else O(ranges removed) |
//!
//! A `VecDeque` insert or remove away from the ends shifts the shorter side (a `memmove` of
//! 8 bytes per range): cheap, and rare, since losses are mostly added at the back and removed at
//! the front. Ranges removed by a merge or a cut were each inserted once, so their removal is
//! amortised against that insertion; no operation ever loops over individual sequence numbers.
//! Removal keeps the `VecDeque`'s capacity, so a list that has reached its working size no
//! longer allocates.
//!
//! # Invalid input
//!
//! Ranges are expected to be validated by the caller (a NAK or drop request with `first` after
//! `last` is a protocol error that the connection handles). The lists `debug_assert!` this; in
//! release builds a reversed range is ignored and an out-of-order receiver append falls back to
//! a general insertion. No sequence of operations panics or corrupts the lists' structure.

mod range_set;
mod receiver;
mod sender;

pub use receiver::ReceiverLossList;
pub use sender::SenderLossList;

/// Converts an internal count (kept in `u64` so that it cannot overflow) to the `u32` of the
/// public API. A consistent list never holds more than 2^31 numbers, so this never saturates in
/// practice.
fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The reference model for property tests: a `BTreeSet` of offsets from a base sequence number.
#[cfg(test)]
pub(crate) mod model {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use crate::seq::{SeqNo, SeqRange};

    /// Base sequence numbers for model tests: mostly just below `SeqNo::MAX`, so that the lists
    /// cross the wrap point, sometimes anywhere.
    pub(crate) fn base_strategy() -> impl Strategy<Value = SeqNo> {
        prop_oneof![
            3 => (SeqNo::MAX - 6000)..=SeqNo::MAX,
            1 => 0..=SeqNo::MAX,
        ]
        .prop_map(|v| SeqNo::new(v).unwrap())
    }

    /// A set of sequence numbers `base + offset`, with offsets held in a `BTreeSet`.
    pub(crate) struct Model {
        base: SeqNo,
        set: BTreeSet<u64>,
    }

    impl Model {
        pub(crate) fn new(base: SeqNo) -> Self {
            Model {
                base,
                set: BTreeSet::new(),
            }
        }

        pub(crate) fn seq(&self, off: u64) -> SeqNo {
            self.base.add(u32::try_from(off).unwrap())
        }

        /// The range of `len ≥ 1` numbers starting at offset `off`.
        pub(crate) fn range(&self, off: u64, len: u64) -> SeqRange {
            SeqRange {
                first: self.seq(off),
                last: self.seq(off + len - 1),
            }
        }

        pub(crate) fn insert(&mut self, off: u64, len: u64) -> u64 {
            (off..off + len).filter(|&o| self.set.insert(o)).count() as u64
        }

        pub(crate) fn remove(&mut self, off: u64) -> bool {
            self.set.remove(&off)
        }

        pub(crate) fn remove_range(&mut self, off: u64, len: u64) -> u64 {
            (off..off + len).filter(|o| self.set.remove(o)).count() as u64
        }

        pub(crate) fn remove_up_to(&mut self, off: u64) -> u64 {
            let kept = self.set.split_off(&(off + 1));
            let removed = self.set.len() as u64;
            self.set = kept;
            removed
        }

        pub(crate) fn pop_first(&mut self) -> Option<SeqNo> {
            self.set.pop_first().map(|o| self.seq(o))
        }

        pub(crate) fn contains(&self, off: u64) -> bool {
            self.set.contains(&off)
        }

        pub(crate) fn clear(&mut self) {
            self.set.clear();
        }

        pub(crate) fn len(&self) -> u64 {
            self.set.len() as u64
        }

        pub(crate) fn first(&self) -> Option<SeqNo> {
            self.set.first().map(|&o| self.seq(o))
        }

        /// The largest offset present.
        pub(crate) fn last(&self) -> Option<u64> {
            self.set.last().copied()
        }

        /// The maximal runs of consecutive numbers, smallest first.
        pub(crate) fn runs(&self) -> Vec<SeqRange> {
            let mut runs: Vec<(u64, u64)> = Vec::new();
            for &o in &self.set {
                match runs.last_mut() {
                    Some((_, last)) if *last + 1 == o => *last = o,
                    _ => runs.push((o, o)),
                }
            }
            runs.into_iter()
                .map(|(a, b)| SeqRange {
                    first: self.seq(a),
                    last: self.seq(b),
                })
                .collect()
        }
    }
}
