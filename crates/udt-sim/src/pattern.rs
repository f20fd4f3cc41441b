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

/// Fills `out` with the stream bytes starting at `offset`.
pub fn fill(mut offset: u64, mut out: &mut [u8]) {
    let t = table();
    while !out.is_empty() {
        let pos = (offset % P as u64) as usize;
        let key = (offset / P as u64) as u8;
        let n = (P - pos).min(out.len());
        xor_into(&mut out[..n], &t[pos..pos + n], key);
        offset += n as u64;
        out = &mut out[n..];
    }
}

/// `out[i] = table[i] ^ key` (`out` and `table` of equal length), in fixed-size blocks the
/// compiler turns into vector instructions.
fn xor_into(out: &mut [u8], table: &[u8], key: u8) {
    const BLOCK: usize = 64;
    let mut o = out.chunks_exact_mut(BLOCK);
    let mut t = table.chunks_exact(BLOCK);
    for (ob, tb) in (&mut o).zip(&mut t) {
        let ob: &mut [u8; BLOCK] = ob.try_into().expect("exact chunk");
        let tb: &[u8; BLOCK] = tb.try_into().expect("exact chunk");
        for i in 0..BLOCK {
            ob[i] = tb[i] ^ key;
        }
    }
    for (o, &b) in o.into_remainder().iter_mut().zip(t.remainder()) {
        *o = b ^ key;
    }
}

/// Number of bytes of `data` that differ from the stream at `offset`.
pub fn mismatches(mut offset: u64, mut data: &[u8]) -> u64 {
    let t = table();
    let mut bad = 0u64;
    while !data.is_empty() {
        let pos = (offset % P as u64) as usize;
        let key = (offset / P as u64) as u8;
        let n = (P - pos).min(data.len());
        bad += count_mismatches(&data[..n], &t[pos..pos + n], key);
        offset += n as u64;
        data = &data[n..];
    }
    bad
}

/// Number of positions where `data[i] != table[i] ^ key` (`data` and `table` of equal length).
///
/// Block by block: the OR of `data ^ table ^ key` over a block is zero exactly when the whole
/// block matches (a loop the compiler turns into vector instructions), so the common case costs
/// little; only a block with a difference is counted byte by byte.
fn count_mismatches(data: &[u8], table: &[u8], key: u8) -> u64 {
    const BLOCK: usize = 64;
    let count = |d: &[u8], t: &[u8]| d.iter().zip(t).filter(|(&d, &b)| d != b ^ key).count();
    let mut bad = 0usize;
    let mut d = data.chunks_exact(BLOCK);
    let mut t = table.chunks_exact(BLOCK);
    for (db, tb) in (&mut d).zip(&mut t) {
        let db: &[u8; BLOCK] = db.try_into().expect("exact chunk");
        let tb: &[u8; BLOCK] = tb.try_into().expect("exact chunk");
        let mut diff = 0u8;
        for i in 0..BLOCK {
            diff |= db[i] ^ tb[i] ^ key;
        }
        if diff != 0 {
            bad += count(db, tb);
        }
    }
    // The tail: eight bytes at a time, then byte by byte.
    let key_word = u64::from_ne_bytes([key; 8]);
    let mut d = d.remainder().chunks_exact(8);
    let mut t = t.remainder().chunks_exact(8);
    for (dw, tw) in (&mut d).zip(&mut t) {
        let dw = u64::from_ne_bytes(dw.try_into().expect("exact chunk"));
        let tw = u64::from_ne_bytes(tw.try_into().expect("exact chunk"));
        if dw ^ tw ^ key_word != 0 {
            bad += (dw ^ tw ^ key_word)
                .to_ne_bytes()
                .iter()
                .filter(|&&b| b != 0)
                .count();
        }
    }
    (bad + count(d.remainder(), t.remainder())) as u64
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

    #[test]
    fn word_wise_count_matches_byte_wise() {
        let naive = |offset: u64, data: &[u8]| {
            let mut want = vec![0u8; data.len()];
            fill(offset, &mut want);
            data.iter().zip(&want).filter(|(a, b)| a != b).count() as u64
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
