//! The compressed loss-list encoding carried by NAK packets (spec §3.5, paper 001 appendix).
//!
//! A word with bit 0 clear is one lost sequence number. A word with bit 0 set starts a range
//! whose last number is the following word (bit 0 clear). Example: `0x00000002, 0x80000006,
//! 0x0000000B` names 2 and 6..=11.

use super::layout::{read_u32, write_u32, LOSS_RANGE_FLAG};
use super::WireError;
use crate::seq::{SeqNo, SeqRange};

/// A validated view of an encoded loss list: every range start is followed by its end, and no
/// range is reversed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LossReport<'a> {
    words: &'a [u8],
}

impl<'a> LossReport<'a> {
    /// Validates `body` (whole 32-bit words; trailing bytes are ignored, as 4.11 does).
    pub fn parse(body: &'a [u8]) -> Result<Self, WireError> {
        let words = &body[..body.len() / 4 * 4];
        if words.is_empty() {
            return Err(WireError::BadBodyLength {
                kind: "NAK",
                len: body.len(),
            });
        }
        let report = LossReport { words };
        let mut i = 0;
        let n = words.len() / 4;
        while i < n {
            let w = read_u32(words, i * 4);
            if w & LOSS_RANGE_FLAG != 0 {
                if i + 1 >= n {
                    return Err(WireError::MalformedLossReport);
                }
                let end = read_u32(words, (i + 1) * 4);
                if end & LOSS_RANGE_FLAG != 0 {
                    return Err(WireError::MalformedLossReport);
                }
                let first = SeqNo::from_masked(w);
                if SeqNo::from_masked(end).is_before(first) {
                    return Err(WireError::MalformedLossReport);
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        Ok(report)
    }

    /// The encoded words, as on the wire.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.words
    }

    /// Number of 32-bit words in the report.
    pub fn word_count(&self) -> usize {
        self.words.len() / 4
    }

    /// The lost ranges, in the order they were encoded.
    pub fn ranges(&self) -> LossRanges<'a> {
        LossRanges {
            words: self.words,
            at: 0,
        }
    }

    /// The first sequence number reported lost.
    pub fn first(&self) -> SeqNo {
        SeqNo::from_masked(read_u32(self.words, 0))
    }

    /// Encodes `ranges` into `buf` and returns the number of bytes written. Single numbers use
    /// one word, longer ranges two.
    pub fn encode(
        ranges: impl IntoIterator<Item = SeqRange>,
        buf: &mut [u8],
    ) -> Result<usize, WireError> {
        let mut at = 0;
        for r in ranges {
            let need = if r.first == r.last { 4 } else { 8 };
            if at + need > buf.len() {
                return Err(WireError::BufferTooSmall {
                    need: at + need,
                    have: buf.len(),
                });
            }
            if r.first == r.last {
                write_u32(buf, at, r.first.get());
            } else {
                write_u32(buf, at, r.first.get() | LOSS_RANGE_FLAG);
                write_u32(buf, at + 4, r.last.get());
            }
            at += need;
        }
        Ok(at)
    }
}

/// Iterator over the ranges of a [`LossReport`].
#[derive(Clone, Debug)]
pub struct LossRanges<'a> {
    words: &'a [u8],
    at: usize,
}

impl Iterator for LossRanges<'_> {
    type Item = SeqRange;

    fn next(&mut self) -> Option<SeqRange> {
        if self.at + 4 > self.words.len() {
            return None;
        }
        let w = read_u32(self.words, self.at);
        self.at += 4;
        let first = SeqNo::from_masked(w);
        if w & LOSS_RANGE_FLAG != 0 {
            // Validated in `parse`: the end word exists.
            let last = SeqNo::from_masked(read_u32(self.words, self.at));
            self.at += 4;
            Some(SeqRange { first, last })
        } else {
            Some(SeqRange::single(first))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    #[test]
    fn spec_example_decodes() {
        // Spec §3.5: 2, 6–11, 14.
        let b = words(&[0x0000_0002, 0x8000_0006, 0x0000_000B, 0x0000_000E]);
        let r = LossReport::parse(&b).unwrap();
        let got: Vec<_> = r.ranges().map(|r| (r.first.get(), r.last.get())).collect();
        assert_eq!(got, vec![(2, 2), (6, 11), (14, 14)]);
        assert_eq!(r.first().get(), 2);
    }

    #[test]
    fn paper_example_decodes() {
        // Paper 001 appendix: 3, 6..=15, 18.
        let b = words(&[0x0000_0003, 0x8000_0006, 0x0000_000F, 0x0000_0012]);
        let total: u32 = LossReport::parse(&b)
            .unwrap()
            .ranges()
            .map(|r| r.len())
            .sum();
        assert_eq!(total, 12);
    }

    #[test]
    fn malformed_reports_are_errors() {
        assert!(LossReport::parse(&[]).is_err());
        assert!(LossReport::parse(&words(&[0x8000_0001])).is_err());
        assert!(LossReport::parse(&words(&[0x8000_0001, 0x8000_0002])).is_err());
        assert!(LossReport::parse(&words(&[0x8000_0009, 0x0000_0002])).is_err());
        // Trailing partial word is ignored.
        let mut b = words(&[5]);
        b.push(0xAA);
        assert_eq!(LossReport::parse(&b).unwrap().word_count(), 1);
    }

    #[test]
    fn range_across_wrap_is_valid() {
        let b = words(&[0x8000_0000 | SeqNo::MAX, 0x0000_0001]);
        let r = LossReport::parse(&b).unwrap();
        assert_eq!(r.ranges().next().unwrap().len(), 3);
    }
}
