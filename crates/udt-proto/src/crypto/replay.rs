//! Replay window of control packet counters (the sliding bitmap of IPsec and DTLS).

/// Counters this far behind the highest one seen are refused outright.
pub(crate) const WINDOW: u64 = 128;

/// Which of the last [`WINDOW`] counters have been accepted.
#[derive(Debug, Default)]
pub(crate) struct ReplayWindow {
    /// Highest counter accepted.
    highest: Option<u64>,
    /// Bit `i` set: counter `highest − i` was accepted.
    seen: u128,
}

impl ReplayWindow {
    /// True if `counter` has not been accepted and is recent enough to be judged.
    pub(crate) fn is_fresh(&self, counter: u64) -> bool {
        match self.highest {
            None => true,
            Some(h) if counter > h => true,
            Some(h) => {
                let back = h - counter;
                back < WINDOW && self.seen & (1u128 << back) == 0
            }
        }
    }

    /// Records `counter` as accepted (after its packet authenticated).
    pub(crate) fn accept(&mut self, counter: u64) {
        match self.highest {
            None => {
                self.highest = Some(counter);
                self.seen = 1;
            }
            Some(h) if counter > h => {
                let shift = counter - h;
                self.seen = if shift >= WINDOW {
                    0
                } else {
                    self.seen << shift
                };
                self.seen |= 1;
                self.highest = Some(counter);
            }
            Some(h) => {
                let back = h - counter;
                if back < WINDOW {
                    self.seen |= 1u128 << back;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_repeats_and_stale_counters() {
        let mut w = ReplayWindow::default();
        assert!(w.is_fresh(5));
        w.accept(5);
        assert!(!w.is_fresh(5));
        assert!(w.is_fresh(3)); // late but not seen
        w.accept(3);
        assert!(!w.is_fresh(3));
        w.accept(5 + WINDOW);
        assert!(!w.is_fresh(5)); // now too old
        assert!(w.is_fresh(6) && w.is_fresh(4 + WINDOW) && !w.is_fresh(5 + WINDOW));
        w.accept(1000);
        assert!(!w.is_fresh(1000) && w.is_fresh(999) && !w.is_fresh(1000 - WINDOW));
    }
}
