//! The receiver's packet arrival rate and link capacity estimates (spec §8.7), reported to the
//! sender in 6-word ACKs and used there by congestion control.
//!
//! * Arrival rate: median-filtered mean of the last 16 inter-arrival intervals of data packets;
//!   when their median is below the clock's 1 µs resolution, of the last 16 spans of
//!   [`SPAN_PKTS`] intervals instead (see [`ReceiveRateEstimator::arrival_rate_pps`]).
//! * Link capacity: median-filtered mean of the last 64 packet-pair intervals. The sender sends
//!   packets `16n` and `16n + 1` back to back (spec §8.9); their spacing at the receiver is the
//!   bottleneck's serialisation time of one packet. None while clumps squeeze that spacing
//!   (see [`ReceiveRateEstimator::is_clumped`]).

use crate::seq::SeqNo;
use crate::time::Instant;

/// Inter-arrival intervals (and spans) remembered for the arrival rate.
pub const ARRIVAL_WINDOW: usize = 16;
/// Intervals per span of the fallback arrival rate.
pub const SPAN_PKTS: u32 = 8;
/// Arrivals count as clumped when the median single interval is below the median span's
/// per-interval share by more than this factor.
const CLUMP_FACTOR: u64 = 4;
/// Arrivals count as squeezed when the lower quartile of the non-zero single intervals outside
/// packet pairs is below the median span's per-interval share by more than this factor...
/// (see `ReceiveRateEstimator::squeezed_now`). Behind 125 µs coalescing at 100 Mbit/s the
/// factor is 40 (120 µs against 3 µs), at 200 Mbit/s 20. A flow that shares a queue gets
/// runs of its packets at the link's spacing, and the factor is then about the inverse of
/// its share: at 8, two flows of 1 and 400 ms on 1 Gbit/s set it off six times in 90 s (at
/// 16, never), and the four flows of `rtt_fairness.toml` at 100 Mbit/s, 400 ms went from a
/// throughput ratio of 0.878 to 0.811.
const SQUEEZED_FACTOR: u64 = 16;
/// ... and no span of [`SPAN_PKTS`] intervals arrived within this factor of the quartile's
/// spacing (a train).
const TRAIN_FACTOR: u64 = 2;
/// Of the last 128 checks (one per span, 1024 packets), this many must find the arrivals
/// squeezed before the capacity is withheld. Clumps squeeze most windows (behind 125 µs
/// coalescing at 100 and 200 Mbit/s, 93 % and 99.9 % of the checks; with host stalls too,
/// 8 or more of 128 in 89 % of the windows); a flow that shares a queue gets a squeezed
/// window now and then (four flows of 1–400 ms on 1 Gbit/s: 19 checks in 90 s, at most 5
/// of 128), and withholding its capacity then slowed the flows with the smallest shares
/// (`rtt_fairness.toml`, throughput ratio 0.809 → 0.722).
const SQUEEZED_MIN_CHECKS: u32 = 8;
/// Packets that must arrive unsqueezed before the capacity is reported again: those of the
/// [`PROBE_WINDOW`] pairs it is computed from, so that no squeezed pair is among them.
const CLUMP_HOLD_PKTS: u32 = 16 * PROBE_WINDOW as u32;
/// Packet-pair intervals remembered for the link capacity.
pub const PROBE_WINDOW: usize = 64;
/// Initial content of the arrival window, µs (one packet per second).
const ARRIVAL_INIT_US: u32 = 1_000_000;
/// Initial content of the probe window, µs (1000 packets per second).
const PROBE_INIT_US: u32 = 1_000;

/// A fixed-size ring of intervals, µs.
#[derive(Clone, Debug)]
struct Window<const N: usize> {
    values: [u32; N],
    next: usize,
}

impl<const N: usize> Window<N> {
    fn filled(v: u32) -> Self {
        Window {
            values: [v; N],
            next: 0,
        }
    }

