//! The path model of one direction of the relay, free of I/O and of the real clock: given the
//! arrival time and size of each datagram, it decides whether the datagram is lost, dropped by
//! the queue, duplicated, and when each copy leaves the far end of the emulated path.
//!
//! The path is, in order: i.i.d. random loss (before the queue, so a lost packet takes no
//! bandwidth, as on a lossy access link), optional duplication (the copy competes for the
//! queue like any packet), a DropTail bottleneck of `rate` bit/s holding at most `queue_pkts`
//! packets, then a propagation delay with optional jitter and optional reordering.
//!
//! The bottleneck is a serialisation model: a packet that arrives at `t` finishes leaving the
//! bottleneck at `max(t, previous departure) + size / rate`. A packet counts against the queue
//! limit from its arrival until that departure (the packet being serialised included), so the
//! limit is in packets, as in a router's DropTail queue or `netem limit`.
//!
//! Times are nanoseconds on an arbitrary monotonic origin chosen by the caller; every test
//! drives this with a virtual clock.

use std::collections::VecDeque;

/// Nanoseconds per second.
const NS_PER_S: u128 = 1_000_000_000;

/// The impairments of one direction.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkParams {
    /// Bottleneck rate, bits per second; `None`: no bottleneck (and so no queue).
    pub rate_bps: Option<u64>,
    /// DropTail queue limit, packets (the packet being serialised included); at least 1.
    pub queue_pkts: usize,
    /// Bytes added to each datagram's payload when charging it to the rate (IP + UDP headers:
    /// 28 for IPv4), so that `rate` is a rate of IP packets like a real link's.
    pub overhead_bytes: usize,
    /// One-way propagation delay, nanoseconds.
    pub delay_ns: u64,
    /// Jitter, nanoseconds: each packet's delay is drawn uniformly from
    /// `[delay - jitter, delay + jitter]` (never below zero), without reordering packets.
    pub jitter_ns: u64,
    /// Probability that a datagram is lost (0 … 1).
    pub loss: f64,
    /// Probability that a datagram is held back by `reorder_delay_ns` so that later ones
    /// overtake it (0 … 1).
    pub reorder: f64,
    /// Extra delay of a reordered datagram, nanoseconds.
    pub reorder_delay_ns: u64,
    /// Probability that a datagram is sent twice (0 … 1).
    pub duplicate: f64,
    /// Clumped release, nanoseconds (0: off): packets leave the far end only at multiples of
    /// this interval, together, as a NIC that coalesces interrupts, GRO, a virtual NIC or a
    /// busy emulator hands them over. On the reverse path this is ACK compression.
    pub clump_ns: u64,
    /// With `clump_ns`: at most this many packets leave at one tick; the rest wait for the
    /// next (0: no limit; a NIC's `rx-frames`).
    pub clump_max: usize,
}

impl Default for LinkParams {
    /// A perfect path: no bottleneck, no delay, no impairment.
    fn default() -> Self {
        LinkParams {
            rate_bps: None,
            queue_pkts: 1000,
            overhead_bytes: 28,
            delay_ns: 0,
            jitter_ns: 0,
            loss: 0.0,
            reorder: 0.0,
            reorder_delay_ns: 1_000_000,
            duplicate: 0.0,
            clump_ns: 0,
            clump_max: 0,
        }
    }
}

/// What happened to the datagrams offered to a [`Link`], as counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelCounters {
    /// Datagrams offered.
    pub received: u64,
    /// Payload bytes offered.
    pub received_bytes: u64,
    /// Datagrams dropped by random loss.
    pub dropped_loss: u64,
    /// Datagrams (copies included) dropped because the queue was full.
    pub dropped_queue: u64,
    /// Extra copies made by duplication.
    pub duplicated: u64,
    /// Datagrams held back to be overtaken.
    pub reordered: u64,
    /// Copies accepted into the path (each will be released once).
    pub admitted: u64,
}

