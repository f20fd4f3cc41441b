//! UDT's native congestion control: DAIMD rate control with packet-pair bandwidth estimation
//! and randomised de-synchronised decrease (paper 000 §3, spec §12).
//!
//! [`NativeConfig::udt4`] is the algorithm exactly as UDT4 4.11 runs it, quirks included, so
//! that our flows compete with 4.11 flows on equal terms. The papers (and the UDT draft)
//! describe it differently in a few places (spec §12.5); each difference is a switch of
//! [`NativeConfig`], and [`NativeConfig::paper`] turns on the ones the papers state:
//! * the minimum increase is `1/MSS` packets per SYN instead of 0.01;
//! * sending freezes for one SYN after each congestion event;
//! * the random decrease of paper 000 Fig. 7: the NAK counters start at 1, every NAK of an
//!   epoch is counted, and an extra decrease happens when `NAKCount == DecCount·DecRandom`.
//!   In 4.11 a short-circuit stops counting NAKs after the fifth, so the average NAKs per epoch
//!   never exceeds 5, `DecRandom` is at most 5, and busy epochs nearly always take all five
//!   decreases (the rate halves).
//!
//! Two 4.11 rules the papers do not mention are kept by the papers' preset, because they are
//! part of every released implementation and removing them raises loss several-fold in our
//! simulations (see `docs/results.md`): the spare bandwidth is capped at `capacity/9` while the
//! rate is below its level before the last decrease, and one increase is skipped after a loss.
//! Both have switches.
//!
//! [`NativeConfig::slow_start_bdp_exit`] is our one change to 4.11's behaviour in the default
//! configuration: 4.11 leaves slow start only on the first loss or when the window reaches the
//! peer's flow window (25 600 packets by default in 4.11), so on a path whose bandwidth-delay product
//! is smaller than that it overshoots by up to a window and loses thousands of packets in one
//! round trip. With the switch on, slow start also ends once the window holds one round trip
//! at the rate the receiver reports (see [`NativeCc`]); [`NativeConfig::udt4`] leaves it off.
//!
//! [`NativeConfig::max_decreases_per_epoch`] is our second change in the default
//! configuration. 4.11 allows five decreases per congestion epoch (the first plus up to four
//! random extra ones), and because its NAK counter stops at five the random divisor is small,
//! so an epoch with many NAKs — a DropTail queue overflowing — nearly always takes all five:
//! the rate falls to 0.55 of its value. Our default stops at two (the first decrease plus one
//! randomised extra one, so flows still de-synchronise). In the simulator this lifts a single
//! 1 Gb/s, 100 ms flow over a one-BDP queue from 0.856 to 0.905 utilization over 30 s, and
//! paper 000's Table 4 experiment from Jain 0.976 / stability 0.21 at worst to 0.998 / 0.155
//! (`docs/results.md`).
//!
//! [`NativeConfig::noisy_link`] enables the papers' noisy-link rule (paper 000 §3.3.2): the
//! first loss of a congestion event does not decrease the rate.

use super::glibc_rand::{rand_after_srand, RAND_MAX};
use super::{CcContext, CongestionControl};
use crate::seq::{SeqNo, SeqRange};
use crate::time::{Instant, SYN_US};

/// β of the increase formula (spec §12.2): packets per SYN per bit/s of spare bandwidth,
/// scaled by the MSS.
const BETA: f64 = 1.5e-6;
/// Minimum increase of 4.11, packets per SYN (1 packet per second).
const MIN_INC_UDT4: f64 = 0.01;
/// Multiplicative period increase at a decrease: rate × 8/9.
const DECREASE: f64 = 1.125;
/// Most decreases in one congestion epoch in 4.11 (the first plus four random ones).
pub const UDT4_MAX_DECREASES_PER_EPOCH: u32 = 5;
/// Most decreases in one congestion epoch in our default (the first plus one random one).
pub const MAX_DECREASES_PER_EPOCH: u32 = 2;
/// Additive part of the window after slow start, packets.
const CWND_HEADROOM_PKTS: f64 = 16.0;
/// Rate-control events (one per SYN with new data acknowledged) before slow start trusts the
/// receiver's rate and the RTT enough to stop at the bandwidth-delay product: 16 samples bring
/// an estimate smoothed by 7/8 within 12 % of its input.
const SLOW_START_SETTLE_EVENTS: u32 = 16;
/// Slow-start events per block over which the capacity estimate must hold steady (±25 %) to
/// cap the delivery rate: 8 events, 80 ms or more.
const CAPACITY_SETTLE_EVENTS: u32 = 8;

/// How extra decreases are spread over a congestion epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DecreaseRule {
    /// 4.11: `DecCount++ < 5 && ++NAKCount % DecRandom == 0`, counters from 0.
    #[default]
    Udt4,
    /// Paper 000 Fig. 7: every NAK counted, decrease when `NAKCount == DecCount·DecRandom`,
    /// counters from 1.
    Paper,
}