    fn push(&mut self, v: u32) {
        self.values[self.next] = v;
        self.next = (self.next + 1) % N;
    }

    /// The median and the entries within a factor of 8 of it (`m/8 < x < 8m`), which filters
    /// out intervals stretched by pauses or squeezed by batching.
    fn filtered(&self) -> (u64, u64, u64) {
        let mut sorted = self.values;
        let mid = N / 2;
        let (_, m, _) = sorted.select_nth_unstable(mid);
        let m = u64::from(*m);
        let (lo, hi) = (m >> 3, m << 3);
        let (mut sum, mut count) = (0u64, 0u64);
        for &x in &self.values {
            let x = u64::from(x);
            if x > lo && x < hi {
                sum += x;
                count += 1;
            }
        }
        (m, sum, count)
    }
}

/// How the receiver turns packet-pair intervals into the link capacity it reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CapacityEstimate {
    /// 4.11's: the mean of the intervals within a factor of 8 of their median. Where other
    /// flows' packets split the pairs it reads low, and the lower the smaller the flow's
    /// share.
    #[default]
    Udt4Mean,
    /// The mean of the lowest cluster of intervals, the pairs nothing split (see
    /// [`ReceiveRateEstimator::link_capacity_pps`]): the link, whatever the flow's share.
    UnsplitPairs,
}

/// Arrival-rate and packet-pair capacity estimator.
#[derive(Clone, Debug)]
pub struct ReceiveRateEstimator {
    /// What [`ReceiveRateEstimator::link_capacity_pps`] reports.
    capacity_estimate: CapacityEstimate,
    arrivals: Window<ARRIVAL_WINDOW>,
    /// The same intervals without those that close a packet pair, µs.
    gaps: Window<ARRIVAL_WINDOW>,
    /// Durations of successive spans of [`SPAN_PKTS`] intervals, µs.
    spans: Window<ARRIVAL_WINDOW>,
    /// Arrival time of the packet that began the current span, and intervals since.
    span: Option<(Instant, u32)>,
    /// Packets that arrived since a check last found them squeezed, once squeezing persisted
    /// (saturates at [`CLUMP_HOLD_PKTS`]).
    since_clumps_pkts: u32,
    /// The last 128 squeeze checks, one bit each, the latest lowest (see
    /// [`SQUEEZED_MIN_CHECKS`]).
    squeezed_checks: u128,
    /// Spans recorded (saturates at [`ARRIVAL_WINDOW`]): until the whole window is real, its
    /// initial values (8 s) would make any arrivals look squeezed.
    spans_seen: usize,
    /// Intervals recorded (saturates at [`ARRIVAL_WINDOW`]).
    intervals_seen: usize,
    probes: Window<PROBE_WINDOW>,
    last_arrival: Option<Instant>,
    /// Arrival time of the most recent packet if it was the first of a pair (`seq ≡ 0 mod 16`).
    pair_start: Option<(SeqNo, Instant)>,
}

impl Default for ReceiveRateEstimator {
    fn default() -> Self {
        ReceiveRateEstimator {
            capacity_estimate: CapacityEstimate::default(),
            arrivals: Window::filled(ARRIVAL_INIT_US),
            gaps: Window::filled(ARRIVAL_INIT_US),
            spans: Window::filled(ARRIVAL_INIT_US * SPAN_PKTS),
            span: None,
            since_clumps_pkts: CLUMP_HOLD_PKTS,
            squeezed_checks: 0,
            spans_seen: 0,
            intervals_seen: 0,
            probes: Window::filled(PROBE_INIT_US),
            last_arrival: None,
            pair_start: None,
        }
    }
}

impl ReceiveRateEstimator {
    /// A new estimator that reports `capacity_estimate`.
    pub fn new(capacity_estimate: CapacityEstimate) -> Self {
        ReceiveRateEstimator {
            capacity_estimate,
            ..Self::default()
        }
    }

