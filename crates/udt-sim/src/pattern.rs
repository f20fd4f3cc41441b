//! The verifiable payload every simulated sender writes.
//!
//! Byte `i` of a flow's stream is `TABLE[i mod P] XOR (i div P)` where `TABLE` is a fixed
//! pseudo-random table of prime length `P`. The stream repeats only every `256 · P` bytes, and
//! packet-sized gaps or duplicates cannot line up with that period in any run we make, so a
//! missing, duplicated, reordered or corrupted byte shows up as a mismatch.

use std::sync::OnceLock;

/// Table length, bytes (prime).
const P: usize = 65_521;

fn table() -> &'static [u8] {
    static TABLE: OnceLock<Vec<u8>> = OnceLock::new();
    TABLE.get_or_init(|| {
        // xorshift64*: a fixed, dependency-free filler (not security relevant).
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..P)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
            })
            .collect()
    })
}

/// Length of the stream's cycle: byte `i` depends on `i mod P` and `(i div P) mod 256`.
const CYCLE: usize = 256 * P;

/// Longest span [`stream`] returns in one piece (and that [`fill`] and [`mismatches`] handle
/// per step), bytes.
pub const MAX_SPAN: usize = 1 << 20;

/// One whole cycle of the stream followed by its first [`MAX_SPAN`] bytes again, so that every
/// span of up to `MAX_SPAN` bytes is one contiguous slice: writing is handing out a slice,
/// checking is one memory comparison. About 17 MiB, built on first use.
fn cycle() -> &'static [u8] {
    static CYCLE_BYTES: OnceLock<Box<[u8]>> = OnceLock::new();
    CYCLE_BYTES.get_or_init(|| {
        let t = table();
        let mut c = Vec::with_capacity(CYCLE + MAX_SPAN);
        for key in 0..=255u8 {
            c.extend(t.iter().map(|&b| b ^ key));
        }
        c.extend_from_within(..MAX_SPAN);
        c.into_boxed_slice()
    })
}

/// The `len` stream bytes starting at `offset` (`len` at most [`MAX_SPAN`]).
pub fn stream(offset: u64, len: usize) -> &'static [u8] {
    assert!(
        len <= MAX_SPAN,
        "span of {len} bytes is longer than MAX_SPAN"
    );
    let start = (offset % CYCLE as u64) as usize;
    &cycle()[start..start + len]
}

/// Fills `out` with the stream bytes starting at `offset`.
pub fn fill(mut offset: u64, out: &mut [u8]) {
    for piece in out.chunks_mut(MAX_SPAN) {
        piece.copy_from_slice(stream(offset, piece.len()));
        offset += piece.len() as u64;
    }
}

/// Number of bytes of `data` that differ from the stream at `offset`.
pub fn mismatches(mut offset: u64, data: &[u8]) -> u64 {
    let mut bad = 0u64;
    for piece in data.chunks(MAX_SPAN) {
        let want = stream(offset, piece.len());
        // One memory comparison in the common case; count only a piece that differs.
        if piece != want {
            bad += piece.iter().zip(want).filter(|(d, w)| d != w).count() as u64;
        }
        offset += piece.len() as u64;
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_and_check_agree_across_table_boundaries() {
        let mut buf = vec![0u8; 3 * P + 17];
        fill(P as u64 - 5, &mut buf);
        assert_eq!(mismatches(P as u64 - 5, &buf), 0);
        // Shifting by one packet, or by the table length, is detected.
        assert!(mismatches(P as u64 - 5 + 1456, &buf) > 0);
        assert!(mismatches(2 * P as u64 - 5, &buf) > 0);
        buf[100] ^= 1;
        assert_eq!(mismatches(P as u64 - 5, &buf), 1);
    }

    /// Byte `i` straight from the definition.
    fn byte_at(i: u64) -> u8 {
        table()[(i % P as u64) as usize] ^ (i / P as u64) as u8
    }

    #[test]
    fn fill_follows_the_definition_across_periods() {
        // Periods 0, 1, 255 and 256 (key 0 again, one table cycle later), across boundaries,
        // and spans longer than one piece.
        for start in [
            0,
            P as u64 - 3,
            255 * P as u64 - 700,
            256 * P as u64 - 1,
            3 * CYCLE as u64 - 5,
        ] {
            for len in [2000, MAX_SPAN + 3] {
                let mut buf = vec![0u8; len];
                fill(start, &mut buf);
                for (k, &b) in buf.iter().enumerate() {
                    assert_eq!(b, byte_at(start + k as u64), "offset {}", start + k as u64);
                }
                assert_eq!(mismatches(start, &buf), 0);
                buf[len - 1] ^= 0x40;
                assert_eq!(mismatches(start, &buf), 1);
            }
        }
    }

    #[test]
    fn count_matches_byte_wise() {
        let naive = |offset: u64, data: &[u8]| {
            data.iter()
                .enumerate()
                .filter(|&(k, &d)| d != byte_at(offset + k as u64))
                .count() as u64
        };
        let offset = 3 * P as u64 - 700;
        let mut buf = vec![0u8; 1500];
        fill(offset, &mut buf);
        // Corrupt bytes in word bodies, several in one word, and in the unaligned tail.
        for (k, i) in [0usize, 7, 8, 9, 10, 699, 700, 701, 1490, 1497, 1499]
            .into_iter()
            .enumerate()
        {
            buf[i] ^= 1 << (k % 8);
            for len in [0, 1, 7, 8, 9, 63, 700, 701, 1499, 1500] {
                assert_eq!(mismatches(offset, &buf[..len]), naive(offset, &buf[..len]));
            }
            assert_eq!(mismatches(offset, &buf[3..]), naive(offset, &buf[3..]));
        }
        assert_eq!(mismatches(offset, &buf), 11);
    }
}