/// How the increase follows the spare capacity.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum IncreaseRule {
    /// 4.11 and the papers: the spare capacity rounded up to a power of ten (bits/s), times
    /// β/MSS packets per SYN. Flows whose spare capacities fall in the same decade add the
    /// same increment, so only the decreases move them towards equal shares.
    #[default]
    Tiered,
    /// The spare capacity itself, times `gain` · β/MSS packets per SYN (a gain of about 3
    /// matches the tiered rule on average). A flow with a smaller share has more spare
    /// capacity and so grows faster: shares converge between decreases too.
    Linear {
        /// Multiplier of the increase.
        gain: f64,
    },
}

/// Configuration of [`NativeCc`]: 4.11's algorithm and the switches that turn it into the
/// papers' description.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NativeConfig {
    /// Minimum increase is `1/MSS` packets per SYN (papers) instead of 0.01 (4.11).
    pub min_increase_per_mss: bool,
    /// Stop sending new data for one SYN after each congestion event (papers, UDT3).
    pub freeze_after_congestion: bool,
    /// Spread of extra decreases within an epoch.
    pub decrease_rule: DecreaseRule,
    /// Cap the spare bandwidth at `capacity/9` while the period is above its value before the
    /// last decrease (4.11).
    pub cap_spare_bandwidth: bool,
    /// Skip the first rate increase after any NAK (4.11).
    pub skip_increase_after_loss: bool,
    /// Ignore the first loss of each congestion event (for links with non-congestion loss).
    pub noisy_link: bool,
    /// Also leave slow start when the window exceeds the path's bandwidth-delay product, as
    /// measured by the receiver's arrival rate times the RTT (not in 4.11).
    pub slow_start_bdp_exit: bool,
    /// Most rate decreases in one congestion epoch, the first included (4.11: 5).
    pub max_decreases_per_epoch: u32,
    /// How the increase follows the spare capacity (4.11: tiered).
    pub increase: IncreaseRule,
    /// Round the period up to a whole microsecond at a decrease (4.11). At 1 Gbit/s the
    /// period is about 12 µs, so the rounding deepens a 1/9 decrease to as much as 1/5.
    pub whole_us_decrease: bool,
    /// Send each probing pair's second packet on top of the period (4.11), so the average
    /// rate is 16/15 of the period's.
    pub probe_pair_outside_rate: bool,
    /// Scale each increase by the time since the last one in rate-control intervals (up to
    /// two): the increase per second no longer depends on whether ACKs let a step run every
    /// SYN or every other SYN. 4.11 steps only on an ACK at least a SYN after the last step,
    /// so the phase of a flow's ACKs against that clock halves or doubles its increase.
    pub time_scaled_increase: bool,
}

impl NativeConfig {
    /// UDT4 4.11 exactly.
    pub const fn udt4() -> Self {
        NativeConfig {
            min_increase_per_mss: false,
            freeze_after_congestion: false,
            decrease_rule: DecreaseRule::Udt4,
            cap_spare_bandwidth: true,
            skip_increase_after_loss: true,
            noisy_link: false,
            slow_start_bdp_exit: false,
            max_decreases_per_epoch: UDT4_MAX_DECREASES_PER_EPOCH,
            increase: IncreaseRule::Tiered,
            whole_us_decrease: true,
            probe_pair_outside_rate: true,
            time_scaled_increase: false,
        }
    }

    /// Our default: 4.11's algorithm with [`NativeConfig::slow_start_bdp_exit`] on and at
    /// most [`MAX_DECREASES_PER_EPOCH`] decreases per congestion epoch (see the module
    /// documentation).
    pub const fn udt() -> Self {
        NativeConfig {
            slow_start_bdp_exit: true,
            max_decreases_per_epoch: MAX_DECREASES_PER_EPOCH,
            ..Self::udt4()
        }
    }

    /// The papers' description, on top of 4.11 (see the module documentation).
    pub const fn paper() -> Self {
        NativeConfig {
            min_increase_per_mss: true,
            freeze_after_congestion: true,
            decrease_rule: DecreaseRule::Paper,
            ..Self::udt4()
        }
    }

    /// The same, with [`NativeConfig::slow_start_bdp_exit`] on.
    pub const fn with_slow_start_bdp_exit(self) -> Self {
        NativeConfig {
            slow_start_bdp_exit: true,
            ..self
        }
    }

    /// The same, with the given increase rule.
    pub const fn with_increase(self, increase: IncreaseRule) -> Self {
        NativeConfig { increase, ..self }
    }