    /// Records the arrival of a data packet (every arrival, including duplicates).
    ///
    /// A pair interval is only recorded when packet `16n + 1` directly follows packet `16n`
    /// in arrival order. 4.11 records the time since the last `16n` arrival whatever came in
    /// between, so a loss or reordering inside the pair yields a bogus sample; requiring
    /// adjacency costs nothing and keeps the capacity estimate honest.
    pub fn on_data_arrival(&mut self, seq: SeqNo, now: Instant) {
        let closes_pair = seq.get() & 0xF == 1
            && self
                .pair_start
                .is_some_and(|(first, _)| first.next() == seq);
        if let Some(prev) = self.last_arrival {
            let interval = clamp_interval(now.micros_since(prev));
            self.arrivals.push(interval);
            self.intervals_seen = (self.intervals_seen + 1).min(ARRIVAL_WINDOW);
            if !closes_pair {
                self.gaps.push(interval);
            }
        }
        self.last_arrival = Some(now);
        self.span = match self.span {
            None => Some((now, 0)),
            Some((start, n)) if n + 1 == SPAN_PKTS => {
                self.spans.push(clamp_interval(now.micros_since(start)));
                self.spans_seen = (self.spans_seen + 1).min(ARRIVAL_WINDOW);
                // Only the default's estimator withholds its capacity for squeezing (see
                // `is_clumped`); 4.11's never reads the check.
                let squeezed =
                    self.capacity_estimate == CapacityEstimate::UnsplitPairs && self.squeezed_now();
                self.squeezed_checks = self.squeezed_checks << 1 | u128::from(squeezed);
                let persistent = self.squeezed_checks.count_ones() >= SQUEEZED_MIN_CHECKS;
                self.since_clumps_pkts = if squeezed && persistent {
                    0
                } else {
                    (self.since_clumps_pkts + SPAN_PKTS).min(CLUMP_HOLD_PKTS)
                };
                Some((now, 0))
            }
            Some((start, n)) => Some((start, n + 1)),
        };
        let pair_start = self.pair_start.take();
        match seq.get() & 0xF {
            0 => self.pair_start = Some((seq, now)),
            1 => {
                if let Some((first, at)) = pair_start {
                    if first.next() == seq {
                        self.probes.push(clamp_interval(now.micros_since(at)));
                    }
                }
            }
            _ => {}
        }
    }

    /// Packet arrival rate, packets per second; 0 when fewer than 9 of the 16 intervals are
    /// close to the median (not enough steady traffic to say), or fewer than 9 of them (or
    /// of the spans, when those are used) have been measured.
    ///
    /// 4.11 reports its window's initial 1 s intervals as 1 packet/s until real ones
    /// outnumber them, and a 4.11 sender averages every non-zero report into the rate its
    /// slow start ends at; a 0 it ignores. Our receiver reported 1 packet/s for its first
    /// 72 packets (see `rate_from_spans`), and one loss among them on a 1 Gbit/s, 100 ms
    /// path (`udt relay`, 0.1 % loss) left a UDT4 4.11 sender pacing at 9 packets/s; it
    /// took seconds to climb back (59–60 Mbit/s over 20 s into our receiver, 133 into its
    /// own; 95–98 since).
    ///
    /// When packets arrive in clumps (a shaper or emulator released several at once), the
    /// intervals inside a clump are near zero and their median says nothing about the path.
    /// Behind a 1 Gbit/s `tbf` with a four-packet bucket most of them read 0 µs, and 4.11's
    /// rule reported either no rate (the sender kept what it had estimated early in slow
    /// start, and slow start ended at 122 Mbit/s) or several Gbit/s (slow start ran to the
    /// flow window). So the estimator also keeps spans of [`SPAN_PKTS`] intervals, which take
    /// in the gaps between clumps, and uses them when the median single interval is under a
    /// quarter of the median span's share ([`CLUMP_FACTOR`]), or while
    /// [`ReceiveRateEstimator::is_clumped`] says so for another reason (behind clumps of two
    /// the filter kept only the long intervals, and their mean read half the rate). Arrivals
    /// spaced by a bottleneck, packet-pair bursts included, keep 4.11's estimate.
    pub fn arrival_rate_pps(&self) -> u32 {
        let (_, sum, count) = self.arrivals.filtered();
        let (_, span_sum, span_count) = self.spans.filtered();
        let (per_sample, sum, count, seen) = if self.rate_from_spans() {
            (u64::from(SPAN_PKTS), span_sum, span_count, self.spans_seen)
        } else {
            (1, sum, count, self.intervals_seen)
        };
        if count <= (ARRIVAL_WINDOW / 2) as u64 || seen <= ARRIVAL_WINDOW / 2 {
            return 0;
        }
        let avg = (sum / count).max(1);
        (1_000_000 * per_sample)
            .div_ceil(avg)
            .min(u64::from(u32::MAX)) as u32
    }

