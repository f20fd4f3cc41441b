//! TCP NewReno on UDT/CCC ("CTCP", paper 003 §4.2; RFC 5681, RFC 6582, RFC 6298), and the base
//! the loss-based TCP variants build on.
//!
//! Window-based: the inter-packet period is 0 and the congestion window alone limits sending.
//! The receiver acknowledges every [`ACK_INTERVAL_PKTS`] packets (TCP's delayed ACK), so the
//! window grows per acknowledged packet as in TCP:
//! * slow start: `cwnd += acked` while `cwnd < ssthresh` (initial window
//!   [`INITIAL_CWND_PKTS`], initial `ssthresh` = the peer's flow window);
//! * congestion avoidance: `cwnd += increase(cwnd)` per acknowledged packet, `1/cwnd` for
//!   NewReno (one packet per RTT);
//! * fast retransmit / fast recovery, once per window of data (NewReno's `recover` point);
//! * retransmission timeout: `ssthresh = decrease(cwnd)`, `cwnd = 1`, slow start again, and the
//!   RTO doubles at each consecutive timeout (RFC 6298 §5.5) until an ACK arrives.
//!
//! **Loss signal.** TCP learns of a loss from three duplicate ACKs. UDT has explicit loss
//! reports instead: the receiver sends a NAK as soon as it sees a gap, and never sends a repeated
//! ACK (4.11 drops a full ACK that does not advance; so does our engine, where
//! [`on_ack`](super::CongestionControl::on_ack) fires only for ACKs acknowledging new data).
//! A NAK is therefore the "three duplicate ACKs" event here: it arrives one RTT after the lost
//! packet was sent, as the third duplicate ACK would. The engine retransmits the reported
//! packets itself (the equivalent of TCP's SACK-based retransmission).
//!
//! **Fast recovery.** During TCP's fast recovery, each duplicate ACK inflates the window by one
//! packet, so about `ssthresh` new packets leave during the recovery RTT, clocked by the
//! duplicate ACKs. Without duplicate ACKs we reproduce that clock by pacing: the window is
//! opened by `ssthresh` packets beyond those in flight and the period is set to
//! `RTT / ssthresh`. An ACK beyond `recover` (the largest number sent when the loss was
//! reported) ends recovery: `cwnd = ssthresh`, period 0. Losses of packets sent before
//! `recover` belong to the same congestion event and are ignored (NewReno's partial ACK rule).
//!
//! The variants (Scalable, HighSpeed, BiC, Westwood) change only the increase and decrease
//! rules: they implement [`TcpRules`] and run as [`Tcp<Rules>`].

use super::{CcContext, CongestionControl};
use crate::seq::{SeqNo, SeqRange};

/// Initial congestion window, packets (RFC 5681 §3.1 for a 1500-byte MSS).
pub const INITIAL_CWND_PKTS: f64 = 2.0;
/// Smallest slow-start threshold, packets (RFC 5681: `max(FlightSize/2, 2·SMSS)`).
pub const MIN_SSTHRESH_PKTS: f64 = 2.0;
/// Full ACK every this many packets (TCP's delayed ACK, RFC 1122 / RFC 5681 §4.2).
pub const ACK_INTERVAL_PKTS: u32 = 2;
/// Lower bound of the retransmission timeout, µs (Linux's 200 ms; RFC 6298 says 1 s).
pub const MIN_RTO_US: u64 = 200_000;
/// Upper bound of the retransmission timeout after back-off, µs (RFC 6298 §2.5: at least 60 s).
pub const MAX_RTO_US: u64 = 60_000_000;

/// Sets a TCP retransmission timeout, µs: `max(RTT + 4·RTTVar, MIN_RTO_US)` (RFC 6298 §2)
/// doubled for each of `backoff` consecutive timeouts (§5.5), at most [`MAX_RTO_US`].
pub fn set_backed_off_rto(ctx: &mut CcContext<'_>, backoff: u32) {
    let base = (u64::from(ctx.rtt_us()) + 4 * u64::from(ctx.rtt_var_us())).max(MIN_RTO_US);
    let rto = base.saturating_mul(1 << backoff.min(16)).min(MAX_RTO_US);
    ctx.set_rto_us(rto);
}