    /// The same, with the period kept exact at a decrease (see
    /// [`NativeConfig::whole_us_decrease`]) and the average rate exactly the period's (see
    /// [`NativeConfig::probe_pair_outside_rate`]).
    pub const fn with_exact_rate(self) -> Self {
        NativeConfig {
            whole_us_decrease: false,
            probe_pair_outside_rate: false,
            ..self
        }
    }

    /// The same, with [`NativeConfig::time_scaled_increase`] on.
    pub const fn with_time_scaled_increase(self) -> Self {
        NativeConfig {
            time_scaled_increase: true,
            ..self
        }
    }

    /// The same, with the noisy-link rule on.
    pub const fn with_noisy_link(self) -> Self {
        NativeConfig {
            noisy_link: true,
            ..self
        }
    }
}

impl Default for NativeConfig {
    fn default() -> Self {
        Self::udt()
    }
}

/// The native DAIMD algorithm.
#[derive(Clone, Debug)]
pub struct NativeCc {
    config: NativeConfig,
    /// Rate-control interval, µs.
    rc_interval_us: u64,
    last_rc_time: Instant,
    slow_start: bool,
    /// Last ACK counted by slow start.
    last_ack: SeqNo,
    /// Rate-control events seen in slow start (the BDP exit waits for the estimates to settle).
    slow_start_events: u32,
    /// The link capacity estimate at the start of the current block of
    /// [`CAPACITY_SETTLE_EVENTS`] slow-start events, packets/s.
    capacity_snapshot: u32,
    /// The capacity estimate moved less than ±25 % over the last block: trusted as a cap.
    capacity_settled: bool,
    /// A NAK arrived since the last rate-control event: skip one increase.
    loss: bool,
    /// Largest sequence sent when the rate was last decreased.
    last_dec_seq: SeqNo,
    /// Period before the last decrease, µs.
    last_dec_period_us: f64,
    /// Smoothed number of NAKs per congestion epoch.
    avg_nak_num: i64,
    /// NAKs in the current epoch.
    nak_count: i64,
    /// Decreases in the current epoch.
    dec_count: u32,
    /// Random divisor: an extra decrease every `dec_random` NAKs.
    dec_random: i64,
}

impl NativeCc {
    /// A new instance; state is set up in [`CongestionControl::init`].
    pub fn new(config: NativeConfig) -> Self {
        NativeCc {
            config,
            rc_interval_us: SYN_US,
            last_rc_time: Instant::ZERO,
            slow_start: true,
            last_ack: SeqNo::default(),
            slow_start_events: 0,
            capacity_snapshot: 0,
            capacity_settled: false,
            loss: false,
            last_dec_seq: SeqNo::default(),
            last_dec_period_us: 1.0,
            avg_nak_num: 0,
            nak_count: 0,
            dec_count: 0,
            dec_random: 1,
        }
    }

    /// True while the algorithm is in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// Replaces the increase rule from the next rate-control event on.
    pub fn set_increase(&mut self, increase: IncreaseRule) {
        self.config.increase = increase;
    }

    /// Leaves slow start now, sending at `rate_pps` (an algorithm built on this one decides
    /// when slow start ends; see `cc::udt`).
    ///
    /// The period at the exit counts as the level before a decrease: 4.11's cap on the spare
    /// capacity applies below it (after a later decrease), not to growth above the exit rate.
    pub fn leave_slow_start(&mut self, ctx: &mut CcContext<'_>, rate_pps: f64) {
        self.slow_start = false;
        if rate_pps > 0.0 {
            ctx.set_pkt_snd_period_us(1e6 / rate_pps);
        }
        self.last_dec_period_us = ctx.pkt_snd_period_us();
    }

    /// Grows the slow-start window by the packets acknowledged up to `ack` (4.11's rule);
    /// returns the new window.
    pub fn slow_start_grow(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) -> f64 {
        let grown = ctx.cwnd_pkts() + f64::from(self.last_ack.range_len(ack));
        ctx.set_cwnd_pkts(grown);
        self.last_ack = ack;
        grown
    }

    fn min_inc(&self, mss: f64) -> f64 {
        if self.config.min_increase_per_mss {
            1.0 / mss
        } else {
            MIN_INC_UDT4
        }
    }

    /// Leaves slow start at the receiver's delivery rate (with the BDP exit: capped by the
    /// settled capacity estimate, see [`NativeCc::delivery_rate_pps`]).
    fn exit_slow_start(&mut self, ctx: &mut CcContext<'_>) {
        self.slow_start = false;
        let rate = if self.config.slow_start_bdp_exit {
            self.delivery_rate_pps(ctx)
        } else {
            ctx.rcv_rate_pps()
        };
        let period = if rate > 0 {
            1e6 / f64::from(rate)
        } else {
            // Unreachable with UDT's inputs (the rate starts at 16 and only takes positive
            // samples); 4.11 has an inverted formula here, we use the intended one.
            (f64::from(ctx.rtt_us()) + self.rc_interval_us as f64) / ctx.cwnd_pkts().max(1.0)
        };
        ctx.set_pkt_snd_period_us(period);
    }