    /// True when packets arrive in clumps now (see `clumped_now`), or, with
    /// [`CapacityEstimate::UnsplitPairs`], when clumps squeezed the packets' spacing among the
    /// last `CLUMP_HOLD_PKTS` (1024) arrivals (see `squeezed_now`, checked at the end of every
    /// span), in 8 or more of the last 128 checks (`SQUEEZED_MIN_CHECKS`): the pair
    /// intervals the capacity comes from may then include squeezed ones.
    /// The checks look at the last 16 intervals only, and behind clumps of two they came and
    /// went from one ACK to the next, so the pairs' 40 times the link was reported at the
    /// ACKs in between. 4.11's estimator ([`CapacityEstimate::Udt4Mean`]) reports what its
    /// pairs read, as 4.11 does.
    pub fn is_clumped(&self) -> bool {
        self.clumped_now()
            || (self.capacity_estimate == CapacityEstimate::UnsplitPairs
                && self.since_clumps_pkts < CLUMP_HOLD_PKTS)
    }

    /// True when the last intervals show clumps: single intervals say at least
    /// [`CLUMP_FACTOR`] times the rate that spans of [`SPAN_PKTS`] intervals do, or most
    /// intervals are zero (packets handed over together, as GRO does, with one timestamp).
    /// Against the spans' initial 8 s any arrivals look clumped until most spans are real
    /// (72 packets), which withholds the capacity until then.
    fn clumped_now(&self) -> bool {
        let (median, _, _) = self.arrivals.filtered();
        let (span_median, _, _) = self.spans.filtered();
        self.zero_intervals_now() || CLUMP_FACTOR * median * u64::from(SPAN_PKTS) < span_median
    }

    /// Whether the arrival rate comes from the spans: [`ReceiveRateEstimator::is_clumped`],
    /// except that the spans are compared with the single intervals only once most of them
    /// are real (against their initial 8 s any arrivals look clumped; why that mattered:
    /// [`ReceiveRateEstimator::arrival_rate_pps`]).
    fn rate_from_spans(&self) -> bool {
        if self.spans_seen > ARRIVAL_WINDOW / 2 {
            self.is_clumped()
        } else {
            self.zero_intervals_now()
        }
    }

    /// True when most of the last intervals are zero.
    fn zero_intervals_now(&self) -> bool {
        let zeros = self.arrivals.values.iter().filter(|&&v| v == 0).count();
        2 * zeros > ARRIVAL_WINDOW
    }