/// The increase and decrease rules of a loss-based TCP; everything else is [`Tcp`]'s.
pub trait TcpRules: Send {
    /// Window increase in congestion avoidance for one acknowledged packet, packets, at window
    /// `cwnd` packets.
    fn increase(&mut self, ctx: &CcContext<'_>, cwnd: f64) -> f64;
    /// The slow-start threshold after a loss event at window `cwnd`, packets: the window fast
    /// recovery ends at.
    fn decrease(&mut self, ctx: &CcContext<'_>, cwnd: f64) -> f64;
    /// Every ACK that acknowledged `acked` new packets, before the window is updated (for
    /// estimators such as Westwood's bandwidth estimate).
    fn on_acked(&mut self, ctx: &CcContext<'_>, acked: u32) {
        let _ = (ctx, acked);
    }
}

/// NewReno's rules: one packet per RTT, halve on loss.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reno;

impl TcpRules for Reno {
    fn increase(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        1.0 / cwnd
    }
    fn decrease(&mut self, _: &CcContext<'_>, cwnd: f64) -> f64 {
        cwnd / 2.0
    }
}

/// TCP NewReno (CTCP).
pub type NewReno = Tcp<Reno>;

/// A window-based TCP with NewReno's machinery and the increase/decrease rules `R`.
#[derive(Debug)]
pub struct Tcp<R> {
    rules: R,
    /// Congestion window outside recovery, packets.
    cwnd: f64,
    /// Slow-start threshold, packets.
    ssthresh: f64,
    /// First unacknowledged packet as of the last ACK.
    last_ack: SeqNo,
    /// Largest number sent when the last loss event began (NewReno's `recover`).
    recover: SeqNo,
    in_recovery: bool,
    /// Consecutive timeouts without an ACK (RTO back-off exponent).
    backoff: u32,
}

impl Default for NewReno {
    fn default() -> Self {
        Tcp::new(Reno)
    }
}

impl<R: TcpRules> Tcp<R> {
    /// A TCP with the rules `rules`.
    pub fn new(rules: R) -> Self {
        Tcp {
            rules,
            cwnd: INITIAL_CWND_PKTS,
            ssthresh: f64::MAX,
            last_ack: SeqNo::from_masked(0),
            recover: SeqNo::from_masked(0),
            in_recovery: false,
            backoff: 0,
        }
    }

    /// The rules, for inspection.
    pub fn rules(&self) -> &R {
        &self.rules
    }

    /// Slow-start threshold, packets.
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    /// True between a loss report and the ACK that covers everything sent before it.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    fn set_rto(&self, ctx: &mut CcContext<'_>) {
        set_backed_off_rto(ctx, self.backoff);
    }

    fn apply(&mut self, ctx: &mut CcContext<'_>) {
        self.cwnd = self.cwnd.clamp(1.0, ctx.max_cwnd().max(1.0));
        ctx.set_cwnd_pkts(self.cwnd);
        ctx.set_pkt_snd_period_us(0.0);
    }
}

impl<R: TcpRules> CongestionControl for Tcp<R> {
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        self.last_ack = ctx.snd_curr_seq().next();
        self.recover = ctx.snd_curr_seq();
        self.ssthresh = ctx.max_cwnd().max(MIN_SSTHRESH_PKTS);
        ctx.set_ack_interval_pkts(ACK_INTERVAL_PKTS);
        self.set_rto(ctx);
        self.apply(ctx);
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        let acked = self.last_ack.offset_to(ack);
        if acked <= 0 {
            return;
        }
        self.last_ack = ack;
        self.backoff = 0;
        self.set_rto(ctx);
        let acked = acked as u32;
        self.rules.on_acked(ctx, acked);
        if self.in_recovery {
            if ack.is_after(self.recover) {
                // Full ACK: deflate to ssthresh (RFC 6582 §3.2 step 3).
                self.in_recovery = false;
                self.cwnd = self.ssthresh;
                self.apply(ctx);
            }
            // A partial ACK keeps the paced recovery going.
            return;
        }
        if self.cwnd < self.ssthresh {
            // Slow start, counting acknowledged packets (RFC 3465) but at most twice the ACK
            // interval per ACK (RFC 3465's L), so that a jump after a stall does not burst.
            self.cwnd += f64::from(acked.min(2 * ACK_INTERVAL_PKTS));
        } else {
            for _ in 0..acked.min(4 * ACK_INTERVAL_PKTS) {
                self.cwnd += self.rules.increase(ctx, self.cwnd);
            }
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
        if self.in_recovery || !newest.is_after(self.recover) {
            return; // the same congestion event (or a repeated report of it)
        }
        self.ssthresh = self.rules.decrease(ctx, self.cwnd).max(MIN_SSTHRESH_PKTS);
        self.recover = ctx.snd_curr_seq();
        self.in_recovery = true;
        let in_flight = f64::from(self.last_ack.offset_to(self.recover.next()).max(0) as u32);
        self.cwnd = self.ssthresh;
        // Paced recovery: `ssthresh` new packets over one RTT, as the duplicate-ACK clock
        // would release them.
        ctx.set_cwnd_pkts((in_flight + self.ssthresh).min(ctx.max_cwnd().max(1.0)));
        ctx.set_pkt_snd_period_us(f64::from(ctx.rtt_us().max(1)) / self.ssthresh);
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        if self.backoff == 0 {
            // Only the first timeout of a series reduces ssthresh (RFC 5681 §3.1, eq. 4 note).
            self.ssthresh = self.rules.decrease(ctx, self.cwnd).max(MIN_SSTHRESH_PKTS);
        }
        self.cwnd = 1.0;
        self.in_recovery = false;
        self.recover = ctx.snd_curr_seq();
        self.backoff = self.backoff.saturating_add(1);
        self.set_rto(ctx);
        self.apply(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testkit::Harness;

    fn reno() -> Harness {
        Harness::new(Box::new(NewReno::default()))
    }

    #[test]
    fn init_is_window_based_with_frequent_acks() {
        let h = reno();
        assert_eq!(h.period(), 0.0);
        assert_eq!(h.cwnd(), INITIAL_CWND_PKTS);
        assert_eq!(h.controls.ack_interval_pkts, ACK_INTERVAL_PKTS);
        assert_eq!(h.controls.rto_us, Some(MIN_RTO_US));
    }

    #[test]
    fn slow_start_doubles_per_round_trip() {
        let mut h = reno();
        let mut w = h.cwnd();
        for _ in 0..5 {
            h.round(100_000);
            assert_eq!(h.cwnd(), 2.0 * w);
            w = h.cwnd();
        }
    }

    #[test]
    fn congestion_avoidance_adds_one_packet_per_round_trip() {
        let mut h = reno();
        h.round(100_000);
        h.round(100_000); // cwnd 8
        let last = h.send(8);
        h.loss(last, last); // ssthresh 4, recovery
        h.ack(last.next()); // full ACK ends recovery at cwnd 4
        assert_eq!(h.cwnd(), 4.0);
        for _ in 0..20 {
            h.round(100_000);
        }
        // About one packet per round (a round sends floor(cwnd) packets, each adding 1/cwnd,
        // so a little less): 4 → 22.4 rather than 24, and far from slow start's doubling.
        assert!(h.cwnd() > 22.0 && h.cwnd() < 24.0, "{}", h.cwnd());
    }

    #[test]
    fn loss_halves_once_per_window_and_recovery_is_paced() {
        let mut h = reno();
        for _ in 0..4 {
            h.round(100_000); // cwnd 32
        }
        assert_eq!(h.cwnd(), 32.0);
        let first = h.inputs.snd_curr_seq.next();
        let last = h.send(32);
        h.loss(first.add(3), first.add(3));
        // Window: the 32 in flight plus ssthresh = 16 new ones, paced at RTT/16.
        assert_eq!(h.cwnd(), 48.0);
        assert!((h.period() - 100_000.0 / 16.0).abs() < 1e-6);
        // A second loss in the same window is the same event.
        h.loss(first.add(9), first.add(9));
        assert_eq!(h.cwnd(), 48.0);
        // A partial ACK does not end recovery.
        h.ack(first.add(3));
        assert_eq!(h.period(), 100_000.0 / 16.0);
        h.ack(last.next());
        assert_eq!(h.cwnd(), 16.0);
        assert_eq!(h.period(), 0.0);
        // A repeated (periodic) NAK of an old packet does not start a new event.
        h.loss(first.add(9), first.add(9));
        assert_eq!(h.cwnd(), 16.0);
    }

    #[test]
    fn timeout_restarts_slow_start_and_backs_off() {
        let mut h = reno();
        for _ in 0..4 {
            h.round(100_000);
        }
        h.send(32);
        h.timeout();
        assert_eq!(h.cwnd(), 1.0);
        assert_eq!(h.controls.rto_us, Some(2 * MIN_RTO_US));
        h.timeout();
        assert_eq!(h.controls.rto_us, Some(4 * MIN_RTO_US));
        // An ACK resets the back-off; slow start runs up to ssthresh = 16.
        let next = h.inputs.snd_curr_seq.next();
        h.ack(next);
        assert_eq!(h.controls.rto_us, Some(MIN_RTO_US));
        for _ in 0..6 {
            h.round(100_000);
        }
        assert!(h.cwnd() > 16.0 && h.cwnd() < 21.0, "{}", h.cwnd());
    }
}
