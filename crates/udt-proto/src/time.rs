//! Protocol time.
//!
//! The engine never reads a clock: every entry point is handed the current [`Instant`], and the
//! engine hands back the next instant at which it wants to be woken. All protocol times in UDT are
//! microseconds, so an [`Instant`] is a plain count of microseconds since an origin the driver
//! chooses (the simulator starts at zero; the runtime maps `std::time::Instant` onto it).

use core::fmt;
use core::ops::{Add, AddAssign};
use core::time::Duration;

/// A point in time, in microseconds since an origin chosen by the driver.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The origin (time zero).
    pub const ZERO: Instant = Instant(0);

    /// An instant `micros` microseconds after the origin.
    pub const fn from_micros(micros: u64) -> Self {
        Instant(micros)
    }

    /// Microseconds since the origin.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Microseconds elapsed from `earlier` to `self`, or 0 if `earlier` is later.
    pub const fn micros_since(self, earlier: Instant) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// This instant plus `micros` microseconds (saturating at the far future).
    pub const fn plus_micros(self, micros: u64) -> Self {
        Instant(self.0.saturating_add(micros))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        self.plus_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}s", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

/// The UDT synchronisation interval SYN: 10 000 µs. Rate control, full ACKs and several other
/// periodic actions run on this period.
pub const SYN_US: u64 = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_micros(5);
        assert_eq!(t.micros_since(Instant::from_micros(7)), 0);
        assert_eq!(Instant::from_micros(7).micros_since(t), 2);
        assert_eq!(
            Instant::from_micros(u64::MAX).plus_micros(1).as_micros(),
            u64::MAX
        );
        assert_eq!((t + Duration::from_millis(1)).as_micros(), 1005);
    }
}
