//! The runtime's clock: the engine's [`Instant`] (µs) counted from when the multiplexer
//! started, and the conversion of kernel receive timestamps onto it.

use udt_proto::Instant;

/// Monotonic time since an origin, in the engine's units.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    origin: std::time::Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            origin: std::time::Instant::now(),
        }
    }

    /// Now.
    pub(crate) fn now(&self) -> Instant {
        self.at(std::time::Instant::now())
    }

    /// A `std` instant in engine time.
    pub(crate) fn at(&self, t: std::time::Instant) -> Instant {
        Instant::from_micros(t.saturating_duration_since(self.origin).as_micros() as u64)
    }

    /// Engine time of a packet the kernel stamped with wall-clock time `stamp_ns`, given
    /// that the wall clock reads `wall_now_ns` at engine time `now` (both ns since the Unix
    /// epoch). The kernel stamps receptions with the realtime clock; the difference from now
    /// is how long ago the packet arrived, which is all we need (a clock step between the two
    /// readings is too rare to matter, and the result is clamped to `now`). Integer
    /// arithmetic only: this runs for every datagram.
    pub(crate) fn from_wall(now: Instant, wall_now_ns: u64, stamp_ns: u64) -> Instant {
        let ago_us = wall_now_ns.saturating_sub(stamp_ns) / 1_000;
        Instant::from_micros(now.as_micros().saturating_sub(ago_us))
    }
}

/// The realtime clock now, ns since the Unix epoch (0 if it reads before the epoch).
pub(crate) fn wall_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a live local.
    unsafe {
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
    }
    timespec_ns(&ts).unwrap_or(0)
}

/// A realtime `timespec` as ns since the Unix epoch; `None` before the epoch or malformed.
pub(crate) fn timespec_ns(ts: &libc::timespec) -> Option<u64> {
    let sec = u64::try_from(ts.tv_sec).ok()?;
    let nsec = u64::try_from(ts.tv_nsec)
        .ok()
        .filter(|&n| n < 1_000_000_000)?;
    sec.checked_mul(1_000_000_000)?.checked_add(nsec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_stamps_map_to_the_past() {
        let now = Instant::from_micros(1_000_000);
        let wall = 100_000_000_000;
        assert_eq!(
            Clock::from_wall(now, wall, wall - 250_000).as_micros(),
            999_750
        );
        // Sub-µs ages round towards now.
        assert_eq!(
            Clock::from_wall(now, wall, wall - 999).as_micros(),
            1_000_000
        );
        // A stamp from the future (clock stepped) is taken as now.
        assert_eq!(Clock::from_wall(now, wall, wall + 1_000_000_000), now);
        // Older than the clock's origin: the origin.
        assert_eq!(Clock::from_wall(now, wall, 0), Instant::ZERO);
    }

    #[test]
    fn timespecs_convert_or_are_refused() {
        let ts = |s, n| libc::timespec {
            tv_sec: s,
            tv_nsec: n,
        };
        assert_eq!(timespec_ns(&ts(3, 5)), Some(3_000_000_005));
        assert_eq!(timespec_ns(&ts(-1, 0)), None);
        assert_eq!(timespec_ns(&ts(0, 1_000_000_000)), None);
        assert_eq!(timespec_ns(&ts(libc::time_t::MAX, 0)), None);
        assert!(wall_now_ns() > 1_600_000_000_000_000_000);
    }
}
