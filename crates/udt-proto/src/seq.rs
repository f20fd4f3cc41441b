//! Wrap-aware arithmetic on UDT's circular number spaces (spec §7).
//!
//! * [`SeqNo`]: 31-bit data packet sequence numbers (`0 ..= 2^31 − 1`).
//! * [`MsgNo`]: 29-bit message numbers (`0 ..= 2^29 − 1`).
//! * [`AckNo`]: 31-bit ACK sequence numbers, which only ever need equality and successor.
//!
//! Two numbers are compared by their distance: if it is below the threshold (a quarter of the
//! space) the plain order holds, otherwise the numbers are taken to have wrapped. Windows in a
//! healthy connection are far smaller than the threshold, so the order is consistent for any two
//! numbers that can coexist in a connection's state.

use core::cmp::Ordering;
use core::fmt;

macro_rules! wrapping_number {
    ($(#[$doc:meta])* $name:ident, max = $max:expr, threshold = $th:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(u32);

        impl $name {
            /// Largest value of the number space.
            pub const MAX: u32 = $max;
            /// Distance beyond which two numbers are taken to have wrapped.
            pub const THRESHOLD: u32 = $th;

            /// The number `value`, which must lie in `0 ..= MAX`; returns `None` otherwise.
            pub const fn new(value: u32) -> Option<Self> {
                if value <= Self::MAX { Some($name(value)) } else { None }
            }

            /// The number formed by the low bits of `value` (the bits above the space are
            /// discarded, as when a field is extracted from a wire word).
            pub const fn from_masked(value: u32) -> Self {
                $name(value & Self::MAX)
            }

            /// The raw value.
            pub const fn get(self) -> u32 {
                self.0
            }

            /// The successor, wrapping from `MAX` to 0.
            #[must_use]
            pub const fn next(self) -> Self {
                if self.0 == Self::MAX { $name(0) } else { $name(self.0 + 1) }
            }

            /// The predecessor, wrapping from 0 to `MAX`.
            #[must_use]
            pub const fn prev(self) -> Self {
                if self.0 == 0 { $name(Self::MAX) } else { $name(self.0 - 1) }
            }

            /// `self + n` modulo the size of the space.
            #[must_use]
            pub const fn add(self, n: u32) -> Self {
                let span = Self::MAX as u64 + 1;
                $name(((self.0 as u64 + n as u64) % span) as u32)
            }

            /// `self − n` modulo the size of the space.
            #[must_use]
            pub const fn sub(self, n: u32) -> Self {
                let span = Self::MAX as u64 + 1;
                let n = n as u64 % span;
                $name(((self.0 as u64 + span - n) % span) as u32)
            }

            /// Signed distance from `self` to `later` (the spec's `off(self, later)`):
            /// positive when `later` comes after `self`.
            pub const fn offset_to(self, later: Self) -> i32 {
                let a = self.0 as i64;
                let b = later.0 as i64;
                let span = Self::MAX as i64 + 1;
                let d = if (a - b).abs() < Self::THRESHOLD as i64 {
                    b - a
                } else if a < b {
                    b - a - span
                } else {
                    b - a + span
                };
                d as i32
            }

            /// Number of values in the inclusive range `[self, last]` (the spec's `len`).
            pub const fn range_len(self, last: Self) -> u32 {
                let span = Self::MAX as u64 + 1;
                ((last.0 as u64 + span - self.0 as u64) % span + 1) as u32
            }

            /// Wrap-aware order: `Greater` when `self` comes after `other`.
            pub fn wrapping_cmp(self, other: Self) -> Ordering {
                self.offset_from(other).cmp(&0)
            }

            /// Signed distance from `other` to `self` (positive when `self` is later).
            pub const fn offset_from(self, other: Self) -> i32 {
                other.offset_to(self)
            }

            /// True when `self` comes strictly after `other`.
            pub const fn is_after(self, other: Self) -> bool {
                self.offset_from(other) > 0
            }

            /// True when `self` comes strictly before `other`.
            pub const fn is_before(self, other: Self) -> bool {
                self.offset_from(other) < 0
            }

            /// The later of two numbers in wrap-aware order.
            #[must_use]
            pub const fn max_wrapping(self, other: Self) -> Self {
                if self.is_after(other) { self } else { other }
            }

            /// The earlier of two numbers in wrap-aware order.
            #[must_use]
            pub const fn min_wrapping(self, other: Self) -> Self {
                if self.is_before(other) { self } else { other }
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

wrapping_number!(
    /// A 31-bit data packet sequence number (spec §7.1).
    SeqNo, max = 0x7FFF_FFFF, threshold = 0x3FFF_FFFF
);

wrapping_number!(
    /// A 29-bit message number (spec §7.2). 4.11 senders cycle through `1 ..= MAX − 1`.
    MsgNo, max = 0x1FFF_FFFF, threshold = 0x0FFF_FFFF
);

wrapping_number!(
    /// A 31-bit ACK sequence number (spec §7.3), carried by full ACKs and echoed by ACK2.
    AckNo, max = 0x7FFF_FFFF, threshold = 0x3FFF_FFFF
);

impl MsgNo {
    /// The message number a sender uses after `self`: 4.11 restarts at 1 rather than reaching
    /// `MAX` or 0, and we do the same so that 0 never appears on the wire.
    #[must_use]
    pub const fn next_for_sender(self) -> Self {
        if self.0 + 1 >= Self::MAX {
            MsgNo(1)
        } else {
            MsgNo(self.0 + 1)
        }
    }
}

/// An inclusive range of sequence numbers `[first, last]`, in wrap-aware order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SeqRange {
    /// First sequence number in the range.
    pub first: SeqNo,
    /// Last sequence number in the range (inclusive; equal to `first` for a single number).
    pub last: SeqNo,
}

impl SeqRange {
    /// A range of one sequence number.
    pub const fn single(seq: SeqNo) -> Self {
        SeqRange {
            first: seq,
            last: seq,
        }
    }

    /// Number of sequence numbers in the range (at least 1).
    pub const fn len(&self) -> u32 {
        self.first.range_len(self.last)
    }

    /// Always false: a range holds at least one number. Provided for API symmetry.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// True when `seq` lies within the range.
    pub const fn contains(&self, seq: SeqNo) -> bool {
        seq.offset_from(self.first) >= 0 && self.last.offset_from(seq) >= 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(v: u32) -> SeqNo {
        SeqNo::new(v).unwrap()
    }

    #[test]
    fn sequence_wraps_at_2_pow_31() {
        assert_eq!(s(SeqNo::MAX).next(), s(0));
        assert_eq!(s(0).prev(), s(SeqNo::MAX));
        assert_eq!(s(SeqNo::MAX - 1).add(5), s(3));
        assert_eq!(s(3).sub(5), s(SeqNo::MAX - 1));
        assert!(SeqNo::new(0x8000_0000).is_none());
    }

    #[test]
    fn compare_across_the_wrap_point() {
        let before = s(SeqNo::MAX - 2);
        let after = s(1);
        assert!(after.is_after(before));
        assert!(before.is_before(after));
        assert_eq!(before.offset_to(after), 4);
        assert_eq!(after.offset_to(before), -4);
        assert_eq!(before.range_len(after), 5);
        assert_eq!(after.wrapping_cmp(before), Ordering::Greater);
        assert_eq!(before.max_wrapping(after), after);
    }

    #[test]
    fn spec_len_matches_definition() {
        // len(a, b) = b − a + 1 if a ≤ b else b − a + MAX + 2
        assert_eq!(s(10).range_len(s(10)), 1);
        assert_eq!(s(10).range_len(s(19)), 10);
        assert_eq!(s(SeqNo::MAX).range_len(s(0)), 2);
    }

    #[test]
    fn message_numbers_skip_zero_and_max() {
        let m = MsgNo::new(MsgNo::MAX - 1).unwrap();
        assert_eq!(m.next_for_sender().get(), 1);
        assert_eq!(MsgNo::new(MsgNo::MAX).unwrap().next().get(), 0);
        assert_eq!(MsgNo::from_masked(0xE000_0005).get(), 5);
    }

    #[test]
    fn range_contains_across_wrap() {
        let r = SeqRange {
            first: s(SeqNo::MAX - 1),
            last: s(2),
        };
        assert_eq!(r.len(), 5);
        assert!(r.contains(s(0)));
        assert!(r.contains(s(SeqNo::MAX)));
        assert!(!r.contains(s(3)));
        assert!(!r.contains(s(SeqNo::MAX - 2)));
    }

    proptest! {
        #[test]
        fn add_then_offset_round_trips(a in 0u32..=SeqNo::MAX, n in 0u32..SeqNo::THRESHOLD) {
            let a = s(a);
            let b = a.add(n);
            prop_assert_eq!(a.offset_to(b), n as i32);
            prop_assert_eq!(b.offset_to(a), -(n as i32));
            prop_assert_eq!(a.range_len(b), n + 1);
            prop_assert_eq!(b.sub(n), a);
            prop_assert_eq!(a.is_after(b), false);
            prop_assert_eq!(b.is_after(a), n > 0);
        }

        #[test]
        fn msg_add_then_offset_round_trips(a in 0u32..=MsgNo::MAX, n in 0u32..MsgNo::THRESHOLD) {
            let a = MsgNo::new(a).unwrap();
            let b = a.add(n);
            prop_assert_eq!(a.offset_to(b), n as i32);
            prop_assert_eq!(a.range_len(b), n + 1);
        }

        #[test]
        fn next_prev_inverse(a in 0u32..=SeqNo::MAX) {
            prop_assert_eq!(s(a).next().prev(), s(a));
            prop_assert_eq!(s(a).next(), s(a).add(1));
        }
    }
}

/// Short constructors for unit tests that name sequence numbers by their raw values.
#[cfg(test)]
pub(crate) mod test_util {
    use super::{SeqNo, SeqRange};

    /// The sequence number `v` (panics if it is out of range).
    pub(crate) fn s(v: u32) -> SeqNo {
        SeqNo::new(v).unwrap()
    }

    /// The range `first..=last`.
    pub(crate) fn r(first: u32, last: u32) -> SeqRange {
        SeqRange {
            first: s(first),
            last: s(last),
        }
    }
}
