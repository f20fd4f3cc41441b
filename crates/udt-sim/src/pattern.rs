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
        for (o, &b) in out[..n].iter_mut().zip(&t[pos..pos + n]) {
            *o = b ^ key;
        }
        offset += n as u64;
        out = &mut out[n..];
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
        bad += data[..n]
            .iter()
            .zip(&t[pos..pos + n])
            .filter(|(&d, &b)| d != b ^ key)
            .count() as u64;
        offset += n as u64;
        data = &data[n..];
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
}