    /// True when `cwnd` packets exceed one round trip at the receiver's arrival rate.
    ///
    /// In slow start the sender emits back-to-back bursts, so the receiver's median
    /// inter-arrival time measures the bottleneck's rate (its share of it, when shared) long
    /// before the window fills the path. A window beyond rate × RTT only builds a queue, and
    /// doubling it once more overflows any queue up to a bandwidth-delay product deep. Both
    /// estimates start from fixed guesses (16 packets/s, 100 ms) and are smoothed by 7/8, so
    /// the test waits for [`SLOW_START_SETTLE_EVENTS`] rate-control events of real samples.
    fn window_exceeds_bdp(&self, ctx: &CcContext<'_>, cwnd: f64) -> bool {
        if !self.config.slow_start_bdp_exit || self.slow_start_events < SLOW_START_SETTLE_EVENTS {
            return false;
        }
        let bdp = f64::from(self.delivery_rate_pps(ctx)) * f64::from(ctx.rtt_us()) / 1e6;
        cwnd > bdp + CWND_HEADROOM_PKTS
    }

    /// The rate slow start may assume the path delivers, packets/s: the receiver's arrival
    /// rate, capped by the packet-pair capacity estimate once that has settled. The arrival
    /// rate is a median of inter-arrival times, and a path that releases packets in clumps
    /// (a busy emulator, a qdisc timer, interrupt coalescing) makes it read high: on a
    /// 1 Gbit/s, 100 ms path behind `udt relay` it read 1.8 Gbit/s, slow start doubled to
    /// 2.5 bandwidth-delay products and lost 4 900 packets. The capacity estimate read
    /// 0.85-0.95 Gbit/s throughout. It starts from a guess and needs about nine probe pairs
    /// before its median is real, so it caps only after it has stopped climbing.
    fn delivery_rate_pps(&self, ctx: &CcContext<'_>) -> u32 {
        let rate = ctx.rcv_rate_pps();
        if self.capacity_settled {
            rate.min(ctx.bandwidth_pps().max(1))
        } else {
            rate
        }
    }

    /// Tracks whether the capacity estimate has settled: within ±25 % of its value one
    /// block of [`CAPACITY_SETTLE_EVENTS`] slow-start events ago.
    fn track_capacity(&mut self, ctx: &CcContext<'_>) {
        if self.slow_start_events % CAPACITY_SETTLE_EVENTS != 0 {
            return;
        }
        let now = u64::from(ctx.bandwidth_pps());
        let then = u64::from(self.capacity_snapshot);
        self.capacity_settled = then > 0 && 4 * now <= 5 * then && 4 * now >= 3 * then;
        self.capacity_snapshot = ctx.bandwidth_pps();
    }

    fn decrease(&self, ctx: &mut CcContext<'_>) {
        let p = ctx.pkt_snd_period_us();
        let p = p * DECREASE;
        ctx.set_pkt_snd_period_us(if self.config.whole_us_decrease {
            p.ceil()
        } else {
            p
        });
    }
}

impl Default for NativeCc {
    fn default() -> Self {
        NativeCc::new(NativeConfig::default())
    }
}

impl CongestionControl for NativeCc {
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        self.rc_interval_us = SYN_US;
        self.last_rc_time = ctx.now();
        ctx.set_ack_timer_us(SYN_US);
        self.slow_start = true;
        self.last_ack = ctx.snd_curr_seq();
        self.slow_start_events = 0;
        self.capacity_snapshot = 0;
        self.capacity_settled = false;
        self.loss = false;
        self.last_dec_seq = self.last_ack.prev();
        self.last_dec_period_us = 1.0;
        let paper = self.config.decrease_rule == DecreaseRule::Paper;
        // 4.11 starts the counters at 0 and the last decrease point at ISN − 2; the papers at
        // 1 and ISN − 1.
        let start = u32::from(paper);
        self.avg_nak_num = i64::from(start);
        self.nak_count = i64::from(start);
        self.dec_count = start;
        if paper {
            self.last_dec_seq = self.last_ack;
        }
        self.dec_random = 1;
        ctx.set_cwnd_pkts(16.0);
        ctx.set_pkt_snd_period_us(1.0);
        ctx.set_probe_pair_outside_rate(self.config.probe_pair_outside_rate);
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        let now = ctx.now();
        let elapsed_us = now.micros_since(self.last_rc_time);
        if elapsed_us < self.rc_interval_us {
            return;
        }
        self.last_rc_time = now;
        let rtt_plus_rc = f64::from(ctx.rtt_us()) + self.rc_interval_us as f64;

