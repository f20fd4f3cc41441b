//! The runtime's clock: the engine's [`Instant`] (µs) counted from when the multiplexer
//! started, and the conversion of kernel receive timestamps onto it.

use std::time::SystemTime;

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

    /// Engine time of a packet the kernel stamped with wall-clock time `stamp`, given that
    /// the wall clock reads `wall_now` at engine time `now`. The kernel stamps receptions with
    /// the realtime clock; the difference from now is how long ago the packet arrived, which
    /// is all we need (a clock step between the two readings is too rare to matter, and the
    /// result is clamped to `now`).
    pub(crate) fn from_wall(now: Instant, wall_now: SystemTime, stamp: SystemTime) -> Instant {
        match wall_now.duration_since(stamp) {
            Ok(ago) => Instant::from_micros(now.as_micros().saturating_sub(ago.as_micros() as u64)),
            Err(_) => now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn wall_stamps_map_to_the_past() {
        let now = Instant::from_micros(1_000_000);
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let stamp = wall - Duration::from_micros(250);
        assert_eq!(Clock::from_wall(now, wall, stamp).as_micros(), 999_750);
        // A stamp from the future (clock stepped) is taken as now.
        assert_eq!(
            Clock::from_wall(now, wall, wall + Duration::from_secs(1)),
            now
        );
    }
}
