//! GTP, the Group Transport Protocol (X. Wu and A. Chien, *GTP: Group Transport Protocol for
//! Lambda-Grids*, CCGrid 2004), as paper 003 §4.5 builds it on UDT/CCC: a group-based control
//! in which a central manager at the receiver sets the rates of all the flows arriving there
//! and feeds each sender its rate with custom control messages.
//!
//! GTP assumes a network core with plenty of capacity, so that contention happens at the end
//! systems: the receiver's capacity (its NIC, disk or CPU) is what the flows converging on it
//! share. The manager gives each flow the max-min fair share of that capacity given the
//! flows' demands, and re-allocates whenever a flow's demand changes or a flow joins or
//! leaves.
//!
//! The pieces, and the parameters (all constants below):
//! * **Group.** Every connection built from one [`GtpFactory`] belongs to the factory's group;
//!   the manager lives in the factory (`Arc<Mutex<…>>`). A connection joins as a receiver
//!   when its first data packet arrives and leaves on close or after [`IDLE_US`] without data.
//! * **Per-flow demand** (the receiver's flow-level control), updated at the end of every
//!   control interval of one RTT (at least [`MIN_INTERVAL_US`], at most
//!   [`MAX_INTERVAL_US`]). Over an interval in which more than [`LOSS_THRESHOLD`] of the new
//!   sequence numbers never arrived, the demand drops to `(1 − DECREASE) ×` the rate that
//!   did arrive (the path carries less than was asked). Otherwise it doubles the arrived rate
//!   (slow start, until the first loss), then grows by [`INCREASE`] × capacity per second.
//!   Growth in proportion to time rather than to intervals, and multiplicative decrease,
//!   make flows with different RTTs that share a bottleneck elsewhere converge to equal
//!   demands.
//! * **Allocation.** Max-min fair (water-filling) of the receiver capacity over the demands
//!   of the live flows: a flow that wants less than an equal share gets what it wants, the
//!   others share the rest equally.
//! * **Feedback.** After each update the receiver sends its sender the allocated rate in a
//!   custom message (extended type [`RATE_MSG_TYPE`], body: bits per second as two 32-bit
//!   words, high first). Messages are unreliable, which one per interval makes harmless.
//! * **Sender.** Purely rate-based once it has a rate: period = MSS·8 / rate (the engine
//!   keeps the average rate at the period's, probing pairs included), window = the peer's
//!   flow window. Before the first
//!   rate it sends with UDT's initial 16-packet window. On a timeout (the receiver's feedback
//!   stopped) it halves its rate.
//!
//! Rates count whole datagrams plus IP/UDP headers (payload + 44 bytes per data packet), like
//! the simulator's link rates.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{
    CcContext, CongestionControl, CongestionControlFactory, CustomMessage, PacketInfo,
    SharedFactory, UserDefined,
};
use crate::seq::SeqNo;
use crate::time::{Instant, SYN_US};

/// Receiver capacity of the registered name `gtp`, bits per second (1 Gb/s, the papers'
/// end hosts); `gtp:<Mb/s>` picks another.
pub const DEFAULT_CAPACITY_BPS: u64 = 1_000_000_000;
/// Extended type of the rate message the receiver sends to the sender.
pub const RATE_MSG_TYPE: u16 = 0x4750;
/// Shortest control interval, µs (UDT's SYN).
pub const MIN_INTERVAL_US: u64 = SYN_US;
/// Longest control interval, µs.
pub const MAX_INTERVAL_US: u64 = 100_000;
/// A receiving flow that got no data for this long leaves the group, µs.
pub const IDLE_US: u64 = 1_000_000;
/// Fraction of an interval's packets lost above which the path is taken as congested.
pub const LOSS_THRESHOLD: f64 = 0.01;
/// Multiplicative decrease of the demand on congestion, below the rate that arrived.
pub const DECREASE: f64 = 0.125;
/// Additive increase of the demand over loss-free intervals, fraction of the capacity per
/// second.
pub const INCREASE: f64 = 0.05;
/// Smallest rate the manager allocates, bits per second.
pub const MIN_RATE_BPS: f64 = 100_000.0;
/// UDT header plus IP/UDP headers of a data packet, bytes.
const PACKET_OVERHEAD: u64 = 16 + 28;

