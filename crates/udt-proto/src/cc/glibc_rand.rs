//! The C library pseudo-random generator that 4.11's native congestion control re-seeds with
//! a sequence number at every congestion event (spec §12.3).
//!
//! The de-synchronising decrease draws `rand()` right after `srand(LastDecSeq)`, so its value is
//! a pure function of the sequence number. On Linux that function is glibc's additive-feedback
//! generator (`TYPE_3`: degree 31, separation 3, seeded through a Park–Miller LCG and warmed up
//! by discarding 310 outputs). Reproducing it makes our decisions identical to a 4.11 sender's
//! for the same sequence numbers.

/// Degree of the feedback polynomial.
const DEG: usize = 31;
/// Separation between the two taps.
const SEP: usize = 3;
/// `RAND_MAX` of glibc.
pub const RAND_MAX: u32 = 0x7FFF_FFFF;

/// The first output of `rand()` after `srand(seed)`.
pub fn rand_after_srand(seed: u32) -> u32 {
    let mut state = [0i32; DEG];
    let seed = if seed == 0 { 1 } else { seed };
    state[0] = seed as i32;
    let mut word = i64::from(seed);
    for slot in state.iter_mut().skip(1) {
        // Park–Miller "minimal standard" step by Schrage's method, as the seeding routine does.
        let hi = word / 127_773;
        let lo = word % 127_773;
        word = 16_807 * lo - 2_836 * hi;
        if word < 0 {
            word += 2_147_483_647;
        }
        *slot = word as i32;
    }
    let mut front = SEP;
    let mut rear = 0;
    let mut step = |state: &mut [i32; DEG]| -> u32 {
        let val = (state[front] as u32).wrapping_add(state[rear] as u32);
        state[front] = val as i32;
        front = (front + 1) % DEG;
        rear = (rear + 1) % DEG;
        val >> 1
    };
    for _ in 0..DEG * 10 {
        step(&mut state);
    }
    step(&mut state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_glibc_known_values() {
        // `srand(1); rand()` and `srand(0); rand()` (0 is treated as 1) give 1804289383 with
        // glibc; `srand(2); rand()` gives 1505335290.
        assert_eq!(rand_after_srand(1), 1_804_289_383);
        assert_eq!(rand_after_srand(0), 1_804_289_383);
        assert_eq!(rand_after_srand(2), 1_505_335_290);
        // Values read from this machine's glibc (`srand(s); printf("%d", rand())`).
        assert_eq!(rand_after_srand(12_345), 383_100_999);
        assert_eq!(rand_after_srand(2_147_483_647), 1_065_668_062);
        assert_eq!(rand_after_srand(1_000_000_007), 110_759_905);
    }
}