    /// True when clumps squeezed the last intervals, though too few for `clumped_now`: a
    /// quarter of the non-zero intervals outside packet pairs say more than
    /// [`SQUEEZED_FACTOR`] times the rate of the median span, and no span ran as fast as
    /// they (within [`TRAIN_FACTOR`]).
    ///
    /// Behind 125 µs interrupt coalescing at 100 Mbit/s (120 µs a packet) the clumps hold one
    /// or two packets. Every back-to-back pair lands in one clump and reads the clump's 3 µs
    /// spacing, 40 times the link, while only about half the single intervals are that
    /// short, so their median flips between the two. Those pairs made the capacity 4 Gbit/s,
    /// the sender trusted it, and in the simulator a 100 Mbit/s, 100 ms flow retransmitted
    /// 0.18 packets per packet sent (0.26 behind a host that also stalls).
    ///
    /// A path that spaces packets makes no interval shorter than the bottleneck's packet
    /// time. Many that short while the spans read much slower means bursts: a host's clumps,
    /// or a sender's bursts that the bottleneck passed at its own spacing. A bottleneck also
    /// makes trains at that spacing, when it drains a queue or passes a longer burst, and
    /// their spacing is the link's; clumps of a few packets make none. Other flows' packets
    /// stretch this flow's intervals and spans alike (four flows in random order: the
    /// quartile is about the packet time, the span's share four times it). Zero intervals
    /// are `clumped_now`'s; pairs that read zero are filtered out of the capacity anyway,
    /// and a stall's release, handed over at one instant, must not withhold it.
    fn squeezed_now(&self) -> bool {
        // Until the spans window holds only real spans its initial 8 s would make any
        // arrivals look squeezed.
        if self.spans_seen < ARRIVAL_WINDOW || self.zero_intervals_now() {
            return false;
        }
        let mut gaps = [0u32; ARRIVAL_WINDOW];
        let mut n = 0;
        for &g in self.gaps.values.iter().filter(|&&g| g > 0) {
            gaps[n] = g;
            n += 1;
        }
        if n < ARRIVAL_WINDOW / 2 {
            return false;
        }
        let (_, quartile, _) = gaps[..n].select_nth_unstable(n / 4);
        let spacing = u64::from(*quartile) * u64::from(SPAN_PKTS);
        let (span_median, _, _) = self.spans.filtered();
        let fastest_train = self
            .spans
            .values
            .iter()
            .filter(|&&s| s > 0)
            .min()
            .map_or(0, |&s| u64::from(s));
        SQUEEZED_FACTOR * spacing < span_median && fastest_train >= TRAIN_FACTOR * spacing
    }

    /// Estimated bottleneck capacity, packets per second; 0 (unknown) while packets arrive in
    /// clumps ([`ReceiveRateEstimator::is_clumped`]): a pair then lands in one clump (and
    /// reads as many times the link) or straddles two (and reads as the clumping interval),
    /// and neither says anything about the bottleneck. A sender ignores a capacity of 0
    /// (4.11 does too) and keeps what it had, or its own delivery-rate estimate.
    ///
    /// With [`CapacityEstimate::Udt4Mean`] the estimate is 4.11's: the mean of the pair
    /// intervals within a factor of 8 of their median, the median counted once more.
    ///
    /// With [`CapacityEstimate::UnsplitPairs`] it is the mean of those intervals (the median
    /// again among them) that lie in the lowest cluster: at most 1/4 + 1 µs above the lower
    /// quartile. Where flows share the bottleneck, other flows' packets fall between a pair's
    /// two packets (each adds one packet time), and the smaller the flow's share, the more
    /// often: 4.11's mean read 61 000 packets/s for one flow and 52 000 for another on the
    /// same 83 300 packets/s link, and the increase, which follows the capacity, kept the
    /// larger flow larger. A pair that nothing split reads the link whatever the share. The
    /// cluster's mean (not the quartile itself) keeps whole-µs clock steps from rounding a
    /// 1.2 µs interval at 10 Gbit/s down to 1 µs.
    pub fn link_capacity_pps(&self) -> u32 {
        if self.is_clumped() {
            return 0;
        }
        let (m, _, _) = self.probes.filtered();
        let (lo, hi) = (m >> 3, m << 3);
        // The median itself counts once more, as in 4.11, so the set is never empty.
        let mut kept = [m; PROBE_WINDOW + 1];
        let mut n = 1;
        for &x in &self.probes.values {
            let x = u64::from(x);
            if x > lo && x < hi {
                kept[n] = x;
                n += 1;
            }
        }
        let kept = &mut kept[..n];
        if self.capacity_estimate == CapacityEstimate::Udt4Mean {
            return rate_of_mean(kept.iter().sum(), n as u64);
        }
        kept.sort_unstable();
        let quartile = kept[n / 4];
        let bound = quartile + quartile / 4 + 1;
        let (sum, count) = kept
            .iter()
            .take_while(|&&x| x <= bound)
            .fold((0u64, 0u64), |(s, c), &x| (s + x, c + 1));
        rate_of_mean(sum, count)
    }
}

