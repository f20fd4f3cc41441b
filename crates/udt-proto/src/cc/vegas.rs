//! TCP Vegas (L. Brakmo, L. Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global
//! Internet", IEEE JSAC 13(8), 1995), and the delay-based machinery FAST TCP reuses.
//!
//! UDT's own RTT comes from ACK/ACK2 pairs about every 10 ms; Vegas needs the RTT of individual
//! packets, so [`RttSampler`] records each packet's departure in
//! [`on_packet_sent`](super::CongestionControl::on_packet_sent) and, when an ACK arrives,
//! takes `now − sent` of the packet just below the acknowledged number (the packet whose arrival
//! triggered the ACK). Retransmitted packets give no sample (Karn). `BaseRTT` is the smallest
//! sample ever; each round trip keeps its smallest sample.
//!
//! Once per round trip (when the ACK passes the largest number sent at the start of the
//! round) Vegas compares the expected and actual rates: `diff = cwnd · (1 − BaseRTT/RTT)`
//! packets, its own packets queued in the network. If `diff < α` the window grows by one
//! packet, if `diff > β` it shrinks by one. Slow start (one packet per acknowledged packet)
//! ends when `diff > γ`. A loss report halves the window (once per window of data); a timeout
//! sets it to 2 packets and restarts slow start, with TCP's RTO and back-off.
//!
//! Parameters: `α` = 1, `β` = 3, `γ` = 1 packets (Brakmo and Peterson). The receiver ACKs every
//! 2 packets, as for [`ctcp`](super::ctcp).

use std::collections::VecDeque;

use super::ctcp::{set_backed_off_rto, ACK_INTERVAL_PKTS};
use super::{CcContext, CongestionControl, PacketInfo};
use crate::seq::{SeqNo, SeqRange};
use crate::time::Instant;

/// Vegas's lower bound of queued packets.
pub const ALPHA_PKTS: f64 = 1.0;
/// Vegas's upper bound of queued packets.
pub const BETA_PKTS: f64 = 3.0;
/// Queued packets that end slow start.
pub const GAMMA_PKTS: f64 = 1.0;
/// Most departure times kept (the largest flow window, so one per unacknowledged packet).
const MAX_RECORDS: usize = crate::config::MAX_WINDOW_PKTS as usize;

/// Per-packet RTT measurement from departure and ACK times.
#[derive(Debug, Default)]
pub struct RttSampler {
    /// Departures of unacknowledged packets in sending order: (seq, time, retransmitted).
    sent: VecDeque<(SeqNo, Instant, bool)>,
    /// Smallest sample ever, µs.
    base_rtt_us: Option<u64>,
}

impl RttSampler {
    /// Records a departure at `now`.
    pub fn on_sent(&mut self, pkt: &PacketInfo, now: Instant) {
        if pkt.retransmission {
            if let Some(e) = self.find(pkt.seq) {
                e.2 = true;
            }
            return;
        }
        if self.sent.len() >= MAX_RECORDS {
            self.sent.pop_front();
        }
        self.sent.push_back((pkt.seq, now, false));
    }

    fn find(&mut self, seq: SeqNo) -> Option<&mut (SeqNo, Instant, bool)> {
        let first = self.sent.front()?.0;
        let i = usize::try_from(first.offset_to(seq)).ok()?;
        // New packets are sent in order without gaps, so the offset is the index.
        self.sent.get_mut(i).filter(|e| e.0 == seq)
    }

    /// An ACK with first unacknowledged number `ack` at `now`: the RTT of the packet before
    /// it, µs, if it was sent once; forgets everything acknowledged.
    pub fn on_ack(&mut self, ack: SeqNo, now: Instant) -> Option<u64> {
        let sample = self
            .find(ack.prev())
            .filter(|e| !e.2)
            .map(|e| now.micros_since(e.1).max(1));
        while self.sent.front().is_some_and(|e| e.0.is_before(ack)) {
            self.sent.pop_front();
        }
        if let Some(s) = sample {
            self.base_rtt_us = Some(self.base_rtt_us.map_or(s, |b| b.min(s)));
        }
        sample
    }

    /// Smallest RTT seen, µs.
    pub fn base_rtt_us(&self) -> Option<u64> {
        self.base_rtt_us
    }
}

/// The window rule of a delay-based TCP, applied once per round trip.
pub trait DelayRules: Send {
    /// The new window at the end of a round trip, packets, from the window `cwnd`, `BaseRTT`
    /// and the round's smallest RTT (µs).
    fn per_rtt(&mut self, cwnd: f64, base_rtt_us: f64, rtt_us: f64) -> f64;
    /// Whether to start (and restart after a timeout) in slow start.
    fn uses_slow_start(&self) -> bool {
        true
    }
}