/// The release times (nanoseconds) of the copies of one datagram that survived: none, one,
/// or two when it was duplicated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Releases {
    n: usize,
    at: [u64; 2],
}

impl Releases {
    fn push(&mut self, t: u64) {
        // At most two copies exist by construction.
        if self.n < self.at.len() {
            self.at[self.n] = t;
            self.n += 1;
        }
    }

    /// The release times, in the order the copies were made.
    pub fn as_slice(&self) -> &[u64] {
        &self.at[..self.n]
    }
}

/// A small, fast, seedable random generator (SplitMix64): the same seed gives the same
/// sequence of decisions on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p` (no draw is made when `p` is 0, so a path without an
    /// impairment leaves the other impairments' sequences unchanged).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform in `[0, n]`.
    pub fn upto(&mut self, n: u64) -> u64 {
        if n == u64::MAX {
            return self.next_u64();
        }
        // The modulo bias is below 2^-40 for the spans used here (nanoseconds of jitter).
        self.next_u64() % (n + 1)
    }
}

/// One direction of the emulated path.
#[derive(Debug)]
pub struct Link {
    params: LinkParams,
    rng: Rng,
    /// Departure times of the packets in the bottleneck, oldest first.
    queue: VecDeque<u64>,
    /// When the bottleneck finishes sending the last accepted packet.
    last_departure: u64,
    /// Release time of the last in-order packet: jitter never lets a packet overtake it.
    last_release: u64,
    /// The current clump: its release time and how many packets it holds.
    clump: (u64, usize),
    counters: ModelCounters,
}

impl Link {
    /// A link with the given impairments and random seed.
    pub fn new(params: LinkParams, seed: u64) -> Self {
        Link {
            params,
            rng: Rng::new(seed),
            queue: VecDeque::new(),
            last_departure: 0,
            last_release: 0,
            clump: (0, 0),
            counters: ModelCounters::default(),
        }
    }

    /// The impairments.
    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// The counts so far.
    pub fn counters(&self) -> ModelCounters {
        self.counters
    }

    /// Packets in the bottleneck queue at `now` (ns), the one being serialised included.
    #[cfg(test)]
    pub fn queue_len(&mut self, now: u64) -> usize {
        self.drain(now);
        self.queue.len()
    }

    /// Time to serialise a datagram of `payload` bytes at `rate_bps`, nanoseconds (rounded
    /// up, so that the achieved rate never exceeds the set one).
    pub fn serialisation_ns(&self, payload: usize, rate_bps: u64) -> u64 {
        let bits = (payload + self.params.overhead_bytes) as u128 * 8;
        let rate = u128::from(rate_bps.max(1));
        u64::try_from((bits * NS_PER_S).div_ceil(rate)).unwrap_or(u64::MAX)
    }

    fn drain(&mut self, now: u64) {
        while self.queue.front().is_some_and(|&d| d <= now) {
            self.queue.pop_front();
        }
    }

    /// Offers a datagram of `len` payload bytes that arrived at `now` (ns; callers pass
    /// non-decreasing times). Returns the release times of the copies that survive.
    pub fn offer(&mut self, now: u64, len: usize) -> Releases {
        let mut out = Releases::default();
        self.counters.received += 1;
        self.counters.received_bytes += len as u64;
        if self.rng.chance(self.params.loss) {
            self.counters.dropped_loss += 1;
            return out;
        }
        let copies = if self.rng.chance(self.params.duplicate) {
            self.counters.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let Some(departure) = self.enqueue(now, len) else {
                self.counters.dropped_queue += 1;
                continue;
            };
            self.counters.admitted += 1;
            out.push(self.release_time(departure));
        }
        out
    }