/// One receiving flow as the manager sees it.
#[derive(Debug)]
struct Member {
    demand_bps: f64,
    alloc_bps: f64,
    last_seen: Instant,
}

/// The central manager of one receiver's group.
#[derive(Debug)]
struct Group {
    capacity_bps: f64,
    members: BTreeMap<u64, Member>,
    next_id: u64,
}

impl Group {
    /// Drops idle members and shares the capacity max-min fairly over the demands.
    fn reallocate(&mut self, now: Instant) {
        self.members
            .retain(|_, m| now.micros_since(m.last_seen) < IDLE_US);
        let mut order: Vec<(f64, u64)> = self
            .members
            .iter()
            .map(|(id, m)| (m.demand_bps, *id))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut left = self.capacity_bps;
        let mut n = order.len();
        for (demand, id) in order {
            // Water-filling: the smallest demands are met in full while they are below an
            // equal share of what is left; everyone above gets that share.
            let alloc = demand.min(left / n as f64).max(MIN_RATE_BPS);
            left = (left - alloc).max(0.0);
            n -= 1;
            if let Some(m) = self.members.get_mut(&id) {
                m.alloc_bps = alloc;
            }
        }
    }
}

fn lock(group: &Mutex<Group>) -> MutexGuard<'_, Group> {
    // Every update leaves the group consistent, so a panic elsewhere does not spoil it.
    group.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes GTP instances that all belong to one group (one receiver's manager).
pub struct GtpFactory {
    name: String,
    group: Arc<Mutex<Group>>,
}

impl GtpFactory {
    /// A group sharing a receiver capacity of `capacity_bps` bits per second.
    pub fn new(capacity_bps: u64) -> Self {
        Self::named("gtp", capacity_bps)
    }

    fn named(name: impl Into<String>, capacity_bps: u64) -> Self {
        GtpFactory {
            name: name.into(),
            group: Arc::new(Mutex::new(Group {
                capacity_bps: (capacity_bps as f64).max(MIN_RATE_BPS),
                members: BTreeMap::new(),
                next_id: 0,
            })),
        }
    }

    /// The receiver capacity the group shares, bits per second.
    pub fn capacity_bps(&self) -> u64 {
        lock(&self.group).capacity_bps as u64
    }

    /// The rates currently allocated to the group's receiving flows, bits per second, in the
    /// order they joined.
    pub fn allocations_bps(&self) -> Vec<u64> {
        lock(&self.group)
            .members
            .values()
            .map(|m| m.alloc_bps as u64)
            .collect()
    }
}

impl CongestionControlFactory for GtpFactory {
    fn name(&self) -> &str {
        &self.name
    }
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Gtp {
            group: self.group.clone(),
            member: None,
            max_seq: None,
            interval_start: Instant::ZERO,
            new_pkts: 0,
            lost_pkts: 0,
            old_pkts: 0,
            slow_start: true,
            bytes: 0,
            rate_bps: None,
        })
    }
}

/// `gtp` (1 Gb/s receiver) or `gtp:<Mb/s>`: a new group per call.
pub(super) fn by_name(name: &str) -> Option<SharedFactory> {
    let bps = match name.strip_prefix("gtp")? {
        "" => DEFAULT_CAPACITY_BPS,
        rest => {
            let mbps: f64 = rest.strip_prefix(':')?.parse().ok()?;
            if !(mbps.is_finite() && mbps > 0.0 && mbps <= 1e6) {
                return None;
            }
            (mbps * 1e6) as u64
        }
    };
    Some(Arc::new(GtpFactory::named(name, bps)))
}

