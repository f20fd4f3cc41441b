//! Host stalls: a path that now and then stops handing packets over for a few milliseconds
//! and then hands over what it held, in order (`LinkSpec::stall_ms`).
//!
//! A user-space emulator, or a host whose cores are shared with busy processes, is
//! descheduled now and then; everything it would have delivered meanwhile waits. Seen from
//! the endpoints, the RTT rises by up to the stall's length with no packet queued at any
//! bottleneck, and no packet is reordered (which per-packet `jitter_ms` does).
//!
//! The schedule is a pure function of time: time is cut into periods of `stall_every_ms`,
//! and each period holds one stall at an offset drawn from a hash of the seed, the direction
//! and the period's index. Packets of flows with different RTTs reach the hosts out of time
//! order, and a stateless schedule treats them all alike.

use crate::link::Nanos;

/// The stall schedule of one run.
#[derive(Clone, Copy, Debug)]
pub struct Stalls {
    stall_ns: Nanos,
    period_ns: Nanos,
    seed: u64,
}

impl Stalls {
    /// Stalls of `stall_ms` once per `every_ms` (`every_ms > stall_ms`), or none if
    /// `stall_ms` is 0; the offsets within each period come from `seed`.
    pub fn new(stall_ms: f64, every_ms: f64, seed: u64) -> Option<Stalls> {
        let stall_ns = (stall_ms * 1e6).round() as Nanos;
        let period_ns = (every_ms * 1e6).round() as Nanos;
        (stall_ns > 0 && period_ns > stall_ns).then_some(Stalls {
            stall_ns,
            period_ns,
            seed,
        })
    }

    /// When a packet that would reach a host at `at` (ns) is handed over in direction
    /// `direction` (0 or 1, each with a schedule of its own): at `at`, or at the end of the
    /// stall that covers it. Never earlier than `at`, and a later `at` never yields an
    /// earlier time, so the order of packets is kept.
    pub fn release_at(&self, at: Nanos, direction: u64) -> Nanos {
        let period = at / self.period_ns;
        let start = period * self.period_ns
            + mix(self.seed ^ direction.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ period)
                % (self.period_ns - self.stall_ns);
        let end = start + self.stall_ns;
        if (start..end).contains(&at) {
            end
        } else {
            at
        }
    }
}

/// SplitMix64's finaliser: a well-spread 64-bit hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_period_holds_one_stall_of_the_given_length_and_order_is_kept() {
        let s = Stalls::new(2.0, 20.0, 7).expect("stalls configured");
        let (mut held_ns, mut last) = (0u64, 0u64);
        // One direction, 1 µs steps over 100 periods.
        for at in (0..2_000_000_000u64).step_by(1000) {
            let r = s.release_at(at, 0);
            assert!(
                r >= at && r >= last,
                "a release never comes early nor out of order"
            );
            if r > at {
                held_ns += 1000;
            }
            last = r;
        }
        // 100 stalls of 2 ms each.
        assert_eq!(held_ns, 100 * 2_000_000);
    }

    #[test]
    fn directions_have_schedules_of_their_own_and_none_means_none() {
        let s = Stalls::new(5.0, 50.0, 1).expect("stalls configured");
        let differs = (0..1_000_000_000u64)
            .step_by(100_000)
            .any(|at| s.release_at(at, 0) != s.release_at(at, 1));
        assert!(differs);
        assert!(Stalls::new(0.0, 50.0, 1).is_none());
        assert!(Stalls::new(5.0, 5.0, 1).is_none());
    }
}