    /// Admits a packet to the bottleneck; returns when it leaves it, or `None` if the queue
    /// is full.
    fn enqueue(&mut self, now: u64, len: usize) -> Option<u64> {
        let Some(rate) = self.params.rate_bps else {
            return Some(now);
        };
        self.drain(now);
        if self.queue.len() >= self.params.queue_pkts.max(1) {
            return None;
        }
        let start = now.max(self.last_departure);
        let departure = start.saturating_add(self.serialisation_ns(len, rate));
        self.last_departure = departure;
        self.queue.push_back(departure);
        Some(departure)
    }

    /// When a packet that left the bottleneck at `departure` reaches the far end.
    fn release_time(&mut self, departure: u64) -> u64 {
        let p = &self.params;
        let mut delay = p.delay_ns;
        if p.jitter_ns > 0 {
            let offset = self.rng.upto(p.jitter_ns.saturating_mul(2));
            delay = delay.saturating_add(offset).saturating_sub(p.jitter_ns);
        }
        let natural = departure.saturating_add(delay);
        if self.rng.chance(self.params.reorder) {
            // Held back, and not a barrier for the packets behind it: they overtake it.
            self.counters.reordered += 1;
            return natural
                .max(self.last_release)
                .saturating_add(self.params.reorder_delay_ns);
        }
        // Jitter delays, but never reorders: a packet leaves no earlier than the one ahead.
        let t = self.clumped(natural.max(self.last_release));
        self.last_release = t;
        t
    }