/// Vegas's rule.
#[derive(Clone, Copy, Debug)]
pub struct VegasRules {
    /// Lower bound of own queued packets.
    pub alpha: f64,
    /// Upper bound of own queued packets.
    pub beta: f64,
}

impl Default for VegasRules {
    fn default() -> Self {
        VegasRules {
            alpha: ALPHA_PKTS,
            beta: BETA_PKTS,
        }
    }
}

/// Own packets queued in the network, from the window and the two RTTs.
pub fn queued_pkts(cwnd: f64, base_rtt_us: f64, rtt_us: f64) -> f64 {
    cwnd * (1.0 - base_rtt_us / rtt_us.max(1.0))
}

impl DelayRules for VegasRules {
    fn per_rtt(&mut self, cwnd: f64, base: f64, rtt: f64) -> f64 {
        let diff = queued_pkts(cwnd, base, rtt);
        if diff < self.alpha {
            cwnd + 1.0
        } else if diff > self.beta {
            cwnd - 1.0
        } else {
            cwnd
        }
    }
}

/// TCP Vegas.
pub type Vegas = DelayTcp<VegasRules>;

/// A TCP Vegas instance with Brakmo and Peterson's parameters.
pub fn vegas() -> Vegas {
    DelayTcp::new(VegasRules::default())
}

/// A window-based TCP whose window follows the per-packet RTT through the rule `R`.
#[derive(Debug)]
pub struct DelayTcp<R> {
    rules: R,
    sampler: RttSampler,
    cwnd: f64,
    in_slow_start: bool,
    last_ack: SeqNo,
    /// The round trip ends when this packet is acknowledged.
    round_end: SeqNo,
    /// Smallest RTT sample of the current round, µs.
    round_min_us: Option<u64>,
    /// Largest number sent when the last loss event began.
    recover: SeqNo,
    backoff: u32,
}

impl<R: DelayRules> DelayTcp<R> {
    /// A delay-based TCP with the rule `rules`.
    pub fn new(rules: R) -> Self {
        let in_slow_start = rules.uses_slow_start();
        DelayTcp {
            rules,
            sampler: RttSampler::default(),
            cwnd: 2.0,
            in_slow_start,
            last_ack: SeqNo::from_masked(0),
            round_end: SeqNo::from_masked(0),
            round_min_us: None,
            recover: SeqNo::from_masked(0),
            backoff: 0,
        }
    }

    /// Smallest RTT measured, µs.
    pub fn base_rtt_us(&self) -> Option<u64> {
        self.sampler.base_rtt_us()
    }

    fn apply(&mut self, ctx: &mut CcContext<'_>) {
        self.cwnd = self.cwnd.clamp(2.0, ctx.max_cwnd().max(2.0));
        ctx.set_cwnd_pkts(self.cwnd);
        ctx.set_pkt_snd_period_us(0.0);
    }
}