        if self.slow_start {
            // 4.11 adds the inclusive length, i.e. one more than the packets newly acked.
            let grown = ctx.cwnd_pkts() + f64::from(self.last_ack.range_len(ack));
            ctx.set_cwnd_pkts(grown);
            self.last_ack = ack;
            self.slow_start_events = self.slow_start_events.saturating_add(1);
            self.track_capacity(ctx);
            if grown > ctx.max_cwnd() || self.window_exceeds_bdp(ctx, grown) {
                self.exit_slow_start(ctx);
            }
        } else {
            let w = f64::from(ctx.rcv_rate_pps()) / 1e6 * rtt_plus_rc + CWND_HEADROOM_PKTS;
            ctx.set_cwnd_pkts(w);
        }
        if self.slow_start {
            return;
        }
        if self.loss {
            self.loss = false;
            if self.config.skip_increase_after_loss {
                return;
            }
        }

        let mss = f64::from(ctx.mss().max(1));
        let period = ctx.pkt_snd_period_us().max(f64::MIN_POSITIVE);
        let bandwidth = i64::from(ctx.bandwidth_pps());
        // Spare capacity, packets per second: estimated capacity minus the current rate.
        let mut spare = (bandwidth as f64 - 1e6 / period) as i64;
        if self.config.cap_spare_bandwidth
            && period > self.last_dec_period_us
            && bandwidth / 9 < spare
        {
            spare = bandwidth / 9;
        }
        let rc = self.rc_interval_us as f64;
        // With time-scaled steps the spare-capacity part follows the elapsed time, and the
        // minimum creeps at one 4.11 step per two intervals, the pace most flows had: at its
        // full pace a 10 Mb/s, 100 ms flow at the link overflowed an 8-packet queue twice as
        // often (0.86 % retransmitted against 0.43 %).
        let (scale, min_scale) = if self.config.time_scaled_increase {
            let s = (elapsed_us as f64 / rc).min(2.0);
            (s, s / 2.0)
        } else {
            (1.0, 1.0)
        };
        let min_inc = self.min_inc(mss) * min_scale;
        let inc = if spare <= 0 {
            min_inc
        } else {
            let bits = spare as f64 * mss * 8.0;
            let inc = match self.config.increase {
                // Packets per SYN: 10^ceil(log10(spare bits/s)) · β / MSS.
                IncreaseRule::Tiered => 10f64.powf(bits.log10().ceil()) * BETA / mss,
                IncreaseRule::Linear { gain } => gain * bits * BETA / mss,
            };
            (inc * scale).max(min_inc)
        };
        ctx.set_pkt_snd_period_us(period * rc / (period * inc + rc));
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, losses: &[SeqRange]) {
        if self.slow_start {
            self.exit_slow_start(ctx);
            return;
        }
        self.loss = true;
        let Some(first) = losses.first() else {
            return;
        };
        if first.first.is_after(self.last_dec_seq) {
            // A loss beyond the last decrease point starts a new congestion epoch.
            self.last_dec_period_us = ctx.pkt_snd_period_us();
            if !self.config.noisy_link {
                self.decrease(ctx);
            }
            self.avg_nak_num =
                (self.avg_nak_num as f64 * 0.875 + self.nak_count as f64 * 0.125).ceil() as i64;
            self.nak_count = 1;
            self.dec_count = 1;
            self.last_dec_seq = ctx.snd_curr_seq();
            let r = f64::from(rand_after_srand(self.last_dec_seq.get())) / f64::from(RAND_MAX);
            self.dec_random = ((self.avg_nak_num as f64 * r).ceil() as i64).max(1);
            if self.config.freeze_after_congestion {
                ctx.pause_sending_until(ctx.now().plus_micros(SYN_US));
            }
        } else if self.config.decrease_rule == DecreaseRule::Paper {
            // Paper 000 Fig. 7 (and the draft): count every NAK of the epoch; decrease again at
            // every DecRandom-th one, at most five decreases per epoch.
            self.nak_count += 1;
            if self.dec_count < self.config.max_decreases_per_epoch
                && self.nak_count == i64::from(self.dec_count) * self.dec_random
            {
                self.decrease(ctx);
                self.dec_count += 1;
                self.last_dec_seq = ctx.snd_curr_seq();
            }
        } else {
            // 4.11 evaluates `DecCount++ < 5 && ++NAKCount % DecRandom == 0`: the epoch's
            // decrease count always advances, the NAK count only while under the limit.
            let under_limit = self.dec_count < self.config.max_decreases_per_epoch;
            self.dec_count = self.dec_count.saturating_add(1);
            if under_limit {
                self.nak_count += 1;
                if self.nak_count % self.dec_random == 0 {
                    self.decrease(ctx);
                    self.last_dec_seq = ctx.snd_curr_seq();
                }
            }
        }
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        if self.slow_start {
            self.exit_slow_start(ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CcControls, CcInputs};

    struct Harness {
        cc: NativeCc,
        inputs: CcInputs,
        controls: CcControls,
    }

    impl Harness {
        fn new(config: NativeConfig) -> Self {
            let inputs = CcInputs {
                now: Instant::from_micros(1_000_000),
                mss: 1500,
                max_cwnd_pkts: 8192.0,
                snd_curr_seq: SeqNo::new(999).unwrap(),
                rcv_rate_pps: 16,
                rtt_us: 100_000,
                rtt_var_us: 50_000,
                bandwidth_pps: 1,
                ..Default::default()
            };
            let mut h = Harness {
                cc: NativeCc::new(config),
                inputs,
                controls: CcControls::default(),
            };
            h.with(|cc, ctx| cc.init(ctx));
            h
        }
        fn with<R>(&mut self, f: impl FnOnce(&mut NativeCc, &mut CcContext<'_>) -> R) -> R {
            let mut ctx = CcContext::new(&self.inputs, &mut self.controls);
            f(&mut self.cc, &mut ctx)
        }
        fn advance(&mut self, us: u64) {
            self.inputs.now = self.inputs.now.plus_micros(us);
        }
        fn ack(&mut self, ack: u32) {
            self.with(|cc, ctx| cc.on_ack(ctx, SeqNo::new(ack).unwrap()));
        }
        fn nak(&mut self, first: u32) {
            let r = [SeqRange::single(SeqNo::new(first).unwrap())];
            self.with(|cc, ctx| cc.on_loss(ctx, &r));
        }
    }

    #[test]
    fn init_matches_4_11() {
        let h = Harness::new(NativeConfig::default());
        assert_eq!(h.controls.cwnd_pkts, 16.0);
        assert_eq!(h.controls.pkt_snd_period_us, 1.0);
        assert_eq!(h.controls.ack_period_us, Some(SYN_US));
        assert!(h.cc.in_slow_start());
        assert_eq!(h.cc.last_dec_seq.get(), 998);
    }

    #[test]
    fn slow_start_grows_by_inclusive_length_at_most_once_per_syn() {
        let mut h = Harness::new(NativeConfig::default());
        h.advance(SYN_US);
        h.ack(1015); // from last_ack 999: len(999, 1015) = 17
        assert_eq!(h.controls.cwnd_pkts, 33.0);
        h.advance(SYN_US / 2);
        h.ack(1100);
        assert_eq!(
            h.controls.cwnd_pkts, 33.0,
            "second ACK within one SYN is ignored"
        );
    }

    #[test]
    fn slow_start_ends_above_flow_window_at_receive_rate() {
        let mut h = Harness::new(NativeConfig::default());
        h.inputs.max_cwnd_pkts = 100.0;
        h.inputs.rcv_rate_pps = 50_000;
        h.advance(SYN_US);
        h.ack(1200);
        assert!(!h.cc.in_slow_start());
        // 4.11 goes on to the increase step in the same call: spare capacity is negative
        // (estimate 1 pkt/s), so the minimum increase 0.01 applies to P = 10^6/50 000 = 20.
        let expected = 20.0 * 10_000.0 / (20.0 * 0.01 + 10_000.0);
        assert!((h.controls.pkt_snd_period_us - expected).abs() < 1e-9);
    }

    /// Drives slow start for `events` rate-control events of 100 newly acknowledged packets
    /// each, with the given estimates; returns whether it is still on.
    fn slow_start_events(h: &mut Harness, events: u32, rcv_rate: u32, capacity: u32) -> bool {
        h.inputs.rcv_rate_pps = rcv_rate;
        h.inputs.bandwidth_pps = capacity;
        h.inputs.max_cwnd_pkts = 1e9;
        for _ in 0..events {
            let next = h.cc.last_ack.get() + 100;
            h.advance(SYN_US);
            h.ack(next);
            if !h.cc.in_slow_start() {
                return false;
            }
        }
        true
    }

    #[test]
    fn settled_capacity_caps_an_arrival_rate_that_reads_high() {
        // Arrival rate 150 000 pkt/s (a clumping path), capacity steady at 80 000: slow start
        // ends by capacity × RTT (8 000 packets + 16 headroom), not at 15 016, and paces at
        // the capacity.
        let mut h = Harness::new(NativeConfig::udt());
        while slow_start_events(&mut h, 1, 150_000, 80_000) {
            assert!(h.controls.cwnd_pkts <= 8_016.0);
        }
        assert!((8_016.0..8_016.0 + 101.0).contains(&h.controls.cwnd_pkts));
        assert!(
            (h.controls.pkt_snd_period_us - 1e6 / 80_000.0).abs() < 0.1,
            "period {}",
            h.controls.pkt_snd_period_us
        );
        // Without the cap (4.11's rule plus the BDP exit on the arrival rate alone) it would
        // have gone on to 150 000 × 0.1 s.
        let mut h = Harness::new(NativeConfig::udt());
        assert!(slow_start_events(&mut h, 100, 150_000, 1_000_000));
        assert!(h.controls.cwnd_pkts > 10_000.0);
    }

    #[test]
    fn climbing_capacity_estimate_does_not_end_slow_start() {
        // The capacity estimate starts from a guess and climbs: while it grows by more than
        // 25 % per block of 8 events it is no cap, so slow start runs on the arrival rate.
        let mut h = Harness::new(NativeConfig::udt());
        let mut capacity = 10;
        for _ in 0..6 {
            assert!(slow_start_events(&mut h, 8, 1_000_000, capacity));
            capacity *= 2;
        }
        // 4.11's exact algorithm ignores both estimates in slow start.
        let mut h = Harness::new(NativeConfig::udt4());
        assert!(slow_start_events(&mut h, 60, 16, 10));
    }

    #[test]
    fn first_nak_leaves_slow_start_without_decrease() {
        let mut h = Harness::new(NativeConfig::default());
        h.inputs.rcv_rate_pps = 10_000;
        h.nak(1005);
        assert!(!h.cc.in_slow_start());
        assert_eq!(h.controls.pkt_snd_period_us, 100.0);
        assert!(
            !h.cc.loss,
            "the slow-start exit path returns before setting Loss"
        );
    }

    #[test]
    fn increase_follows_spare_bandwidth_table() {
        let mut h = Harness::new(NativeConfig::default());
        h.inputs.rcv_rate_pps = 10_000;
        h.nak(1000); // leave slow start: period 100 µs (10 000 pkt/s)
                     // Capacity 100 000 pkt/s: spare 90 000 pkt/s, but the period is above the one before
                     // the last decrease (1 µs), so spare is capped at capacity/9 = 11 111 pkt/s
                     // = 133 Mb/s → 10^9 · 1.5e-6 / 1500 = 1 packet per SYN.
        h.inputs.bandwidth_pps = 100_000;
        h.advance(SYN_US);
        h.ack(1100);
        let p = h.controls.pkt_snd_period_us;
        // P' = P·SYN/(P·inc + SYN) with inc = 1.
        assert!((p - 100.0 * 10_000.0 / 10_100.0).abs() < 1e-9, "period {p}");
        // Below 10 Mb/s of spare capacity the increase is the minimum, 0.01.
        h.inputs.bandwidth_pps = 10_500;
        h.advance(SYN_US);
        h.ack(1200);
        let p2 = h.controls.pkt_snd_period_us;
        assert!(
            (p2 - p * 10_000.0 / (p * 0.01 + 10_000.0)).abs() < 1e-9,
            "period {p2}"
        );
    }

    /// The rate after one second of increases (capacity 100 000 pkt/s, rate 10 000) when an
    /// ACK arrives every `ack_us`.
    fn rate_after_a_second_of_acks(config: NativeConfig, ack_us: u64) -> f64 {
        let mut h = Harness::new(config.with_increase(IncreaseRule::Linear { gain: 3.0 }));
        h.inputs.rcv_rate_pps = 10_000;
        h.nak(1000); // leave slow start at 10 000 pkt/s
        h.inputs.bandwidth_pps = 100_000;
        let mut ack = 1000;
        let mut t = 0;
        while t + ack_us <= 1_000_000 {
            h.advance(ack_us);
            t += ack_us;
            ack += 10;
            h.ack(ack);
        }
        1e6 / h.controls.pkt_snd_period_us
    }

    #[test]
    fn a_time_scaled_increase_does_not_depend_on_the_phase_of_the_acks() {
        // ACKs 1 µs short of a SYN apart: every other one finds the last step less than a SYN
        // old, so the increase runs every 2 SYN less 2 µs; ACKs 1 µs over a SYN apart let it run
        // at each.
        let fast = SYN_US + 1;
        let slow = SYN_US - 1;
        let plain = NativeConfig::udt();
        let (a, b) = (
            rate_after_a_second_of_acks(plain, fast),
            rate_after_a_second_of_acks(plain, slow),
        );
        assert!((a - 10_000.0) > 1.8 * (b - 10_000.0), "{a} against {b}");
        let scaled = NativeConfig::udt().with_time_scaled_increase();
        let (a, b) = (
            rate_after_a_second_of_acks(scaled, fast),
            rate_after_a_second_of_acks(scaled, slow),
        );
        assert!((a / b - 1.0).abs() < 0.01, "{a} against {b}");
    }

    #[test]
    fn loss_flag_skips_one_increase() {
        let mut h = Harness::new(NativeConfig::default());
        h.inputs.rcv_rate_pps = 10_000;
        h.nak(1000);
        h.inputs.snd_curr_seq = SeqNo::new(5000).unwrap();
        h.nak(4000); // new congestion epoch: decrease
        assert_eq!(h.controls.pkt_snd_period_us, (100.0f64 * 1.125).ceil());
        let p = h.controls.pkt_snd_period_us;
        h.inputs.bandwidth_pps = 100_000;
        h.advance(SYN_US);
        h.ack(4000);
        assert_eq!(
            h.controls.pkt_snd_period_us, p,
            "no increase right after a loss"
        );
        h.advance(SYN_US);
        h.ack(4100);
        assert!(h.controls.pkt_snd_period_us < p);
    }

    /// Extra decreases (after the first) in one epoch of 20 more NAKs.
    fn extra_decreases_in_a_busy_epoch(config: NativeConfig) -> u32 {
        let mut h = Harness::new(config);
        h.inputs.rcv_rate_pps = 10_000;
        h.nak(1000);
        h.inputs.snd_curr_seq = SeqNo::new(5000).unwrap();
        h.nak(4000);
        // dec_random is ceil(avg_nak_num · r) with avg 0 → 1: every further NAK decreases,
        // up to the epoch's limit.
        assert_eq!(h.cc.dec_random, 1);
        let mut p = h.controls.pkt_snd_period_us;
        let mut decreases = 0;
        for i in 0..20 {
            h.nak(3000 + i);
            if h.controls.pkt_snd_period_us > p {
                decreases += 1;
            }
            p = h.controls.pkt_snd_period_us;
        }
        decreases
    }

    #[test]
    fn decreases_per_epoch_are_bounded() {
        assert_eq!(
            extra_decreases_in_a_busy_epoch(NativeConfig::udt4()),
            UDT4_MAX_DECREASES_PER_EPOCH - 1
        );
        assert_eq!(
            extra_decreases_in_a_busy_epoch(NativeConfig::udt()),
            MAX_DECREASES_PER_EPOCH - 1
        );
    }

    #[test]
    fn noisy_link_ignores_first_loss_of_event() {
        let mut h = Harness::new(NativeConfig::udt4().with_noisy_link());
        h.inputs.rcv_rate_pps = 10_000;
        h.nak(1000);
        h.inputs.snd_curr_seq = SeqNo::new(5000).unwrap();
        h.nak(4000);
        assert_eq!(h.controls.pkt_snd_period_us, 100.0);
        h.nak(4001);
        assert!(
            h.controls.pkt_snd_period_us > 100.0,
            "a second loss in the event decreases"
        );
    }

    #[test]
    fn paper_variant_freezes_and_uses_smaller_min_increase() {
        let mut h = Harness::new(NativeConfig::paper());
        h.inputs.rcv_rate_pps = 10_000;
        h.nak(1000);
        h.inputs.snd_curr_seq = SeqNo::new(5000).unwrap();
        h.nak(4000);
        assert_eq!(
            h.controls.pause_until,
            Some(h.inputs.now.plus_micros(SYN_US))
        );
        assert!((h.cc.min_inc(1500.0) - 1.0 / 1500.0).abs() < 1e-12);
    }

    #[test]
    fn paper_variant_spreads_extra_decreases_over_the_epoch() {
        let mut h = Harness::new(NativeConfig::paper());
        h.inputs.rcv_rate_pps = 10_000;
        h.nak(1000);
        // Build up a history of busy epochs: 40 NAKs each.
        let mut seq = 5000;
        for _ in 0..30 {
            seq += 1000;
            h.inputs.snd_curr_seq = SeqNo::new(seq).unwrap();
            h.nak(seq - 10);
            for i in 0..39 {
                h.nak(seq - 500 + i);
            }
        }
        // Unlike 4.11, the average counts every NAK of an epoch.
        assert!(h.cc.avg_nak_num > 30, "avg {}", h.cc.avg_nak_num);
        // One more epoch: extra decreases exactly at DecCount·DecRandom, at most four.
        seq += 1000;
        h.inputs.snd_curr_seq = SeqNo::new(seq).unwrap();
        h.nak(seq - 10);
        let r = h.cc.dec_random;
        let mut p = h.controls.pkt_snd_period_us;
        let mut at = vec![];
        for i in 2..=40i64 {
            h.nak(seq - 500 + i as u32);
            if h.controls.pkt_snd_period_us > p {
                at.push(i);
            }
            p = h.controls.pkt_snd_period_us;
        }
        let expected: Vec<i64> = (1..5).map(|d| d * r).filter(|&n| n <= 40).collect();
        assert_eq!(at, expected, "dec_random {r}");
    }

    #[test]
    fn timeout_leaves_slow_start() {
        let mut h = Harness::new(NativeConfig::default());
        h.inputs.rcv_rate_pps = 1000;
        h.with(|cc, ctx| cc.on_timeout(ctx));
        assert!(!h.cc.in_slow_start());
        assert_eq!(h.controls.pkt_snd_period_us, 1000.0);
    }
}