    /// The release time of an in-order packet due at `t` under clumped release: the next
    /// tick at or after `t` that still has room.
    fn clumped(&mut self, t: u64) -> u64 {
        let tick = self.params.clump_ns;
        if tick == 0 {
            return t;
        }
        let mut at = t.div_ceil(tick).saturating_mul(tick);
        if at == self.clump.0 {
            let max = self.params.clump_max;
            if max > 0 && self.clump.1 >= max {
                at = at.saturating_add(tick);
                self.clump = (at, 1);
            } else {
                self.clump.1 += 1;
            }
        } else if at < self.clump.0 {
            // Behind a full clump that spilled forward: join the latest one.
            at = self.clump.0;
            self.clump.1 += 1;
        } else {
            self.clump = (at, 1);
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn link(p: LinkParams) -> Link {
        Link::new(p, 42)
    }

    #[test]
    fn a_perfect_path_releases_at_arrival() {
        let mut l = link(LinkParams::default());
        assert_eq!(l.offer(5, 1000).as_slice(), &[5]);
        assert_eq!(l.offer(7, 1000).as_slice(), &[7]);
        assert_eq!(l.counters().admitted, 2);
    }

    #[test]
    fn delay_is_added_exactly() {
        let mut l = link(LinkParams {
            delay_ns: 50 * MS,
            ..LinkParams::default()
        });
        assert_eq!(l.offer(1_000, 1472).as_slice(), &[1_000 + 50 * MS]);
        assert_eq!(l.offer(3 * MS, 10).as_slice(), &[53 * MS]);
    }

    #[test]
    fn serialisation_spaces_a_burst_at_the_rate() {
        // 1 Gbit/s, 1472-byte payloads + 28 bytes of headers = 12 µs per packet.
        let mut l = link(LinkParams {
            rate_bps: Some(1_000_000_000),
            queue_pkts: 100,
            delay_ns: 10 * MS,
            ..LinkParams::default()
        });
        let times: Vec<u64> = (0..5).map(|_| l.offer(0, 1472).as_slice()[0]).collect();
        let want: Vec<u64> = (1..=5).map(|k| 10 * MS + k * 12 * US).collect();
        assert_eq!(times, want);
        assert_eq!(l.queue_len(0), 5);
        // The third packet leaves at 36 µs: at that instant two remain.
        assert_eq!(l.queue_len(36 * US), 2);
        assert_eq!(l.queue_len(60 * US), 0);
    }

    #[test]
    fn an_idle_bottleneck_starts_from_the_arrival_time() {
        let mut l = link(LinkParams {
            rate_bps: Some(8_000_000), // 1 byte per µs
            overhead_bytes: 0,
            ..LinkParams::default()
        });
        assert_eq!(l.offer(0, 100).as_slice(), &[100 * US]);
        // Arrives long after the first left: no queueing.
        assert_eq!(l.offer(MS, 100).as_slice(), &[MS + 100 * US]);
    }

    #[test]
    fn the_achieved_rate_is_the_set_rate() {
        // Offer far more than 500 Mbit/s for one simulated second; what leaves the
        // bottleneck within that second is 500 Mbit, within one packet.
        let rate = 500_000_000u64;
        let mut l = link(LinkParams {
            rate_bps: Some(rate),
            queue_pkts: 1000,
            ..LinkParams::default()
        });
        let mut released_bits = 0u64;
        let mut t = 0;
        while t < 1_000_000_000 {
            for &r in l.offer(t, 1472).as_slice() {
                if r <= 1_000_000_000 {
                    released_bits += 1500 * 8;
                }
            }
            t += 10 * US; // 1.2 Gbit/s offered
        }
        assert!(released_bits.abs_diff(rate) <= 1500 * 8, "{released_bits}");
        assert!(l.counters().dropped_queue > 0);
    }

    #[test]
    fn droptail_drops_what_exceeds_the_queue() {
        let mut l = link(LinkParams {
            rate_bps: Some(1_000_000),
            queue_pkts: 10,
            ..LinkParams::default()
        });
        let admitted = (0..100).filter(|_| !l.offer(0, 1000).as_slice().is_empty());
        assert_eq!(admitted.count(), 10);
        let c = l.counters();
        assert_eq!((c.received, c.dropped_queue, c.admitted), (100, 90, 10));
        // Once the first packet has left (8.224 ms at 1 Mbit/s), one more fits.
        let first_out = l.serialisation_ns(1000, 1_000_000);
        assert!(l.offer(first_out - 1, 1000).as_slice().is_empty());
        assert_eq!(l.offer(first_out, 1000).as_slice().len(), 1);
    }

    #[test]
    fn total_loss_drops_everything_and_no_loss_nothing() {
        let mut l = link(LinkParams {
            loss: 1.0,
            ..LinkParams::default()
        });
        for i in 0..1000 {
            assert!(l.offer(i, 100).as_slice().is_empty());
        }
        assert_eq!(l.counters().dropped_loss, 1000);
        let mut l = link(LinkParams::default());
        for i in 0..1000 {
            assert_eq!(l.offer(i, 100).as_slice().len(), 1);
        }
        assert_eq!(l.counters().dropped_loss, 0);
    }

    #[test]
    fn loss_rate_matches_the_probability_and_the_seed_fixes_it() {
        let run = |seed| {
            let mut l = Link::new(
                LinkParams {
                    loss: 0.01,
                    ..LinkParams::default()
                },
                seed,
            );
            for i in 0..200_000 {
                l.offer(i, 100);
            }
            l.counters().dropped_loss
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        // 2000 expected; the standard deviation is about 44.
        assert!((1800..=2200).contains(&a), "{a}");
    }

    #[test]
    fn duplicates_are_counted_and_share_the_bottleneck() {
        let mut l = link(LinkParams {
            duplicate: 1.0,
            rate_bps: Some(8_000_000),
            overhead_bytes: 0,
            queue_pkts: 3,
            ..LinkParams::default()
        });
        assert_eq!(l.offer(0, 100).as_slice(), &[100 * US, 200 * US]);
        // Only one more fits in a 3-packet queue: the copy is dropped.
        assert_eq!(l.offer(0, 100).as_slice(), &[300 * US]);
        let c = l.counters();
        assert_eq!((c.duplicated, c.dropped_queue, c.admitted), (2, 1, 3));
    }

    #[test]
    fn reordered_packets_are_overtaken() {
        let mut l = link(LinkParams {
            reorder: 0.1,
            reorder_delay_ns: MS,
            delay_ns: 5 * MS,
            ..LinkParams::default()
        });
        let mut releases = Vec::new();
        for i in 0..10_000u64 {
            releases.push(l.offer(i * 10 * US, 100).as_slice()[0]);
        }
        let held = l.counters().reordered;
        assert!((800..=1200).contains(&held), "{held}");
        let overtaken = releases
            .iter()
            .enumerate()
            .filter(|&(i, r)| releases[i + 1..].iter().any(|later| later < r))
            .count() as u64;
        // Every held packet is overtaken (the next one arrives 10 µs later and the hold is
        // 1 ms), except perhaps the very last packet; no other packet is.
        assert!(
            overtaken <= held && overtaken + 1 >= held,
            "{overtaken} {held}"
        );
    }

    #[test]
    fn jitter_stays_in_bounds_and_keeps_order() {
        let mut l = link(LinkParams {
            delay_ns: 10 * MS,
            jitter_ns: MS,
            ..LinkParams::default()
        });
        let mut last = 0;
        let mut spread = (u64::MAX, 0u64);
        for i in 0..10_000u64 {
            let now = i * MS; // wide spacing: order preservation never binds
            let r = l.offer(now, 100).as_slice()[0];
            assert!(r >= last, "reordered at {i}");
            last = r;
            let d = r - now;
            assert!((9 * MS..=11 * MS).contains(&d), "{d}");
            spread = (spread.0.min(d), spread.1.max(d));
        }
        // The draws cover the range.
        assert!(spread.0 < 9 * MS + 100 * US && spread.1 > 11 * MS - 100 * US);
    }

    #[test]
    fn an_unused_impairment_draws_no_randomness() {
        // With only loss set, the loss decisions are exactly the generator's draws, one per
        // datagram: the zero-probability impairments consume nothing, so adding or removing
        // one never shifts another's sequence.
        let mut l = Link::new(
            LinkParams {
                loss: 0.3,
                delay_ns: MS,
                ..LinkParams::default()
            },
            3,
        );
        let mut rng = Rng::new(3);
        for i in 0..1000 {
            let lost = l.offer(i, 100).as_slice().is_empty();
            assert_eq!(lost, rng.chance(0.3), "datagram {i}");
        }
    }

    #[test]
    fn clumped_release_hands_packets_over_together_at_ticks() {
        // 1 packet every 10 us, released at 100 us ticks, at most 4 per tick.
        let mut l = link(LinkParams {
            clump_ns: 100 * US,
            clump_max: 4,
            ..LinkParams::default()
        });
        let times: Vec<u64> = (0..12u64)
            .map(|i| l.offer(i * 10 * US + 1, 1000).as_slice()[0])
            .collect();
        // Arrivals 1..111 us: the first four at the 100 us tick, the next four spill to the
        // 200 us tick (the cap), then the rest follow.
        assert_eq!(&times[..4], &[100 * US; 4]);
        assert_eq!(&times[4..8], &[200 * US; 4]);
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "in order: {times:?}"
        );
        assert!(
            times.iter().all(|t| t % (100 * US) == 0),
            "on ticks: {times:?}"
        );
        // Without a cap every packet of a tick leaves together.
        let mut l = link(LinkParams {
            clump_ns: 100 * US,
            ..LinkParams::default()
        });
        let times: Vec<u64> = (0..10u64)
            .map(|i| l.offer(i * 10 * US + 1, 1000).as_slice()[0])
            .collect();
        assert_eq!(times, vec![100 * US; 10]);
    }

    #[test]
    fn huge_values_saturate_instead_of_overflowing() {
        let mut l = link(LinkParams {
            rate_bps: Some(1),
            delay_ns: u64::MAX - 5,
            jitter_ns: u64::MAX / 2,
            ..LinkParams::default()
        });
        let r = l.offer(u64::MAX - 10, 65_507);
        assert_eq!(r.as_slice(), &[u64::MAX]);
    }
}