impl<R: DelayRules> CongestionControl for DelayTcp<R> {
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        self.last_ack = ctx.snd_curr_seq().next();
        self.round_end = ctx.snd_curr_seq();
        self.recover = ctx.snd_curr_seq();
        ctx.set_ack_interval_pkts(ACK_INTERVAL_PKTS);
        set_backed_off_rto(ctx, 0);
        self.apply(ctx);
    }

    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, pkt: &PacketInfo) {
        self.sampler.on_sent(pkt, ctx.now());
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        let acked = self.last_ack.offset_to(ack);
        if acked <= 0 {
            return;
        }
        self.last_ack = ack;
        self.backoff = 0;
        set_backed_off_rto(ctx, 0);
        if let Some(s) = self.sampler.on_ack(ack, ctx.now()) {
            self.round_min_us = Some(self.round_min_us.map_or(s, |m| m.min(s)));
        }
        if self.in_slow_start {
            self.cwnd += f64::from((acked as u32).min(2 * ACK_INTERVAL_PKTS));
        }
        if ack.is_after(self.round_end) {
            if let (Some(rtt), Some(base)) = (self.round_min_us, self.sampler.base_rtt_us()) {
                let (rtt, base) = (rtt as f64, base as f64);
                if self.in_slow_start {
                    if queued_pkts(self.cwnd, base, rtt) > GAMMA_PKTS {
                        // Leave slow start at the window the path holds, plus one.
                        self.in_slow_start = false;
                        self.cwnd = self.cwnd.min(self.cwnd * base / rtt + 1.0);
                    }
                } else {
                    self.cwnd = self.rules.per_rtt(self.cwnd, base, rtt);
                }
            }
            self.round_end = ctx.snd_curr_seq();
            self.round_min_us = None;
        }
        self.apply(ctx);
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, losses: &[SeqRange]) {
        let Some(newest) = losses
            .iter()
            .map(|r| r.last)
            .reduce(|a, b| a.max_wrapping(b))
        else {
            return;
        };
        if !newest.is_after(self.recover) {
            return; // the same congestion event
        }
        self.recover = ctx.snd_curr_seq();
        self.in_slow_start = false;
        self.cwnd /= 2.0;
        self.apply(ctx);
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        self.cwnd = 2.0;
        self.in_slow_start = self.rules.uses_slow_start();
        self.recover = ctx.snd_curr_seq();
        self.backoff = self.backoff.saturating_add(1);
        set_backed_off_rto(ctx, self.backoff);
        self.apply(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testkit::Harness;

    #[test]
    fn sampler_measures_per_packet_rtt_and_skips_retransmissions() {
        let mut s = RttSampler::default();
        let t0 = Instant::from_micros(1_000_000);
        let first = SeqNo::new(1000).unwrap();
        for i in 0..4u32 {
            let pkt = PacketInfo {
                seq: first.add(i),
                message: crate::wire::MessageWord::from_raw(0),
                timestamp: 0,
                payload_len: 1000,
                retransmission: i == 3,
            };
            if i < 3 {
                s.on_sent(&pkt, t0.plus_micros(u64::from(i) * 1000));
            } else {
                // Packet 2 is retransmitted: its ACK gives no sample.
                s.on_sent(
                    &PacketInfo {
                        seq: first.add(2),
                        ..pkt
                    },
                    t0,
                );
            }
        }
        assert_eq!(s.on_ack(first.add(1), t0.plus_micros(50_000)), Some(50_000));
        assert_eq!(s.on_ack(first.add(2), t0.plus_micros(52_000)), Some(51_000));
        assert_eq!(s.on_ack(first.add(3), t0.plus_micros(60_000)), None);
        assert_eq!(s.base_rtt_us(), Some(50_000));
    }

    #[test]
    fn rule_keeps_between_alpha_and_beta_packets_queued() {
        let mut r = VegasRules::default();
        // 100 packets, RTT 100 ms over a base of 100 ms: nothing queued → grow.
        assert_eq!(r.per_rtt(100.0, 100_000.0, 100_000.0), 101.0);
        // 2 packets queued: hold.
        assert_eq!(r.per_rtt(100.0, 98_000.0, 100_000.0), 100.0);
        // 5 queued: shrink.
        assert_eq!(r.per_rtt(100.0, 95_000.0, 100_000.0), 99.0);
    }

    /// A model path: `capacity` packets per RTT of 100 ms base; anything beyond queues and
    /// adds one packet time of delay each.
    fn run_on_path(h: &mut Harness, capacity: f64, rounds: usize) -> Vec<f64> {
        let base = 100_000.0;
        let mut windows = Vec::new();
        for _ in 0..rounds {
            let n = h.cwnd().floor() as u32;
            let queued = (f64::from(n) - capacity).max(0.0);
            let rtt = base + queued * base / capacity;
            let first = h.inputs.snd_curr_seq.next();
            h.send(n);
            h.advance_us(rtt as u64);
            let mut acked = 0;
            while acked < n {
                acked = (acked + 2).min(n);
                h.ack(first.add(acked));
            }
            windows.push(h.cwnd());
        }
        windows
    }

    #[test]
    fn window_settles_just_above_the_pipe() {
        let mut h = Harness::new(Box::new(vegas()));
        let w = run_on_path(&mut h, 50.0, 120);
        let last = w[w.len() - 1];
        // 1 to 3 packets queued beyond the 50-packet pipe (and a round of rounding).
        assert!((50.0..=54.0).contains(&last), "{w:?}");
        assert!(
            w[w.len() - 20..].iter().all(|&x| (x - last).abs() <= 1.0),
            "{w:?}"
        );
    }

    #[test]
    fn loss_halves_and_timeout_restarts() {
        let mut h = Harness::new(Box::new(vegas()));
        run_on_path(&mut h, 50.0, 60);
        let w = h.cwnd();
        let last = h.send(3);
        h.loss(last, last);
        assert!((h.cwnd() - w / 2.0).abs() < 1e-9);
        h.loss(last, last);
        assert!((h.cwnd() - w / 2.0).abs() < 1e-9, "same event");
        h.timeout();
        assert_eq!(h.cwnd(), 2.0);
        assert_eq!(h.controls.rto_us, Some(2 * crate::cc::ctcp::MIN_RTO_US));
    }
}