/// Packets per second of intervals that sum to `sum_us` µs over `count` of them (rounded up);
/// 0 when they sum to nothing.
fn rate_of_mean(sum_us: u64, count: u64) -> u32 {
    if sum_us == 0 {
        return 0;
    }
    (1_000_000.0 * count as f64 / sum_us as f64)
        .ceil()
        .min(f64::from(u32::MAX)) as u32
}

/// Intervals are kept in 32 bits; a pause of more than an hour saturates.
fn clamp_interval(us: u64) -> u32 {
    us.min(u64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(n: u32) -> SeqNo {
        SeqNo::new(n).unwrap()
    }

    /// Every arrival rate reported while `arrivals` arrive (µs, one packet each) is either 0
    /// (unknown) or within 10 % of `pps`, and the last one is known.
    fn assert_rates_known_or_zero(e: &mut ReceiveRateEstimator, arrivals: &[u64], pps: u32) {
        let mut rates = Vec::new();
        for (i, &t) in arrivals.iter().enumerate() {
            e.on_data_arrival(seq(i as u32 + 2), Instant::from_micros(t));
            rates.push(e.arrival_rate_pps());
        }
        let (lo, hi) = (pps - pps / 10, pps + pps / 10);
        assert!(
            rates.iter().all(|&r| r == 0 || (lo..=hi).contains(&r)),
            "{rates:?}"
        );
        assert_ne!(rates.last(), Some(&0), "{rates:?}");
    }

    #[test]
    fn no_arrival_rate_from_the_initial_intervals() {
        let e = ReceiveRateEstimator::default();
        // 4.11 reports its initial 1 s intervals as 1 packet/s, and a 4.11 sender averages
        // that into the rate its slow start ends at; a 0 it ignores.
        assert_eq!(e.arrival_rate_pps(), 0);
        assert_eq!(e.link_capacity_pps(), 1000);
        // Spaced arrivals, 100 µs apart: 10 000 packets/s.
        let spaced: Vec<u64> = (0..200).map(|i| i * 100).collect();
        // Clumps of 8 packets handed over at one instant (GRO), one every 800 µs: 10 000
        // packets/s from the spans. (Clumps whose intervals are not zero read as spaced
        // arrivals until 9 spans are real, as 4.11 reads them for good.)
        let clumps: Vec<u64> = (0..200).map(|i| i / 8 * 800).collect();
        for estimate in [CapacityEstimate::UnsplitPairs, CapacityEstimate::Udt4Mean] {
            assert_rates_known_or_zero(&mut ReceiveRateEstimator::new(estimate), &spaced, 10_000);
            let mut e = ReceiveRateEstimator::new(estimate);
            assert_rates_known_or_zero(&mut e, &clumps, 10_000);
            assert!(e.is_clumped(), "{estimate:?}");
        }
    }

    #[test]
    fn steady_arrivals_give_their_rate() {
        let mut e = ReceiveRateEstimator::default();
        let mut t = 0u64;
        for i in 0..2000u32 {
            // Pairs back to back 12 µs apart (1 Gb/s, 1500 bytes), others every 100 µs.
            t += if i % 16 == 1 { 12 } else { 100 };
            e.on_data_arrival(seq(i), Instant::from_micros(t));
        }
        let rate = e.arrival_rate_pps();
        assert!((9_000..=11_000).contains(&rate), "rate {rate}");
        assert_eq!(e.link_capacity_pps(), 83_334);
    }

    #[test]
    fn clumps_finer_than_the_clock_give_the_rate_of_the_spans() {
        // 1 Gb/s (83 333 pkt/s) released as clumps of 4 packets in the same microsecond every
        // 48 µs: single intervals are 0 µs (median 0), which 4.11's rule reports as no rate.
        let mut e = ReceiveRateEstimator::default();
        let mut t = 0u64;
        for i in 0..2000u32 {
            if i % 4 == 0 {
                t += 48;
            }
            e.on_data_arrival(seq(i), Instant::from_micros(t));
        }
        let rate = e.arrival_rate_pps();
        assert!((80_000..=87_000).contains(&rate), "rate {rate}");
    }

    #[test]
    fn a_pause_does_not_lower_the_rate() {
        // Steady 10 000 pkt/s with a 50 ms pause (nothing to send): the long interval is
        // filtered out.
        let mut e = ReceiveRateEstimator::default();
        let mut t = 0u64;
        for i in 0..200u32 {
            t += if i == 190 { 50_000 } else { 100 };
            e.on_data_arrival(seq(i), Instant::from_micros(t));
        }
        assert_eq!(e.arrival_rate_pps(), 10_000);
    }

    #[test]
    fn broken_pairs_are_ignored() {
        let mut e = ReceiveRateEstimator::default();
        // 16 then 18 then 17: 17 does not directly follow 16, so no pair sample.
        e.on_data_arrival(seq(16), Instant::from_micros(10));
        e.on_data_arrival(seq(18), Instant::from_micros(20));
        e.on_data_arrival(seq(17), Instant::from_micros(5000));
        assert_eq!(e.link_capacity_pps(), 1000);
    }

    /// Feeds 64 pairs whose intervals are `interval(n)` µs, 1 ms apart.
    fn pairs(e: &mut ReceiveRateEstimator, interval: impl Fn(u32) -> u64) {
        for n in 0..64u32 {
            let t = 1_000 + u64::from(n) * 1_000;
            e.on_data_arrival(seq(16 * n), Instant::from_micros(t));
            e.on_data_arrival(seq(16 * n + 1), Instant::from_micros(t + interval(n)));
        }
    }

    #[test]
    fn pairs_split_by_other_flows_packets_do_not_lower_the_capacity() {
        // A 1 Gbit/s link (12 µs per packet) shared with other flows: 40 % of the pairs have
        // one or two foreign packets between their two (24 or 36 µs). The mean of all of them
        // (4.11) reads 52 000 packets/s; the pairs nothing split read the link.
        let split = |n: u32| match n % 5 {
            0 => 24,
            1 => 36,
            _ => 12,
        };
        let mut e = ReceiveRateEstimator::new(CapacityEstimate::UnsplitPairs);
        pairs(&mut e, split);
        assert_eq!(e.link_capacity_pps(), 83_334);
        let mut e = ReceiveRateEstimator::new(CapacityEstimate::Udt4Mean);
        pairs(&mut e, split);
        assert_eq!(e.link_capacity_pps(), 52_084);
    }

    /// Feeds `count` packets from `first`, each arriving `interval(i)` µs after the one before;
    /// returns the time of the last.
    fn arrivals(
        e: &mut ReceiveRateEstimator,
        first: u32,
        count: u32,
        mut t: u64,
        interval: impl Fn(u32) -> u64,
    ) -> u64 {
        for i in first..first + count {
            t += interval(i);
            e.on_data_arrival(seq(i), Instant::from_micros(t));
        }
        t
    }

    /// 100 Mbit/s (120 µs a packet) behind 125 µs interrupt coalescing: packets `2k` and
    /// `2k + 1` land in one clump, handed over 3 µs apart, so every pair reads 3 µs.
    fn clumps_of_two(i: u32) -> u64 {
        if i % 2 == 1 {
            3
        } else {
            237
        }
    }

    /// 100 Mbit/s paced: packets 240 µs apart, pairs 120 µs (the link).
    fn paced(i: u32) -> u64 {
        if i % 16 == 1 {
            120
        } else {
            240
        }
    }

    #[test]
    fn pairs_squeezed_into_clumps_of_two_give_no_capacity() {
        let mut e = ReceiveRateEstimator::new(CapacityEstimate::UnsplitPairs);
        arrivals(&mut e, 0, 4000, 0, clumps_of_two);
        assert_eq!(e.link_capacity_pps(), 0, "pairs read 40 times the link");
        let rate = e.arrival_rate_pps();
        assert!((8_000..=8_700).contains(&rate), "rate {rate}");
        // 4.11's estimator reports what its pairs read, as 4.11 does.
        let mut e = ReceiveRateEstimator::new(CapacityEstimate::Udt4Mean);
        arrivals(&mut e, 0, 4000, 0, clumps_of_two);
        assert_eq!(e.link_capacity_pps(), 333_334);
    }

    #[test]
    fn the_capacity_comes_back_once_the_pairs_are_renewed() {
        let mut e = ReceiveRateEstimator::new(CapacityEstimate::UnsplitPairs);
        let t = arrivals(&mut e, 0, 4000, 0, clumps_of_two);
        // Then the clumps stop.
        let t = arrivals(&mut e, 4000, CLUMP_HOLD_PKTS - 16, t, paced);
        assert_eq!(
            e.link_capacity_pps(),
            0,
            "some squeezed pairs are still remembered"
        );
        arrivals(&mut e, 4000 + CLUMP_HOLD_PKTS - 16, 32, t, paced);
        assert_eq!(e.link_capacity_pps(), 8_334);
    }

    #[test]
    fn a_squeezed_moment_now_and_then_keeps_the_capacity() {
        // Paced arrivals (240 µs, pairs 120 µs: 100 Mbit/s) with, every 2000 packets, 24 in
        // clumps of two, as a flow sharing a queue sees runs now and then: a few squeeze
        // checks fire, too few to withhold the capacity, whose median filter drops the
        // odd squeezed pair.
        let mut e = ReceiveRateEstimator::new(CapacityEstimate::UnsplitPairs);
        let (mut t, mut n) = (0, 0);
        for _ in 0..5 {
            t = arrivals(&mut e, n, 2000, t, paced);
            t = arrivals(&mut e, n + 2000, 24, t, clumps_of_two);
            n += 2024;
        }
        arrivals(&mut e, n, 64, t, paced);
        assert_eq!(e.link_capacity_pps(), 8_334);
    }

    #[test]
    fn bursts_a_bottleneck_spaced_keep_the_capacity() {
        // A sender's bursts through a 1 Gbit/s bottleneck (12 µs a packet; a third of the
        // intervals, the pairs among them), the other packets 250 µs apart, and every 64
        // packets a train of 16 as a queue drains: the short intervals are the link's, and
        // the train shows it.
        let bursts = |i: u32| match (i % 64, i % 16) {
            (0..=15, _) | (_, 1..=3 | 10 | 11) => 12,
            _ => 250,
        };
        let mut e = ReceiveRateEstimator::new(CapacityEstimate::UnsplitPairs);
        arrivals(&mut e, 0, 4000, 0, bursts);
        assert_eq!(e.link_capacity_pps(), 83_334);
    }

    #[test]
    fn whole_microsecond_intervals_average_to_the_link() {
        // 10 Gbit/s: 1.2 µs per packet, read as 1 µs four times in five and 2 µs once.
        let mut e = ReceiveRateEstimator::new(CapacityEstimate::UnsplitPairs);
        pairs(&mut e, |n| if n % 5 == 0 { 2 } else { 1 });
        let c = e.link_capacity_pps();
        assert!((820_000..=850_000).contains(&c), "{c}");
    }
}
