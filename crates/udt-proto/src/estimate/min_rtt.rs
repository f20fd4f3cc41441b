//! The smallest round-trip time seen recently: the path's propagation delay, against which
//! the current RTT shows how much is spent queueing.
//!
//! A minimum over all time would never notice a longer route; a minimum over a sliding window
//! does. The window is kept as a few sub-windows, each with its own minimum, so that memory is
//! constant and the minimum of an expiring sub-window is not lost before its successor has
//! seen enough samples.

use crate::time::Instant;

/// Length of the window, µs (as BBR's: ten seconds).
pub const WINDOW_US: u64 = 10_000_000;
/// Sub-windows per window.
const SLOTS: usize = 4;

/// Windowed minimum of RTT samples (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct MinRtt {
    /// Per sub-window: (its start, the minimum seen in it), newest last.
    slots: [Option<(Instant, u32)>; SLOTS],
}

impl MinRtt {
    /// A filter with no samples.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an RTT sample, µs.
    pub fn update(&mut self, now: Instant, rtt_us: u32) {
        let slot_us = WINDOW_US / SLOTS as u64;
        match &mut self.slots[SLOTS - 1] {
            Some((start, min)) if now.micros_since(*start) < slot_us => {
                *min = (*min).min(rtt_us);
            }
            _ => {
                self.slots.rotate_left(1);
                self.slots[SLOTS - 1] = Some((now, rtt_us));
            }
        }
        // Sub-windows that began more than a window ago are gone.
        for s in &mut self.slots {
            if s.is_some_and(|(start, _)| now.micros_since(start) >= WINDOW_US) {
                *s = None;
            }
        }
    }

    /// The minimum over the window, µs; `None` before any sample.
    pub fn get(&self) -> Option<u32> {
        self.slots.iter().flatten().map(|&(_, m)| m).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_minimum_for_a_window_then_forgets_it() {
        let mut m = MinRtt::new();
        assert_eq!(m.get(), None);
        m.update(Instant::from_micros(0), 100_000);
        m.update(Instant::from_micros(1_000), 80_000);
        for k in 1..40u64 {
            m.update(Instant::from_micros(k * 250_000), 120_000);
        }
        assert_eq!(m.get(), Some(80_000), "still within ten seconds");
        for k in 40..100u64 {
            m.update(Instant::from_micros(k * 250_000), 120_000);
        }
        assert_eq!(m.get(), Some(120_000), "the old minimum expired");
    }
}