/// One connection's GTP: the receiver's half (member of the group) and the sender's half.
pub struct Gtp {
    group: Arc<Mutex<Group>>,
    /// This connection's ID in the group once it has received data.
    member: Option<u64>,
    /// Largest sequence number received.
    max_seq: Option<SeqNo>,
    interval_start: Instant,
    /// This interval: new packets, packets lost (sequence gaps), retransmitted or late
    /// packets, and bytes on the wire.
    new_pkts: u64,
    lost_pkts: u64,
    old_pkts: u64,
    /// The demand doubles every interval until the first congestion.
    slow_start: bool,
    bytes: u64,
    /// The rate the receiver last allocated us, bits per second (sender side).
    rate_bps: Option<f64>,
}

impl Gtp {
    fn send_rate(ctx: &mut CcContext<'_>, bps: f64) {
        let b = bps as u64;
        ctx.send_custom(CustomMessage::from_words(
            RATE_MSG_TYPE,
            0,
            &[(b >> 32) as u32, b as u32],
        ));
    }

    fn apply_rate(&mut self, ctx: &mut CcContext<'_>, bps: f64) {
        let bps = bps.max(MIN_RATE_BPS);
        self.rate_bps = Some(bps);
        ctx.set_pkt_snd_period_us(f64::from(ctx.mss()) * 8.0 * 1e6 / bps);
        ctx.set_cwnd_pkts(ctx.max_cwnd().max(16.0));
    }

    /// End of a control interval at the receiver: new demand, new allocation, feedback.
    fn update(&mut self, ctx: &mut CcContext<'_>, id: u64) {
        let now = ctx.now();
        let elapsed_us = now.micros_since(self.interval_start).max(1);
        let arrived_bps = self.bytes as f64 * 8.0 * 1e6 / elapsed_us as f64;
        // Congested: more than the threshold of this interval's new sequence numbers never
        // arrived.
        let congested =
            self.lost_pkts as f64 > LOSS_THRESHOLD * (self.new_pkts + self.lost_pkts) as f64;
        let alloc = {
            let mut g = lock(&self.group);
            let capacity = g.capacity_bps;
            let Some(m) = g.members.get_mut(&id) else {
                // Expired while idle: rejoin at the next packet.
                self.member = None;
                return;
            };
            m.demand_bps = if congested {
                self.slow_start = false;
                m.demand_bps.min(arrived_bps) * (1.0 - DECREASE)
            } else if self.slow_start {
                m.demand_bps.max(2.0 * arrived_bps)
            } else {
                // In proportion to time, not intervals, so that flows with longer RTTs
                // (longer intervals) grow as fast as the others.
                m.demand_bps + INCREASE * capacity * elapsed_us as f64 / 1e6
            }
            .clamp(MIN_RATE_BPS, capacity);
            m.last_seen = now;
            g.reallocate(now);
            g.members.get(&id).map_or(MIN_RATE_BPS, |m| m.alloc_bps)
        };
        Self::send_rate(ctx, alloc);
        self.interval_start = now;
        (self.new_pkts, self.lost_pkts, self.old_pkts, self.bytes) = (0, 0, 0, 0);
    }
}

impl CongestionControl for Gtp {
    fn close(&mut self, ctx: &mut CcContext<'_>) {
        if let Some(id) = self.member.take() {
            let mut g = lock(&self.group);
            g.members.remove(&id);
            g.reallocate(ctx.now());
        }
    }

