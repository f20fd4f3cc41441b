//! Whether a flow's share of a shared bottleneck is shrinking: the rate form of CUBIC's fast
//! convergence (RFC 8312 §4.6).
//!
//! Flows that share a queue converge to equal rates only through their decreases when their
//! increases are equal (UDT's increase caps the spare capacity at a ninth of the link while a
//! flow is below the rate of its last decrease, and every flow that shares the link then
//! grows alike). Each decrease of 1/9 takes 1/9 off the gap between two flows, and congestion
//! episodes come seconds apart on long paths: at 100 Mbit/s and 300 ms, a flow that joined a
//! flow alone on the link got 20 % of it, and 40 s later still only 40 %.
//!
//! [`ShareTrend`] measures the mean delivery rate over each congestion episode (from one
//! episode's first decrease to the next one's, from the count of packets acknowledged) and
//! says when an episode delivered less than the one before it: the flow has lost share to
//! flows that are growing. The caller then gives up a little more at this decrease, so the
//! gap closes in fewer episodes. A mean over a whole episode, not a delivery sample: samples
//! behind an overflow's holes read low for a round trip, and a flow alone delivers the link
//! over every episode.
//!
//! Except on a noisy link: there a retransmission lost too holds the cumulative ACK for round
//! trips, and the episode means of a flow alone moved by more than the margin. Episodes are
//! compared only when no random loss was taken in stride during either of them (the caller
//! counts those); without that, a flow alone at 10–100 Mbit/s with 0.1–1 % random loss gave
//! up 2–6 % of its utilization.

use crate::time::Instant;

/// Compares each congestion episode's mean delivery rate with the previous one's (see the
/// module documentation).
#[derive(Clone, Debug, Default)]
pub struct ShareTrend {
    /// When the flow last decreased.
    last_decrease: Option<Instant>,
    /// Start of the current episode, and the packets acknowledged and the random losses
    /// counted in total then.
    episode_start: Option<(Instant, u64, u64)>,
    /// Mean delivery rate over the last complete episode, packets/s, and whether it was free
    /// of random losses.
    last_episode: Option<(f64, bool)>,
}

impl ShareTrend {
    /// No episodes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Called at every congestion decrease, with the packets acknowledged and the random
    /// losses taken in stride, each in total so far. A decrease more than `gap_us` (µs) after
    /// the previous one starts a new episode (closer ones answer the same overflow). Returns
    /// true when this decrease starts one and the episode that just ended delivered less than
    /// `shrink_below` times the packets per second of the one before it, neither of them
    /// with a random loss.
    pub fn on_decrease(
        &mut self,
        now: Instant,
        gap_us: u64,
        acked_pkts: u64,
        random_losses: u64,
        shrink_below: f64,
    ) -> bool {
        let new_episode = self
            .last_decrease
            .is_none_or(|t| now.micros_since(t) > gap_us);
        self.last_decrease = Some(now);
        if !new_episode {
            return false;
        }
        let mut shrinking = false;
        if let Some((t0, a0, r0)) = self.episode_start {
            let us = now.micros_since(t0);
            if us > 0 {
                let pps = acked_pkts.saturating_sub(a0) as f64 * 1e6 / us as f64;
                let clean = random_losses == r0;
                shrinking = clean
                    && self
                        .last_episode
                        .is_some_and(|(prev, prev_clean)| prev_clean && pps < shrink_below * prev);
                self.last_episode = Some((pps, clean));
            }
        }
        self.episode_start = Some((now, acked_pkts, random_losses));
        shrinking
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAP_US: u64 = 1_000_000;

    /// Feeds decreases at the given times (ms) with a flow delivering the given packets/s
    /// since the previous one, and no random losses; returns what each decrease said.
    fn episodes(steps: &[(u64, f64)]) -> Vec<bool> {
        let steps: Vec<_> = steps.iter().map(|&(ms, pps)| (ms, pps, 0)).collect();
        episodes_with_random_losses(&steps)
    }

    /// [`episodes`] with the given random losses taken in stride since the previous decrease.
    fn episodes_with_random_losses(steps: &[(u64, f64, u64)]) -> Vec<bool> {
        let mut s = ShareTrend::new();
        let (mut acked, mut random, mut last_ms) = (0u64, 0u64, 0u64);
        steps
            .iter()
            .map(|&(ms, pps, r)| {
                acked += (pps * (ms - last_ms) as f64 / 1e3) as u64;
                random += r;
                last_ms = ms;
                let now = Instant::ZERO.plus_micros(ms * 1000);
                s.on_decrease(now, GAP_US, acked, random, 0.97)
            })
            .collect()
    }

    #[test]
    fn episodes_with_random_losses_are_not_compared() {
        let said = episodes_with_random_losses(&[
            (5_000, 8_000.0, 0),
            (10_000, 8_000.0, 0),
            (15_000, 7_000.0, 1), // a lost retransmission held the ACK
            (20_000, 6_000.0, 0), // compared with a noisy episode
            (25_000, 5_000.0, 0), // two clean episodes: shrinking
        ]);
        assert_eq!(said, [false, false, false, false, true]);
    }

    #[test]
    fn a_flow_delivering_alike_over_each_episode_is_not_shrinking() {
        let steps: Vec<(u64, f64)> = (1..10).map(|i| (5_000 * i, 8_000.0)).collect();
        assert!(episodes(&steps).iter().all(|&s| !s));
    }

    #[test]
    fn an_episode_that_delivered_less_than_the_one_before_is_shrinking() {
        let said = episodes(&[
            (5_000, 8_000.0),
            (10_000, 8_000.0), // first complete episode: nothing to compare with
            (15_000, 8_000.0),
            (20_000, 7_000.0), // lost share
            (25_000, 6_900.0), // within the margin
            (30_000, 7_500.0), // growing
        ]);
        assert_eq!(said, [false, false, false, true, false, false]);
    }

    #[test]
    fn decreases_within_the_gap_belong_to_the_episode_they_answer() {
        let said = episodes(&[
            (5_000, 8_000.0),
            (10_000, 8_000.0),
            // Second and third decreases of one overflow, each within the gap of the last:
            // behind the overflow's holes the ACKs creep.
            (10_600, 1_000.0),
            (11_500, 2_000.0),
            // The episode from 10 s to 15 s delivered as much as the one before: the holes
            // filled, and what waited behind them was acknowledged at once.
            (15_000, 11_000.0),
        ]);
        assert_eq!(said, [false, false, false, false, false]);
    }
}