    fn on_packet_received(&mut self, ctx: &mut CcContext<'_>, pkt: &PacketInfo) {
        let now = ctx.now();
        let id = match self.member {
            Some(id) => id,
            None => {
                // Join; the demand is set at the end of the first interval, from what the
                // sender's initial window delivered.
                let id = {
                    let mut g = lock(&self.group);
                    let id = g.next_id;
                    g.next_id += 1;
                    g.members.insert(
                        id,
                        Member {
                            demand_bps: MIN_RATE_BPS,
                            alloc_bps: MIN_RATE_BPS,
                            last_seen: now,
                        },
                    );
                    g.reallocate(now);
                    id
                };
                self.member = Some(id);
                self.slow_start = true;
                self.interval_start = now;
                (self.new_pkts, self.lost_pkts, self.old_pkts, self.bytes) = (0, 0, 0, 0);
                id
            }
        };
        self.bytes += pkt.payload_len as u64 + PACKET_OVERHEAD;
        match self.max_seq {
            Some(max) if !pkt.seq.is_after(max) => self.old_pkts += 1, // retransmitted or late
            Some(max) => {
                self.lost_pkts += u64::from(max.range_len(pkt.seq)).saturating_sub(2);
                self.new_pkts += 1;
                self.max_seq = Some(pkt.seq);
            }
            None => {
                self.new_pkts += 1;
                self.max_seq = Some(pkt.seq);
            }
        }
        let interval = u64::from(ctx.rtt_us()).clamp(MIN_INTERVAL_US, MAX_INTERVAL_US);
        if now.micros_since(self.interval_start) >= interval {
            self.update(ctx, id);
        }
    }

    fn on_custom_message(&mut self, ctx: &mut CcContext<'_>, msg: &UserDefined<'_>) {
        if msg.ext_type != RATE_MSG_TYPE {
            return;
        }
        let mut w = CustomMessage::words(msg.body);
        if let (Some(hi), Some(lo)) = (w.next(), w.next()) {
            let bps = (u64::from(hi) << 32 | u64::from(lo)) as f64;
            self.apply_rate(ctx, bps);
        }
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        if let Some(bps) = self.rate_bps {
            self.apply_rate(ctx, bps / 2.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(capacity: f64, demands: &[f64]) -> Vec<f64> {
        let mut g = Group {
            capacity_bps: capacity,
            members: BTreeMap::new(),
            next_id: 0,
        };
        for (i, d) in demands.iter().enumerate() {
            g.members.insert(
                i as u64,
                Member {
                    demand_bps: *d,
                    alloc_bps: 0.0,
                    last_seen: Instant::ZERO,
                },
            );
        }
        g.reallocate(Instant::ZERO);
        g.members.values().map(|m| m.alloc_bps).collect()
    }

    #[test]
    fn allocation_is_max_min_fair() {
        let c = 100e6;
        assert_eq!(group(c, &[c, c, c, c]), vec![25e6; 4]);
        // A flow that wants little gets it; the rest is shared equally by the others.
        assert_eq!(group(c, &[10e6, c, c]), vec![10e6, 45e6, 45e6]);
        assert_eq!(
            group(c, &[10e6, 20e6, c, 40e6]),
            vec![10e6, 20e6, 35e6, 35e6]
        );
        // Demands below the capacity in total are all met.
        assert_eq!(group(c, &[10e6, 20e6]), vec![10e6, 20e6]);
    }

    #[test]
    fn idle_members_leave_the_group() {
        let mut g = Group {
            capacity_bps: 100e6,
            members: BTreeMap::new(),
            next_id: 0,
        };
        for (id, seen) in [(0, 0), (1, 2_000_000)] {
            g.members.insert(
                id,
                Member {
                    demand_bps: 100e6,
                    alloc_bps: 0.0,
                    last_seen: Instant::from_micros(seen),
                },
            );
        }
        g.reallocate(Instant::from_micros(2_500_000));
        assert_eq!(g.members.len(), 1);
        assert_eq!(g.members[&1].alloc_bps, 100e6);
    }

    #[test]
    fn names_resolve_to_separate_groups() {
        let a = by_name("gtp").unwrap();
        assert_eq!(a.name(), "gtp");
        assert!(by_name("gtp:250").is_some());
        for bad in ["gtp:", "gtp:0", "gtp:-5", "gtp:x", "gtpx", "gtp:1e9"] {
            assert!(by_name(bad).is_none(), "{bad}");
        }
        assert_eq!(GtpFactory::new(5_000_000).capacity_bps(), 5_000_000);
    }
}
