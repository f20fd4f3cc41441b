//! `udt`, the default congestion control: UDT's native DAIMD rate control (paper 000 §3,
//! [`NativeCc`] with [`NativeConfig::udt`]) made to hold on paths the papers' testbeds did not
//! have — receivers that get packets in clumps, ACKs that arrive in clumps, random loss, and
//! peers (UDT4 4.11) whose estimates are wrong on such paths. `docs/cc.md` explains each
//! rule and shows what it changes on the simulator's matrix of paths.
//!
//! It keeps the native increase and decrease rules and changes what they are fed and when
//! they run, from measurements the sender makes itself ([`CcContext`]'s delivery rate,
//! minimum RTT and latest RTT), which neither packet clumping nor the peer's implementation
//! can distort:
//!
//! 1. **Loss is congestion only when the path shows congestion**: the RTT has risen above its
//!    10 s minimum by a queueing threshold (1.5 ms, 4 packets' time or 2 RTTVar capped at
//!    the larger of 5 ms and a tenth of the minimum RTT, whichever is largest; for a flow
//!    under 0.9 of a credible capacity, which cannot have built the queue itself, 4 ms or
//!    0.9 of the fullest queue seen, whichever is less) and the queue is at least half the
//!    fullest seen in the last seconds (a DropTail queue drops when full; random loss
//!    strikes at any level), or more than 5 % of the packets of the last round trips were
//!    lost. Where the fullest queue seen stays under the threshold (a queue too shallow to
//!    reach it), a loss with the queue at 0.9 of that fullest counts, for any flow; one near
//!    a credible capacity is then alone with the queue, and its decrease stops 3 % under
//!    the capacity (see `UdtCc::loss_at_full_queue`). On a path that
//!    loses packets with no queue (a noisy link), a loss with a queue counts only when the
//!    last round trips lost more than twice what that background rate explains (see
//!    `RandomLoss`): a flow alone at the link rate holds a few milliseconds of queue of its
//!    own, and random losses there are not an overflow. After a decrease only the losses of
//!    packets sent since count in that test: the overflow's own, reported for a round trip
//!    more, are the event the decrease answered. Otherwise the loss
//!    is taken for random loss (a noisy link): the packets are retransmitted and the rate
//!    stays. Paper 000 §3.3.2's noisy-link rule ignores only the first loss of an event,
//!    which at 0.1 % loss and 1 Gbit/s (80 losses a second) is not enough. After a decrease,
//!    further losses wait 2·RTT + SYN, or only RTT + SYN when the queue is still nearly
//!    full (the decrease did not drain it: other flows, TCP among them, keep it full).
//!    Once an overflow has shown how deep the queue is, a flow that builds the queue to 0.6
//!    of that depth decreases before it overflows again (see `EarlyDecrease`). A queue too
//!    shallow to show in the RTT is caught by a fluid model of the queue the flow's own
//!    excess over a credible capacity would build (`OwnQueue`): when it holds twice what the
//!    RTT shows, the excess was dropped, and a loss is congestion (well under the capacity,
//!    where the model holds only a busy host's bursts, only if the losses also exceed the
//!    background's); the decrease then stops 3 % under the capacity.
//! 2. **The capacity the increase uses is checked.** UDT's increase depends on the spare
//!    capacity, link capacity minus the current rate. The receiver's packet-pair estimate is
//!    used only when it is at least the best delivery rate of the last seconds (a clumped
//!    receiver reports none, and a 4.11 receiver's reads several times the link); otherwise
//!    the spare capacity comes from the delivery rate: recovery up to the best delivery rate,
//!    then a probe that starts at 1/32 of the rate and doubles every 500 ms until a queue
//!    stands (in two full ACKs a SYN apart). While a queue stands without a credible
//!    capacity, the increase falls to its minimum and the rate is bounded to 1/16 above the
//!    best delivery rate (but never below 0.875 of the rate at the last congestion decrease:
//!    behind lost retransmissions the cumulative ACK, and with it the delivery rate, can
//!    creep at a fraction of the link). A queue *stands* when every RTT sample of the last
//!    50 ms shows it (`UdtCc::queue_standing`): a host that stalls now and then (a busy core,
//!    a user-space emulator) lifts only the samples taken during its stalls, and read one
//!    sample at a time such stalls held the probe for good.
//! 3. **Slow start ends on the path's signals, and paces.** It sends at twice the window's
//!    rate instead of in line-rate bursts, and ends when a queue shows (in two events in a
//!    row: one RTT sample can spike on a busy host), when the window passes
//!    a credible bandwidth-delay product, when the delivery rate stops growing for three round
//!    trips (with the window's rate over four times it), or on loss with congestion — and
//!    leaves at the rate the path delivered.
//!    With a credible capacity the rate never exceeds it by more than 1/16: the native
//!    increase never stops (0.01 packets per SYN at least), which at 10 Mbit/s and 400 ms
//!    doubled the rate while the queue filled. Without one, until its first congestion
//!    decrease, a flow keeps climbing by a quarter per round trip while no queue stands
//!    (`UdtCc::first_climb`): slow start often ends far below the link without congestion.
//!    The start-up after slow start (`UdtCc::startup_recovery`) survives congestion
//!    decreases until an RTT sample has shown slow start's own queue drained (or for 8 RTTs),
//!    and approaches a target over 8 times the best delivery rate only through twice that
//!    rate (a capacity that clumps squeezed).
//! 4. **The window covers random loss.** While random losses are being taken in stride, the
//!    window is four times rate × (RTT + SYN), up to eight at 1 % loss: packets behind a hole
//!    stay unacknowledged until the retransmission fills it, and a lost retransmission holds
//!    them for round trips more. The rate-control clock runs every SYN while sending, not
//!    only when an ACK advances (a hole stops the ACK for a round trip).
//! 5. **Flows that share a link grow alike.** Each increase is scaled by the time since the
//!    last one, so the phase of a flow's ACKs against the SYN clock no longer halves or
//!    doubles its increase, and this side's receiver reports the capacity of the packet
//!    pairs no other flow split (`CapacityEstimate::UnsplitPairs`): 4.11's estimate reads
//!    lower the smaller a flow's share, and the increase follows it.
//! 6. **Only a rate in use grows.** After slow start the increase (native, start-up or first
//!    climb) runs only while the sender used at least 0.8 of its rate over the last round
//!    trip (`RateUse`): held by its window behind holes, a flow's untested rate had climbed
//!    to twice the link and the burst that followed overflowed the queue.
//! 7. **A flow losing share gives up more.** When a congestion episode delivered less than
//!    0.97 of the one before it, per second, and the flow delivers more than half of a
//!    credible capacity but less than 0.95 of it (alone, it delivers the link), its decrease
//!    takes the rate to 0.71 of what it was instead of 8/9 (`ShareTrend`, CUBIC's fast
//!    convergence): with equal increases, flows that share a queue converge only through
//!    their decreases, which come seconds apart on long paths. Episodes with random losses
//!    are not compared (lost retransmissions move their means).
//! 8. **A flow alone drains the queue it builds.** A flow that delivers at least 0.9 of a
//!    credible capacity holds the link nearly alone. While a queue stands it sends a little
//!    under its delivery rate, the best of the last two RTTs: by the queue's depth per
//!    second, at least 0.5 % plus 3 % per (1 s + 2 RTT) the queue has stood, and at most
//!    3 % (`UdtCc::alone_drain_bound_pps`). The
//!    capacity a coalescing receiver reports can read a few per cent high, and the increase
//!    follows it over the link; the queue then grew to an overflow or an early decrease,
//!    which takes an eighth. A queue that stands longer than the drain takes (1 s + 2 RTT)
//!    belongs to another flow: the flow makes one native decrease, to make room, and follows
//!    the native rules for 10 s (`AloneDrain`). Without a credible capacity (a clumped
//!    receiver withholds it) the flow drains the same way under its delivery rate once the
//!    start-up is over, while that rate is at least 0.9 of the best of the last seconds and
//!    no loss has been reported for 4 RTTs; a queue that outlasts the drain then only ends
//!    the drain, with no decrease (`UdtCc::drain_delivery_pps`).

use super::native::{IncreaseRule, NativeCc, NativeConfig};
use super::own_queue::OwnQueue;
use super::rate_use::RateUse;
use super::share_trend::ShareTrend;
use super::{CcContext, CcInputs, CongestionControl, SeqNo, SeqRange};
use crate::time::Instant;

/// Rate headroom over the best recent delivery rate, as a fraction: the sender may exceed
/// what the path has delivered by this much while it probes for more.
const RATE_HEADROOM: f64 = 1.0 / 16.0;
/// Queueing delay that marks congestion, µs: above the RTT noise of clumped paths (a
/// receiver that coalesces for 125–250 µs delays ACKs by as much) and of real hosts (through
/// `udt relay` at 1 Gb/s the RTT wanders 0.5–1 ms above its minimum with no queue at the
/// bottleneck; at 500 µs that noise read as congestion and cost half the throughput)...
const QUEUE_THRESHOLD_US: f64 = 1500.0;
/// ... and above this many packets' worth at the path's rate...
const QUEUE_THRESHOLD_PKTS: f64 = 4.0;
/// ... and above this many times the RTT variation: real hosts add RTT noise of 0.5–1 ms
/// (scheduling, interrupt coalescing, a user-space emulator), which the simulator does not.
const QUEUE_THRESHOLD_RTT_VARS: f64 = 2.0;
/// ... but that share is at most the larger of this, µs, and [`QUEUE_NOISE_CAP_OF_MIN_RTT`]
/// of the minimum RTT. A queue that fills and empties swings the RTT by its own depth, and
/// the RTT variation follows: at 100 Mb/s, 400 ms, 2 RTTVar hid a 316 ms queue, the rate
/// rose to 1.5 times the link with the queue full, and 25 % of the packets were lost for
/// 2 s; at the end of a start-up it hid a 150 ms queue and the overflow's losses counted
/// as the link's own (see `RandomLoss`).
const QUEUE_NOISE_CAP_US: f64 = 5000.0;
/// See [`QUEUE_NOISE_CAP_US`].
const QUEUE_NOISE_CAP_OF_MIN_RTT: f64 = 0.1;
/// A loss fraction above this over the last round trips is congestion whatever the RTT says:
/// a queue too short to show in the RTT (a few packets at 10 Gbit/s hold microseconds)
/// overflows without a delay signal, and random loss of a few percent is already more than
/// any link layer worth using delivers.
const CONGESTION_LOSS_FRACTION: f64 = 0.05;
/// A flow sending below this fraction of a credible link capacity cannot have built a queue
/// itself...
const OWN_QUEUE_RATE_FRACTION: f64 = 0.9;
/// ... so a loss counts as congestion only over a queue of this many µs, which others keep
/// (TCP fills the whole buffer). Below it, a lasting RTT rise of 1.5–2.2 ms is what a busy
/// host adds at 60–80 % of 1 Gbit/s (`udt relay`, two cores shared by sender, relay and
/// receiver), with no packet queued at the bottleneck. A queue that never gets that deep
/// overflows below it: there [`QUEUE_STILL_FULL_FRACTION`] of the fullest queue seen
/// counts instead (four flows sharing a 1 ms queue at 1 Gb/s, 1 ms took every loss as random
/// and lost 2 % of their packets at a Jain index of 0.36; 0.05 % and 1.00 with this rule).
const OTHERS_QUEUE_THRESHOLD_US: f64 = 4000.0;
/// Before its first congestion a flow counts a loss at the queue it reads as full (see
/// [`UdtCc::loss_at_full_queue`]) as an overflow only if that queue holds at least this
/// fraction of the minimum RTT. Until then the fullest queue it has seen is only the RTT's
/// noise, and a random loss finds the queue "full" whenever a sample is up. Through `udt
/// relay` (1 Gb/s, 100 ms, clumped, 0.1 % loss) the RTT wanders 0–2 ms over its minimum at
/// any rate; in three traced starts of 18, a random loss 3–350 ms after slow start, with 1.9,
/// 4.2 and 7.1 ms in the latest sample, counted as the first congestion (this rule covers the
/// first two). That ends the first climb and the start-up, and without a capacity (a clumped
/// receiver reports none) only the probe is left: 84 → 96 Mb/s in 3.6 s in one trace, and
/// 600–760 Mb/s over 30 s in (untraced) runs that started as slowly, against 860–900. A
/// real overflow of a queue shallower than this fraction still counts through the loss
/// fraction ([`CONGESTION_LOSS_FRACTION`]), which the first climb's quarter per round trip
/// should pass; no sweep has a queue that shallow at 30 ms or more. The rule binds only where 0.05 of the
/// minimum RTT is above the loss threshold, from 30 ms up.
const FIRST_OVERFLOW_OF_MIN_RTT: f64 = 0.05;
/// A loss with the queue at least this fraction of the fullest recently seen is congestion.
const QUEUE_FULL_FRACTION: f64 = 0.5;
/// Where the fullest queue seen recently is below the loss threshold (a queue too shallow to
/// show in the RTT), a loss with the queue at this fraction of the fullest is congestion.
/// Four flows sharing a queue of 17 packets at 1 Gb/s, 2 ms (0.2 ms) never reached the 1 ms
/// threshold: every loss counted as random, and they lost 2 % of their packets at a Jain
/// index of 0.44 (UDT4 4.11: 0.004 %, 0.997).
const SHALLOW_FULL_FRACTION: f64 = 0.9;
/// ... over a queue above [`UdtCc::queue_threshold_us`], whose floor
/// ([`QUEUE_THRESHOLD_US`]) is lowered to this fraction of the minimum RTT if that is less
/// (the packets' and the noise's shares stay): a one-BDP queue of a path shorter than the
/// floor never reaches it. At 300 Mb/s, 1 ms, the queue held
/// 0.9 ms when it overflowed, every loss counted as random, the rate crept to 1.02 times the
/// link and 1.5 % of the packets were lost. A wrong decrease costs little on such a path:
/// the rate regains it within a few SYNs.
const SHORT_PATH_QUEUE_OF_MIN_RTT: f64 = 0.5;
/// A loss within the hold after a decrease still counts when the queue is at least this
/// fraction of the fullest seen: the decrease has not drained it (other flows keep it full,
/// as TCP does when it shares the queue), so the congestion persists.
const QUEUE_STILL_FULL_FRACTION: f64 = 0.9;
/// The wait for a second decrease after a round trip, in units of the queueing delay: the
/// time a queue takes to fall to [`QUEUE_STILL_FULL_FRACTION`] of its depth while it drains at
/// an eighth of the link, (1 - 0.9) × 8.
const QUEUE_FALL_WAIT_OF_DELAY: f64 = 0.8;
/// A loss is congestion, whatever the delay shows, when the flow's own excess over a credible
/// capacity would have queued this many times what the RTT shows (and the threshold) if the
/// queue could hold it: the queue is shallower than the excess (see [`OwnQueue`]).
const UNSEEN_QUEUE_RATIO: f64 = 2.0;
/// ... and, while the losses stay within the background, when the flow sends at least this
/// fraction of the capacity (see `UdtCc::loss_cause`).
const UNSEEN_OWN_EXCESS_OF_CAPACITY: f64 = 0.97;
/// A decrease for a loss only the flow's own excess explains takes the rate to this fraction
/// below the credible capacity, if the native decrease went lower (see
/// [`UdtCc::decrease_to_capacity`]).
const EXCESS_DECREASE: f64 = 0.03;
/// A flow alone at its bottleneck sends under its delivery rate by this fraction per µs of
/// standing queue (see [`UdtCc::alone_drain_bound_pps`]): a queue of q µs drains in about
/// 1 s whatever its depth, up to [`EXCESS_DECREASE`].
const ALONE_DRAIN_PER_US: f64 = 1e-6;

/// The least a flow alone at its bottleneck sends under its delivery rate while a queue
/// stands, as a fraction: its own queue then drains within a fraction of a second, and one
/// that stands longer is another flow's (see [`AloneDrain`]).
const ALONE_DRAIN_MIN: f64 = 0.005;
/// See [`UdtCc::alone_drain_max_us`], µs.
const ALONE_DRAIN_MAX_US: u64 = 1_000_000;
/// A flow whose queue outlasted its drain does not count itself alone for this long, µs.
const ALONE_DOUBT_US: u64 = 10_000_000;
/// Round trips without a loss report before a flow without a credible capacity trusts its
/// delivery rate enough to drain under it (see [`UdtCc::drain_delivery_pps`]).
const DRAIN_CLEAN_RTTS: u64 = 4;
/// Shortest span over which [`UdtCc::standing_delivery_pps`] counts, µs.
const STANDING_MEAN_MIN_US: u64 = 100_000;

/// Whether a flow that delivers nearly all of a credible capacity is alone at its
/// bottleneck, and so may drain the queue it builds by sending a little under its delivery
/// rate (see [`UdtCc::alone_drain_bound_pps`]) instead of waiting for the native decrease.
///
/// A newcomer's packets stand in the queue too, and the incumbent's drain would only yield
/// what the newcomer takes: behind the small queue the drain leaves, a newcomer's rate probe
/// stays at its first step (1 Gb/s, 100 ms, a second flow joining one alone: Jain 0.92 over
/// the 50 s after, against 0.996 with native decreases). So a queue that stands longer than
/// the drain takes ([`UdtCc::alone_drain_max_us`]) is another flow's, and the flow falls back
/// to the native rules (overflow and early decreases, through which shares converge) for
/// [`ALONE_DOUBT_US`].
#[derive(Clone, Copy, Debug, Default)]
struct AloneDrain {
    /// Since when the queue has stood while the flow could drain it (see
    /// [`UdtCc::drain_delivery_pps`]), if it has.
    standing_since: Option<Instant>,
    /// The flow does not count itself alone until then.
    not_alone_until: Option<Instant>,
    /// When the queue was first seen standing, and the packets acknowledged by then: the
    /// bottleneck is busy all the while, so what is acknowledged since, per second, is its
    /// rate (a flow alone) exactly, where the best of a few RTTs reads its high tail.
    standing_mark: Option<(Instant, u64)>,
    /// Decreases made on finding the flow not alone.
    yields: u64,
}

/// Why a loss counts as congestion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CongestionCause {
    /// A queue near full, or more loss than a noisy link causes.
    Overflow,
    /// The flow's excess over a credible capacity, which a queue too shallow to show in the
    /// RTT cannot hold (see [`UdtCc::queue_unseen`]), or that filled such a queue while the
    /// flow sent near the capacity, alone (see [`UdtCc::loss_cause`]).
    ExcessOverCapacity,
}

/// The loss fraction over the last two intervals of about a round trip each: packets first
/// reported lost, over the packets they were lost among. The receiver finds gaps in the order
/// packets arrive, so a first report is always beyond the last one counted; a report of older
/// packets is a repeat (the receiver's NAK timer, or a lost retransmission) and does not count
/// again. Counting repeats read 1 % random loss at 100 ms as 5–20 % (every missing packet is
/// reported again each NAK interval) and set off decreases that no queue justified.
///
/// The packets lost among are the larger of two counts over the same interval: new packets
/// sent, and sequence numbers the receiver's reports moved past (from the last loss counted
/// to the newest). Sent packets alone fail when the sender stops: reports describe packets
/// sent a round trip earlier, and a sender whose window is full behind a hole sends almost
/// nothing for a while (through `udt relay` at 1 % loss, 12 losses reported while 16 packets
/// were sent read as 37 %, and a decrease followed about once a second). The span alone fails
/// when two random losses fall close together (2 % of them at 0.1 % loss fall within 20
/// packets, and read as 5 %). The span has a weakness of its own: the first report after a
/// long loss-free stretch spans all of it, which dilutes the onset of an overflow; four
/// staggered flows at 100 Mb/s, 10 ms shared at Jain 0.977 with this rule against 0.996
/// before it (a version that lagged the sent count by one interval instead did better there
/// and worse on clumped 10 ms paths).
#[derive(Clone, Debug, Default)]
struct LossFraction {
    /// (when, sent, examined, lost) at the start of the current interval and of the one
    /// before.
    current: (Instant, u64, u64, u64),
    previous: (Instant, u64, u64, u64),
    /// The highest sequence number counted as lost, and the sender's sequence number when the
    /// counts were last brought up to date.
    lost_edge: Option<SeqNo>,
    sent_mark: Option<SeqNo>,
    /// Since the start: new packets sent, sequence numbers from the first loss counted to
    /// `lost_edge`, and packets first reported lost among them.
    sent: u64,
    examined: u64,
    lost: u64,
    /// (sent, examined, lost) at the last [`LossFraction::restart`], if any.
    restarted: Option<(u64, u64, u64)>,
}

impl LossFraction {
    /// Counts a loss report made when the sender's latest sequence number was `curr`, and
    /// starts a new interval every `interval_us`.
    /// Returns the packets it counted as first reported lost, and the sequence numbers they
    /// were lost among (see [`RandomLoss`]).
    fn on_report(
        &mut self,
        now: Instant,
        interval_us: u64,
        curr: SeqNo,
        losses: &[SeqRange],
    ) -> (u64, u64) {
        let (lost_before, examined_before) = (self.lost, self.examined);
        if let Some(mark) = self.sent_mark {
            self.sent += mark.offset_to(curr).max(0) as u64;
        }
        self.sent_mark = Some(curr);
        for r in losses {
            let first = match self.lost_edge {
                Some(edge) if !r.last.is_after(edge) => continue,
                Some(edge) if !r.first.is_after(edge) => edge.next(),
                _ => r.first,
            };
            self.lost += u64::from(first.range_len(r.last));
            self.examined += match self.lost_edge {
                Some(edge) => edge.offset_to(r.last).max(0) as u64,
                None => u64::from(first.range_len(r.last)),
            };
            self.lost_edge = Some(r.last);
        }
        if now.micros_since(self.current.0) >= interval_us {
            self.previous = self.current;
            self.current = (now, self.sent, self.examined, self.lost);
        }
        (self.lost - lost_before, self.examined - examined_before)
    }

    /// Starts the count afresh at a congestion decrease made when the sender's latest sequence
    /// number was `curr`: from now on only losses of packets sent after it count. The losses
    /// of packets sent before it are the event the decrease answered; they are reported for
    /// a round trip and more after it (a clumped receiver, a NAK timer), and counted among the
    /// recent losses they made a random loss of a later packet look like a second overflow.
    /// A flow alone at 1 Gb/s, 10 ms drains its own full queue in about 120 ms after a
    /// decrease of 1/9, and such a loss 30–60 ms after the decrease took a second 1/9 off
    /// the rate at every congestion event (0.886 of the link at 0.1 % random loss, clumped).
    fn restart(&mut self, now: Instant, curr: SeqNo) {
        if let Some(mark) = self.sent_mark {
            self.sent += mark.offset_to(curr).max(0) as u64;
        }
        self.sent_mark = Some(curr);
        self.lost_edge = Some(match self.lost_edge {
            Some(edge) if edge.is_after(curr) => edge,
            _ => curr,
        });
        self.current = (now, self.sent, self.examined, self.lost);
        self.previous = self.current;
        self.restarted = Some((self.sent, self.examined, self.lost));
    }

    /// Packets first reported lost since the last [`LossFraction::restart`], and the packets
    /// they were lost among (`None` before the first restart).
    fn since_restart(&self) -> Option<(u64, u64)> {
        self.restarted.map(|(sent, examined, lost)| {
            (
                self.lost - lost,
                (self.sent - sent).max(self.examined - examined),
            )
        })
    }

    /// Packets first reported lost since the start of the previous interval, and the packets
    /// they were lost among.
    fn recent(&self) -> (u64, u64) {
        let sent = self.sent.saturating_sub(self.previous.1);
        let examined = self.examined.saturating_sub(self.previous.2);
        (
            self.lost.saturating_sub(self.previous.3),
            sent.max(examined),
        )
    }

    /// Lost over the packets lost among since the start of the previous interval (0 with
    /// fewer than [`LOSS_FRACTION_MIN_AMONG`] of those).
    fn fraction(&self) -> f64 {
        let (lost, among) = self.recent();
        if among < LOSS_FRACTION_MIN_AMONG {
            0.0
        } else {
            lost as f64 / among as f64
        }
    }

    /// True when enough packets have been counted to tell and the recent losses are no more
    /// than a link worth using loses ([`RANDOM_LOSS_LEARN_MAX`]), give or take
    /// [`RANDOM_LOSS_SLACK_PKTS`]: over 100 packets, three random losses are chance (a
    /// path that stalls now and then reports its losses in bunches), over 10 000 they are
    /// not.
    fn below_link_loss(&self) -> bool {
        let (lost, among) = self.recent();
        among >= LOSS_FRACTION_MIN_AMONG
            && lost as f64 <= RANDOM_LOSS_LEARN_MAX * among as f64 + RANDOM_LOSS_SLACK_PKTS
    }
}

/// A [`LossFraction`] over fewer packets than this says nothing.
const LOSS_FRACTION_MIN_AMONG: u64 = 100;

/// The path's background loss rate: losses first reported while no queue showed, over the
/// sequence numbers they were lost among, over the 5–10 s before the last such report. A
/// DropTail queue cannot drop while it is empty, so these losses are the link's own (a noisy
/// link), and a congestion event must lose more than they explain.
///
/// Without this, a flow alone at the link rate on a lossy path (through `udt relay` at
/// 1 Gb/s, 100 ms, one-BDP queue, 0.1 % loss) took a random loss for congestion every 3–4 s:
/// its own few milliseconds of queue at the link rate (2–6 ms, against 100 ms the queue
/// holds) were the fullest it had seen, and every decrease cost 5–10 s of recovery.
///
/// Random loss is part of all loss, so a background that every loss of the last 5–10 s
/// contradicts is set aside ([`BACKGROUND_CONTRADICTED`]). A flow that keeps a queue of its
/// own learns nothing while it shows, and keeps the last background it learnt (at 100 Mb/s,
/// 100 ms with 1 % loss, a background that lapsed after 10 s instead took the flow from 0.938
/// to 0.870 of the link); but a background learnt from a start-up's losses, on a path that
/// loses nothing afterwards, excused that flow's share of every overflow for good (two flows
/// at 1 Gb/s, 10 ms, 83 packets of queue, once losses at a half-full queue no longer taught
/// the background: one learnt 0.9 % in its first second and held 0.98 of the link 30 s
/// later, Jain 0.57).
#[derive(Clone, Debug, Default)]
struct RandomLoss {
    /// The losses learnt as the background.
    learned: LossBuckets,
    /// Every loss.
    all: LossBuckets,
}

/// Losses and the packets they were lost among, in two buckets of [`RANDOM_LOSS_BUCKET_US`].
#[derive(Clone, Copy, Debug, Default)]
struct LossBuckets {
    /// (start, lost, among) of the current bucket, and (lost, among) of the previous one.
    current: (Instant, u64, u64),
    previous: (u64, u64),
}

impl LossBuckets {
    /// The buckets as they stand at `now`, summed: (lost, among). A bucket ends
    /// [`RANDOM_LOSS_BUCKET_US`] after it started, whether or not anything is added.
    fn at(&self, now: Instant) -> (u64, u64) {
        let age = now.micros_since(self.current.0);
        let (lost, among) = (self.current.1, self.current.2);
        if age < RANDOM_LOSS_BUCKET_US {
            (lost + self.previous.0, among + self.previous.1)
        } else if age < 2 * RANDOM_LOSS_BUCKET_US {
            (lost, among)
        } else {
            (0, 0)
        }
    }

    /// The buckets as they stood when last added to, summed: (lost, among).
    fn last(&self) -> (u64, u64) {
        (
            self.current.1 + self.previous.0,
            self.current.2 + self.previous.1,
        )
    }

    /// Counts `lost` packets among `among` at `now`.
    fn add(&mut self, now: Instant, lost: u64, among: u64) {
        if now.micros_since(self.current.0) >= RANDOM_LOSS_BUCKET_US {
            // The current bucket has ended: what is left of both at `now` is the new previous.
            self.previous = self.at(now);
            self.current = (now, 0, 0);
        }
        self.current.1 += lost;
        self.current.2 += among;
    }
}

/// Losses count towards the background only while the recent loss fraction is at most this:
/// a link that loses more is not one worth using (and the targets ask for 1 %).
const RANDOM_LOSS_LEARN_MAX: f64 = 0.025;
/// Length of a [`RandomLoss`] bucket, µs.
const RANDOM_LOSS_BUCKET_US: u64 = 5_000_000;
/// Packets a [`RandomLoss`] estimate needs behind it: at 0.1 % loss, ten losses...
const RANDOM_LOSS_MIN_AMONG: u64 = 10_000;
/// ... or, until the first congestion decrease, this many losses among at least
/// [`RANDOM_LOSS_MIN_AMONG_LOSSY`] packets: a lossier link shows its rate sooner. Just out of
/// slow start at 40 Mb/s on a 1 % lossy path (through `udt relay`, 1 Gb/s, 200 ms), 10 000
/// packets take 3 s; before then a random loss with the 2.5 ms queue the start-up's paced
/// bursts left counted as congestion, and that ended the start-up: 15–20 s of linear climb
/// to the link. Only until then: a queue of a few packets overflows without showing in the
/// RTT, and its losses count as the link's; with the shortcut for good, a 10 Mb/s, 1 ms path
/// with 0.1 % loss retransmitted 5.3 % of its packets (1.1 % without).
const RANDOM_LOSS_MIN_LOST: u64 = 10;
/// The packets [`RANDOM_LOSS_MIN_LOST`] losses must be among: ten losses among fewer say more
/// about one burst than about the link.
const RANDOM_LOSS_MIN_AMONG_LOSSY: u64 = 1_000;
/// A background is set aside while every loss of the last 5–10 s, over at least
/// [`RANDOM_LOSS_MIN_AMONG`] packets, comes to less than this fraction of what it explains
/// (at 0.1 % over 10 000 packets, two losses or fewer where ten are expected: once in about
/// 360 such counts by chance).
const BACKGROUND_CONTRADICTED: f64 = 0.25;
/// A loss is congestion only when the recent losses exceed this many times what the
/// background loss rate explains, ...
const RANDOM_LOSS_MARGIN: f64 = 2.0;
/// ... plus this many packets (random losses being Poisson: with 17 expected, as over two
/// round trips at 1 Gb/s, 100 ms and 0.1 % loss, the 38 or more that count happen by chance
/// once in about 1.3 × 10⁵ tries; with one expected, 6 or more once in about 1 700).
const RANDOM_LOSS_SLACK_PKTS: f64 = 3.0;

impl RandomLoss {
    /// Counts `lost` packets among `among`, reported while no queue showed.
    fn add(&mut self, now: Instant, lost: u64, among: u64) {
        self.learned.add(now, lost, among);
    }

    /// Counts every loss report: `lost` packets among `among`.
    fn observe(&mut self, now: Instant, lost: u64, among: u64) {
        self.all.add(now, lost, among);
    }

    /// The background loss fraction at `now`, once enough packets are behind it (`early`: or
    /// enough losses, see [`RANDOM_LOSS_MIN_LOST`]); `None` while every loss of the last
    /// 5–10 s contradicts it ([`BACKGROUND_CONTRADICTED`]).
    fn fraction(&self, now: Instant, early: bool) -> Option<f64> {
        let (lost, among) = self.learned.last();
        let enough = among >= RANDOM_LOSS_MIN_AMONG
            || (early && lost >= RANDOM_LOSS_MIN_LOST && among >= RANDOM_LOSS_MIN_AMONG_LOSSY);
        let learned = enough.then(|| lost as f64 / among as f64)?;
        let (all_lost, all_among) = self.all.at(now);
        let contradicted = all_among >= RANDOM_LOSS_MIN_AMONG
            && (all_lost as f64) < BACKGROUND_CONTRADICTED * learned * all_among as f64;
        (!contradicted).then_some(learned)
    }

    /// True when `lost` of `among` packets is more than background loss explains at `now`
    /// (always, while no background is known; `early` as for [`RandomLoss::fraction`]).
    fn exceeded_by(&self, now: Instant, lost: u64, among: u64, early: bool) -> bool {
        match self.fraction(now, early) {
            Some(p) if p > 0.0 => {
                let expected = p * among as f64;
                lost as f64 > RANDOM_LOSS_MARGIN * expected + RANDOM_LOSS_SLACK_PKTS
            }
            _ => true,
        }
    }
}

/// Without a credible capacity, a rate below this fraction of the best recent delivery rate
/// recovers towards it (the spare capacity is the difference); above it, the rate probes.
/// The delivery rate is noisy by a few per cent (ACK timing, holes), so "at the best rate"
/// has this margin.
const RECOVERY_BELOW: f64 = 0.9;

/// Without a credible capacity, the spare capacity above the best delivery rate starts at
/// this fraction of the rate...
const PROBE_START: f64 = 1.0 / 32.0;
/// ... and doubles every this many µs without congestion (whatever the RTT, like UDT's
/// increase, so that flows of different RTTs probe alike).
const PROBE_DOUBLING_US: u64 = 500_000;
/// How long the recovery after a congestion decrease aims at the delivery rate the decrease
/// saw, µs (see [`UdtCc::recovery_target_pps`]).
const RECOVERY_MEMORY_US: u64 = 10_000_000;
/// The recovery after a congestion decrease, without a credible capacity, takes this many
/// times the gap to its target as spare capacity (plus the probe's first step, so that it
/// passes the target).
const RECOVERY_GAP_GAIN: f64 = 3.0;
/// The empty-path climb (see [`UdtCc::empty_path_climb`]) stops at this fraction of a
/// credible capacity ...
const EMPTY_PATH_UNTIL: f64 = 0.9;
/// ... and at this multiple of the best delivery rate of the last seconds ...
const EMPTY_PATH_MAX_OF_DELIVERY: f64 = 2.0;
/// ... and runs only once neither congestion nor a standing queue has been seen for this
/// long, µs ...
const EMPTY_PATH_QUIET_US: u64 = 3_000_000;
/// ... nor for this many RTTs ...
const EMPTY_PATH_QUIET_RTTS: u64 = 10;
/// ... and closes the gap to there with this time constant, µs.
const EMPTY_PATH_TIME_CONSTANT_US: u64 = 1_000_000;
/// How long the best delivery rate is remembered, µs (at least; or ten round trips).
const DELIVERY_MEMORY_US: u64 = 2_000_000;

/// Slow start's full-pipe check: a window that doubles every round trip should make the
/// delivery rate grow; when the best delivery rate has not grown by [`PLATEAU_GROWTH`] in
/// [`PLATEAU_ROUNDS`] round trips, the pipe is full — whatever the RTT and loss say. On a
/// path whose queue holds a few packets neither shows before the queue overflows, and random
/// loss at the same time makes that overflow look like noise.
#[derive(Clone, Debug, Default)]
struct Plateau {
    /// Start of the current round and the best delivery rate then, packets/s.
    round: Option<(Instant, f64)>,
    /// Rounds in a row without growth.
    flat_rounds: u32,
}

/// Growth per round that counts as growth (BBR's full-pipe rule uses the same 25 %).
const PLATEAU_GROWTH: f64 = 1.25;
/// Rounds without growth that end slow start.
const PLATEAU_ROUNDS: u32 = 3;
/// ... once the window's rate exceeds the best delivery rate by this factor: in a healthy
/// slow start delivery lags the window by one doubling (a factor 2); at a full pipe the
/// window keeps doubling while delivery stays, and passes 4 two round trips later.
const PLATEAU_WINDOW_RATIO: f64 = 4.0;

impl Plateau {
    /// Called at each slow-start event; true once the delivery rate has stopped growing.
    fn delivery_stalled(&mut self, now: Instant, rtt_us: u32, best_pps: f64) -> bool {
        let round_us = u64::from(rtt_us).max(crate::time::SYN_US);
        match self.round {
            None => self.round = Some((now, best_pps)),
            Some((start, base)) if now.micros_since(start) >= round_us => {
                if best_pps >= PLATEAU_GROWTH * base || base <= 0.0 {
                    self.flat_rounds = 0;
                    self.round = Some((now, best_pps));
                } else {
                    self.flat_rounds += 1;
                    self.round = Some((now, base));
                }
            }
            Some(_) => {}
        }
        self.flat_rounds >= PLATEAU_ROUNDS
    }
}

/// The start-up after slow start (see [`UdtCc::startup_recovery`]).
#[derive(Clone, Copy, Debug)]
struct Startup {
    /// When slow start ended.
    left_at: Instant,
    /// Packets in flight over the RTT when a queue ended slow start, packets/s.
    pipe_pps: Option<f64>,
    /// A target is known and the rate is being raised towards it.
    recovering: bool,
    /// When a target was first known (the start-up's lifetime counts from then).
    target_since: Option<Instant>,
    /// Last step towards the target.
    last_step: Instant,
    /// An RTT sample has shown no queue since slow start ended: the queue its last bursts
    /// built has drained.
    drained: bool,
    /// A congestion decrease came two round trips or more after slow start ended, and the
    /// start-up went on (before a target was known, or before slow start's queue drained).
    outlived_decrease: bool,
}

/// The decrease a flow makes before the queue it builds overflows.
///
/// A DropTail queue overflows at the same depth every time. Once a congestion loss has shown
/// that depth, a flow that sends faster than the path delivers and has filled the queue to
/// [`EARLY_DEPTH_FRACTION`] of it decreases as if the overflow had come: the same
/// multiplicative step, so flows that share the queue still converge as they do on loss, but
/// without the overflow's holes. Those holes cost more than the retransmissions: the
/// cumulative ACK waits behind them, the delivery rate reads low for a round trip, and a
/// second decrease often followed (through `udt relay` at 1 Gbit/s, 100 ms, one-BDP queue,
/// a flow alone overflowed every 5–7 s and delivered 866–914 Mb/s in the second of each
/// overflow against 971 between them).
///
/// The step is at least deep enough to drain the queue. Behind one FIFO queue every flow
/// sees its packets delivered at the same fraction of what it sent (the link over what
/// arrives), so the native step (the period × 1.125: the rate × 8/9) leaves flows that
/// together send more than 9/8 of the link above it: eight flows of 1–350 ms on 1.5 Gb/s
/// sent 15–20 % more than they delivered after their early decreases, the queue overflowed a
/// second later, and 2.5 % of all packets were dropped. Each flow therefore also scales its
/// rate by that fraction, less [`EARLY_DRAIN_OF_PASSED`]: the same factor for every flow,
/// so shares are kept.
///
/// Only a queue the flow builds itself is answered early: after an early decrease, the next
/// one waits until the queue has drained below [`EARLY_REARM_FRACTION`] of the depth. A
/// queue that others keep full (TCP fills the whole buffer) does not drain after our
/// decrease, and the flow falls back to answering losses, as before.
#[derive(Clone, Copy, Debug, Default)]
struct EarlyDecrease {
    /// Queueing delay at the last congestion loss, µs: the depth at which the queue overflows.
    depth_us: Option<f64>,
    /// An early decrease may come: the queue has drained since the last decrease.
    armed: bool,
    /// Early decreases made.
    count: u64,
}

/// An early decrease comes when the queue reaches this fraction of the depth at which it
/// last overflowed: far enough below it that the round trip the decrease takes to show does
/// not reach the overflow, deep enough that the queue does not empty before the rate recovers.
const EARLY_DEPTH_FRACTION: f64 = 0.6;
/// The next early decrease waits until the queue has drained below this fraction of the depth.
const EARLY_REARM_FRACTION: f64 = 0.25;
/// A depth under this many queueing thresholds is too shallow to act before: the RTT noise
/// alone reaches a fraction of it.
const EARLY_MIN_DEPTH_THRESHOLDS: f64 = 4.0;
/// An early decrease takes the rate at least to this fraction of the rate the queue passes
/// (see [`UdtCc::queue_pass_rate_pps`]), so that the queue drains whoever else fills it.
const EARLY_DRAIN_OF_PASSED: f64 = 0.95;
/// ... but never below this fraction of the rate before it. (The step is not taken at all
/// within two RTTs of a loss report: behind the holes the delivery rate reads low, and so
/// does the pass ratio; at 1 % random loss on clumped 1 Gb/s, 100 ms, a step taken then cut
/// a flow alone to 0.752 of the link, from 0.941.)
const EARLY_DRAIN_FLOOR: f64 = 0.5;

/// A maximum over a sliding time window, kept as a few sub-window maxima.
#[derive(Clone, Debug, Default)]
struct WindowedMax {
    slots: [Option<(Instant, f64)>; 4],
}

impl WindowedMax {
    fn update(&mut self, now: Instant, window_us: u64, v: f64) {
        let slot_us = (window_us / 4).max(1);
        match &mut self.slots[3] {
            Some((start, m)) if now.micros_since(*start) < slot_us => *m = m.max(v),
            _ => {
                self.slots.rotate_left(1);
                self.slots[3] = Some((now, v));
            }
        }
        for s in &mut self.slots {
            if s.is_some_and(|(start, _)| now.micros_since(start) >= window_us) {
                *s = None;
            }
        }
    }

    /// The maximum of the sub-windows that began less than `window_us` before `now`; `None`
    /// if there are none. (Between updates, the sub-windows age without being dropped.)
    fn peak_at(&self, now: Instant, window_us: u64) -> Option<f64> {
        self.slots
            .iter()
            .flatten()
            .filter(|&&(start, _)| now.micros_since(start) < window_us)
            .map(|&(_, m)| m)
            .reduce(f64::max)
    }

    /// The maximum over the window as of the last update, or 0 before any sample.
    fn get(&self) -> f64 {
        self.slots
            .iter()
            .flatten()
            .map(|&(_, m)| m)
            .fold(0.0, f64::max)
    }
}

/// How long the lowest credible capacity counts for the test of a flow alone, µs (see
/// [`UdtCc::alone_delivery_pps`]): several of the swings of an estimate that batched delivery
/// lifts, which last up to a second or two.
const CAPACITY_FLOOR_MEMORY_US: u64 = 5_000_000;

/// A minimum over a sliding time window: the maximum of the values negated.
#[derive(Clone, Debug, Default)]
struct WindowedMin(WindowedMax);

impl WindowedMin {
    fn update(&mut self, now: Instant, window_us: u64, v: f64) {
        self.0.update(now, window_us, -v);
    }

    /// The minimum of the sub-windows that began less than `window_us` before `now`;
    /// `None` if there are none.
    fn get_at(&self, now: Instant, window_us: u64) -> Option<f64> {
        self.0.peak_at(now, window_us).map(|v| -v)
    }
}

/// The default algorithm (see the module documentation).
#[derive(Clone, Debug)]
pub struct UdtCc {
    native: NativeCc,
    /// Best delivery rate over the last [`DELIVERY_MEMORY_US`] (or ten RTTs), packets/s.
    best_delivery: WindowedMax,
    /// Best delivery rate over the last two RTTs (at least [`STANDING_QUEUE_WINDOW_US`]),
    /// packets/s: what the path delivers now, without the dips of single samples.
    recent_delivery: WindowedMax,
    /// Lowest credible capacity over the last [`CAPACITY_FLOOR_MEMORY_US`], packets/s (see
    /// [`UdtCc::alone_delivery_pps`]).
    capacity_floor: WindowedMin,
    /// Whether the flow may count itself alone (see [`AloneDrain`]).
    alone: AloneDrain,
    /// Losses taken for random loss (not congestion).
    random_losses: u64,
    /// Last slow-start rate-control event.
    last_ss_event: Instant,
    /// The start-up after slow start, until it reaches its target or meets congestion.
    startup: Option<Startup>,
    /// Last congestion-avoidance rate-control event.
    last_rc_clock: Instant,
    /// When the last congestion event began.
    last_decrease: Option<Instant>,
    /// Latest ACK seen.
    last_ack: SeqNo,
    /// When a loss was last taken for random loss.
    last_random_loss: Option<Instant>,
    /// Recent loss fraction.
    loss: LossFraction,
    /// The same count started afresh at each congestion decrease (see
    /// [`LossFraction::restart`]): what a later loss is judged by against the background.
    /// Only that test: the whole count stays for the 5 % rule, which a queue too short to
    /// show in the RTT needs (a 1 ms queue at 1 Gb/s, 1 ms, 1 % random loss: restarted at each
    /// decrease it read under 5 % while the queue overflowed 1.8 % of the packets).
    loss_since_decrease: LossFraction,
    /// Background loss rate.
    random_loss: RandomLoss,
    /// Last loss taken for congestion (or timeout).
    last_congestion: Option<Instant>,
    /// Last loss report of any kind.
    last_loss_report: Option<Instant>,
    /// The flow has decreased for congestion (or timed out) since it started: the first
    /// climb is over (see [`UdtCc::first_climb`]).
    congestion_met: bool,
    /// The flow has drained a queue of its own under [`UdtCc::alone_drain_bound_pps`]: it
    /// has found its bottleneck, and the first climb is over too.
    link_found: bool,
    /// When a rate-control event last found a standing queue.
    last_standing_queue: Option<Instant>,
    /// Since when the rate has been above the best delivery rate without congestion.
    probing_since: Option<Instant>,
    /// Slow start's check that the delivery rate still grows.
    plateau: Plateau,
    /// Largest RTT sample of the last [`DELIVERY_MEMORY_US`] (or ten RTTs), µs.
    max_rtt: WindowedMax,
    /// Smallest RTT sample of the last [`STANDING_QUEUE_WINDOW_US`], µs (see
    /// [`UdtCc::queue_standing`]).
    recent_min_rtt: WindowedMin,
    /// The last two distinct RTT samples (µs, and when each came), newest first.
    last_samples: [(u32, Instant); 2],
    /// The early decrease before an overflow (see [`EarlyDecrease`]).
    early: EarlyDecrease,
    /// Slow-start events in a row that showed a queue.
    ss_queue_events: u32,
    /// Rate-control events in a row, a SYN or more apart, that showed a queue, and when the
    /// last of them was counted (see [`PROBE_RESET_QUEUE_EVENTS`]).
    rc_queue_events: (u32, Instant),
    /// The last packet sent in slow start: losses up to it are slow start's overshoot, which
    /// leaving slow start already answered.
    ss_last_seq: Option<SeqNo>,
    /// How much of its rate the sender has been using (see [`RATE_USED_FRACTION`]).
    rate_use: RateUse,
    /// The sending rate when the flow last decreased for congestion, packets/s.
    last_decrease_rate_pps: Option<f64>,
    /// The best delivery rate when the flow last decreased for congestion (packets/s), and
    /// when: without a credible capacity, the rate the recovery after the decrease climbs
    /// back to before the probe's clock runs (see [`UdtCc::recovery_target_pps`]).
    decrease_delivery: Option<(f64, Instant)>,
    /// Whether the flow's share is shrinking from one congestion episode to the next.
    share_trend: ShareTrend,
    /// The queue the flow's own excess over a credible capacity would build.
    own_queue: OwnQueue,
}

impl Default for UdtCc {
    fn default() -> Self {
        UdtCc::new()
    }
}

impl UdtCc {
    /// A new instance.
    pub fn new() -> Self {
        UdtCc {
            native: NativeCc::new(
                NativeConfig::udt()
                    .with_increase(IncreaseRule::Linear {
                        gain: INCREASE_GAIN,
                    })
                    .with_exact_rate()
                    .with_time_scaled_increase(),
            ),
            best_delivery: WindowedMax::default(),
            recent_delivery: WindowedMax::default(),
            capacity_floor: WindowedMin::default(),
            alone: AloneDrain::default(),
            random_losses: 0,
            last_ss_event: Instant::ZERO,
            last_rc_clock: Instant::ZERO,
            last_decrease: None,
            last_ack: SeqNo::default(),
            last_random_loss: None,
            loss: LossFraction::default(),
            loss_since_decrease: LossFraction::default(),
            random_loss: RandomLoss::default(),
            last_congestion: None,
            last_loss_report: None,
            congestion_met: false,
            link_found: false,
            last_standing_queue: None,
            probing_since: None,
            plateau: Plateau::default(),
            max_rtt: WindowedMax::default(),
            recent_min_rtt: WindowedMin::default(),
            last_samples: [(0, Instant::ZERO); 2],
            startup: None,
            early: EarlyDecrease::default(),
            ss_queue_events: 0,
            rc_queue_events: (0, Instant::ZERO),
            ss_last_seq: None,
            rate_use: RateUse::new(),
            last_decrease_rate_pps: None,
            decrease_delivery: None,
            share_trend: ShareTrend::new(),
            own_queue: OwnQueue::new(),
        }
    }

    /// True while the algorithm is in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.native.in_slow_start()
    }

    /// Losses it took for random loss rather than congestion.
    pub fn random_losses(&self) -> u64 {
        self.random_losses
    }

    /// Decreases it made before the queue overflowed (see [`EarlyDecrease`]).
    pub fn early_decreases(&self) -> u64 {
        self.early.count
    }

    /// Length of one loss-counting interval, µs: a round trip, at least a SYN.
    fn loss_interval_us(ctx: &CcContext<'_>) -> u64 {
        u64::from(ctx.rtt_us()).max(crate::time::SYN_US)
    }

    /// The sending rate the current period sets, packets/s.
    fn sending_rate_pps(ctx: &CcContext<'_>) -> f64 {
        1e6 / ctx.pkt_snd_period_us().max(1e-3)
    }

    /// Brings the rate-use measurement up to date (before anything changes the rate).
    fn accrue_rate_use(&mut self, ctx: &CcContext<'_>) {
        let window = Self::loss_interval_us(ctx);
        self.rate_use
            .accrue(ctx.now(), Self::sending_rate_pps(ctx), window);
    }

    /// Drains the own-queue model up to now (before a decision reads it).
    fn drain_own_queue(&mut self, ctx: &CcContext<'_>) {
        let capacity = self.credible_capacity(ctx);
        self.own_queue.drain(ctx.now(), capacity);
    }

    /// True unless the last round trip showed the sender using less than
    /// [`RATE_USED_FRACTION`] of its rate: an increase is only tested against the path when
    /// the sender sends at the rate (see [`RateUse`]).
    fn rate_used(&self) -> bool {
        self.rate_use
            .fraction()
            .is_none_or(|f| f >= RATE_USED_FRACTION)
    }

    /// The window of `recent_delivery`, µs.
    fn recent_delivery_window_us(ctx: &CcContext<'_>) -> u64 {
        (2 * u64::from(ctx.rtt_us())).max(STANDING_QUEUE_WINDOW_US)
    }

    fn memory_us(ctx: &CcContext<'_>) -> u64 {
        (10 * u64::from(ctx.rtt_us())).max(DELIVERY_MEMORY_US)
    }

    /// Queueing delay now, µs: the latest RTT above the recent minimum.
    fn queueing_us(ctx: &CcContext<'_>) -> f64 {
        let (min, last) = (ctx.min_rtt_us(), ctx.last_rtt_us());
        if min == 0 || last == 0 {
            return 0.0;
        }
        f64::from(last.saturating_sub(min))
    }

    /// The queueing delay a loss (and the early decrease) is judged by, µs:
    /// [`UdtCc::queueing_us`], unless the RTT sample before the latest, taken within
    /// [`SPIKE_WINDOW_RTTS`] round trips of it, showed less than [`SPIKE_FRACTION`] of that
    /// queue and the flow's own excess over its delivery rate could not have queued the
    /// difference between the two; then that sample's. A queue rises and falls through the
    /// samples taken while it fills (slow start's bursts, which fill a queue within one
    /// sample interval, are the flow's excess); a host that stalls (a busy core, a user-space emulator, a NIC's coalescing
    /// timer) lifts one sample out of nowhere, and the receiver reports the losses it found
    /// in the packets the stall held at the same moment. At 100 Mb/s, 10 ms with a 1 ms
    /// queue and 2 ms stalls every 20 ms, every random loss reported after a stall counted
    /// as an overflow and the rate decayed to 14 Mb/s (`from_start_noisy.toml`, 1 % loss:
    /// 0.397 of the link). Not the lower of the two samples: the threshold a loss must
    /// pass grows with the RTT variation a filling queue causes, and the lower sample of a
    /// queue still rising fell under it (1 Gb/s, 100 ms, 0.1 BDP: an overflow's first 60
    /// losses went by as random).
    fn queue_at_loss_us(&self, ctx: &CcContext<'_>) -> f64 {
        let queue = Self::queueing_us(ctx);
        let [(newest, newest_at), (before, before_at)] = self.last_samples;
        let window = SPIKE_WINDOW_RTTS * u64::from(ctx.rtt_us());
        if before == 0 || newest != ctx.last_rtt_us() || newest_at.micros_since(before_at) > window
        {
            return queue;
        }
        let before_queue = f64::from(before.saturating_sub(ctx.min_rtt_us()));
        // What the flow's own excess over its delivery could have queued between the two
        // samples: slow start's last bursts, or a climb past the link, fill a queue that fast.
        let excess =
            (Self::sending_rate_pps(ctx) / Self::clean_delivery(ctx).max(1.0) - 1.0).max(0.0);
        let own_rise = excess * newest_at.micros_since(before_at) as f64;
        if before_queue < SPIKE_FRACTION * queue && queue - before_queue > own_rise {
            before_queue
        } else {
            queue
        }
    }

    /// True when the RTT shows a queue of more than [`QUEUE_THRESHOLD_US`] and more than
    /// [`QUEUE_THRESHOLD_PKTS`] packets at the path's rate. The threshold is the same for every
    /// flow that shares a bottleneck, whatever its RTT: they see the same queue, and a
    /// threshold that grew with the RTT would let long-RTT flows keep increasing while short
    /// ones brake. At low rates a few packets already hold milliseconds.
    fn queue_building(&self, ctx: &CcContext<'_>) -> bool {
        Self::queueing_us(ctx) >= self.queue_threshold_us(ctx)
    }

    /// True when every RTT sample of the last [`STANDING_QUEUE_WINDOW_US`] shows a queue (see
    /// [`UdtCc::queue_building`]), and so do the last sample however old and the one before it
    /// if that came within the window of it: a queue at a bottleneck drains at the link's
    /// rate and
    /// holds every sample up while it stands, but a host that stalls now and then (a busy
    /// core, a user-space emulator) lifts only the samples taken during its stalls.
    ///
    /// This signal holds back the rate's growth without a credible capacity (the probe, the
    /// first climb, the start-up and the delivery bound), which stalls would otherwise hold
    /// for good (1 Gb/s, 10 ms, 10 ms stalls every 25 ms, clumped, 0.1 % loss: 0.136 of the
    /// link read one sample at a time). The decisions that must come within a round trip —
    /// the end of slow start, whether a loss is congestion, the early decrease — read the
    /// latest sample.
    fn queue_standing(&self, ctx: &CcContext<'_>) -> bool {
        let (min, last) = (ctx.min_rtt_us(), ctx.last_rtt_us());
        if min == 0 || last == 0 {
            return false;
        }
        // The last sample counts however old it is, with the one before it if that came
        // within a window of it, and the window only while it holds samples. When ACKs stop
        // coming (a queue that holds them, slow start's last bursts), the window must not
        // keep the samples from before: at 10 Mb/s, 10 ms, ACKs stopped for 0.27 s after slow
        // start, and the rate stayed at twice the link. But one sample of a burst is not a
        // standing queue: behind a hole the cumulative ACK, and with it the samples, stop for
        // a round trip, and the last of the few that came when it filled, lifted by a stall,
        // restarted the probe 47 times in 40 s (1 Gb/s, 100 ms, 0.1 % loss, stalls). A sample
        // from before the pause does not count: at 100 Mb/s, 200 ms, clumped, 0.1 % loss,
        // the samples before the queue formed hid it and 5 % of the packets overflowed.
        let [(newest, newest_at), (before, before_at)] = self.last_samples;
        let pair = if before > 0 && newest_at.micros_since(before_at) < STANDING_QUEUE_WINDOW_US {
            newest.min(before)
        } else {
            newest
        };
        let recent = self
            .recent_min_rtt
            .get_at(ctx.now(), STANDING_QUEUE_WINDOW_US)
            .map_or(f64::from(pair), |m| m.min(f64::from(pair)))
            .min(f64::from(last));
        (recent - f64::from(min)).max(0.0) >= self.queue_threshold_us(ctx)
    }

    /// The queueing delay that counts as a queue, µs (see [`UdtCc::queue_building`]).
    fn queue_threshold_us(&self, ctx: &CcContext<'_>) -> f64 {
        self.queue_threshold_over_us(ctx, QUEUE_THRESHOLD_US)
    }

    /// [`UdtCc::queue_threshold_us`] with `floor_us` in place of [`QUEUE_THRESHOLD_US`].
    fn queue_threshold_over_us(&self, ctx: &CcContext<'_>, floor_us: f64) -> f64 {
        let noise_cap =
            QUEUE_NOISE_CAP_US.max(QUEUE_NOISE_CAP_OF_MIN_RTT * f64::from(ctx.min_rtt_us()));
        let noise = (QUEUE_THRESHOLD_RTT_VARS * f64::from(ctx.rtt_var_us())).min(noise_cap);
        floor_us
            .max(QUEUE_THRESHOLD_PKTS * 1e6 / self.path_rate_pps(ctx))
            .max(noise)
    }

    /// The path's rate as far as the flow knows it, packets/s: a credible capacity, or the
    /// best recent delivery rate if that is higher (at least 1).
    fn path_rate_pps(&self, ctx: &CcContext<'_>) -> f64 {
        self.credible_capacity(ctx)
            .unwrap_or(0.0)
            .max(self.best_delivery.get())
            .max(1.0)
    }

    /// True when the path shows congestion: a queue, or more loss than a noisy link causes.
    fn path_congested(&self, ctx: &CcContext<'_>) -> bool {
        self.queue_building(ctx) || self.loss.fraction() > CONGESTION_LOSS_FRACTION
    }

    /// Why a loss reported now counts as congestion, or `None` if it does not: the queue is
    /// near the fullest seen recently (a DropTail queue drops when full; random loss strikes
    /// at any level), more loss than a noisy link causes, or a queue too shallow to show
    /// (see [`UdtCc::queue_unseen`]).
    fn loss_cause(&self, ctx: &CcContext<'_>) -> Option<CongestionCause> {
        if self.loss.fraction() > CONGESTION_LOSS_FRACTION {
            return Some(CongestionCause::Overflow);
        }
        // Over the last round trips, or over everything since the last decrease: one
        // overflow loses a flow that shares a shallow queue one or two packets, which the
        // background's slack excuses over a few round trips, but not over many.
        let early = !self.congestion_met;
        let exceeded =
            |(lost, among): (u64, u64)| self.random_loss.exceeded_by(ctx.now(), lost, among, early);
        let beyond_background = || {
            exceeded(self.loss_since_decrease.recent())
                || self
                    .loss_since_decrease
                    .since_restart()
                    .is_some_and(exceeded)
        };
        if self.loss_at_full_queue(ctx) && self.overflow_possible(ctx) && beyond_background() {
            // A queue too shallow to show that a flow near a credible capacity overflowed
            // holds its own excess: it is (nearly) alone, and a rate just below the capacity
            // drains the queue. With the native eighth instead, a 100 Mb/s, 10 ms flow behind
            // an 8-packet queue delivered 0.926 of the link instead of 0.955.
            let alone = self.queue_too_shallow_to_show(ctx)
                && self
                    .credible_capacity(ctx)
                    .is_some_and(|c| Self::sending_rate_pps(ctx) >= OWN_QUEUE_RATE_FRACTION * c);
            return Some(if alone {
                CongestionCause::ExcessOverCapacity
            } else {
                CongestionCause::Overflow
            });
        }
        // A queue at half its fullest or more, and more loss since the last decrease than a
        // known background explains: the flow shares a queue that keeps overflowing while
        // its samples of it, taken once per ACK, miss the moments it is full.
        let background_known = self
            .random_loss
            .fraction(ctx.now(), early)
            .is_some_and(|p| p > 0.0);
        if background_known
            && self.queue_above_half_fullest(ctx)
            && self
                .loss_since_decrease
                .since_restart()
                .is_some_and(exceeded)
        {
            return Some(CongestionCause::Overflow);
        }
        // The own-queue model also counts the bursts a busy host sends after a stall: through
        // `udt relay` at 1 Gb/s, 100 ms with 0.1 % loss it held 3.4–3.7 ms while the flow sent
        // 5–10 % under the capacity, and a random loss every 4–10 s took an eighth off the
        // rate (each cost about 10 % of the link for 8 s of linear climb). Well under the
        // capacity a flow has no excess of its own unless the capacity reads high, and then
        // its overflows lose more than a background explains (a background is only known once
        // random losses have been counted). Near the capacity any loss counts, as before: at
        // 100 Mb/s, 1 ms with a 1-BDP queue (8 packets) and 0.1 % loss, waiting for the
        // losses to pass the background let the queue overflow more (utilization 0.957 →
        // 0.928).
        let own_excess_possible = self
            .credible_capacity(ctx)
            .is_some_and(|c| Self::sending_rate_pps(ctx) >= UNSEEN_OWN_EXCESS_OF_CAPACITY * c);
        (self.queue_unseen(ctx) && (own_excess_possible || beyond_background()))
            .then_some(CongestionCause::ExcessOverCapacity)
    }

    /// False before the flow's first congestion while the RTT shows a queue of less than
    /// [`FIRST_OVERFLOW_OF_MIN_RTT`] of the minimum RTT: a loss at what the flow reads as its
    /// full queue is then likelier random loss behind the host's RTT noise than an overflow
    /// (see the constant).
    fn overflow_possible(&self, ctx: &CcContext<'_>) -> bool {
        self.congestion_met
            || Self::queueing_us(ctx) >= FIRST_OVERFLOW_OF_MIN_RTT * f64::from(ctx.min_rtt_us())
    }

    /// True when the fullest queue seen recently is below [`UdtCc::loss_queue_threshold_us`]:
    /// the queue (if any) is too shallow for the RTT to show it over the threshold.
    fn queue_too_shallow_to_show(&self, ctx: &CcContext<'_>) -> bool {
        self.fullest_queue_us(ctx) < self.loss_queue_threshold_us(ctx)
    }

    /// True when the RTT shows the queue at the depth where it overflows: above
    /// [`UdtCc::loss_queue_threshold_us`] and at least [`QUEUE_FULL_FRACTION`] of the fullest
    /// queue seen recently. A flow well below a credible capacity needs a deeper queue
    /// ([`OTHERS_QUEUE_THRESHOLD_US`]), or one at [`QUEUE_STILL_FULL_FRACTION`] of the fullest
    /// if that is shallower: whoever fills a DropTail queue, it drops at the same depth.
    /// Where the fullest queue seen is below the threshold, a queue that shallow cannot show
    /// more, and only its fullness counts ([`SHALLOW_FULL_FRACTION`] of the fullest, above
    /// the RTT noise and a few packets).
    fn loss_at_full_queue(&self, ctx: &CcContext<'_>) -> bool {
        let shallow = self.queue_too_shallow_to_show(ctx);
        let queue = if shallow {
            Self::queueing_us(ctx)
        } else {
            self.queue_at_loss_us(ctx)
        };
        let fullest = self.fullest_queue_us(ctx);
        let base = self.loss_queue_threshold_us(ctx);
        let threshold = if shallow {
            (SHALLOW_FULL_FRACTION * fullest).max(self.queue_threshold_over_us(ctx, 0.0))
        } else if self
            .credible_capacity(ctx)
            .is_some_and(|c| Self::sending_rate_pps(ctx) < OWN_QUEUE_RATE_FRACTION * c)
        {
            base.max(OTHERS_QUEUE_THRESHOLD_US.min(QUEUE_STILL_FULL_FRACTION * fullest))
        } else {
            base
        };
        queue >= threshold && queue >= QUEUE_FULL_FRACTION * fullest
    }

    /// True when the RTT shows a queue at half the fullest seen recently or more, and of at
    /// least one packet's time at the path's rate. Not the floors of the other thresholds
    /// (four packets' time, two RTT variances): both exceed a queue of a few packets that
    /// several flows share. A flow without a credible capacity measures packets' time at its
    /// own delivery rate, and four flows sharing 10 packets of queue at 100 Mb/s found four
    /// packets' time (1 ms at a quarter of the link) above the full queue; four sharing 17
    /// packets at 1 Gb/s, 2 ms found two RTT variances (about 0.2 ms) above it.
    fn queue_above_half_fullest(&self, ctx: &CcContext<'_>) -> bool {
        let queue = Self::queueing_us(ctx);
        queue >= QUEUE_FULL_FRACTION * self.fullest_queue_us(ctx)
            && queue >= 1e6 / self.path_rate_pps(ctx)
    }

    /// The queue a loss must find to count as congestion, µs: [`UdtCc::queue_threshold_us`]
    /// with its floor lowered on short paths (see [`SHORT_PATH_QUEUE_OF_MIN_RTT`]).
    fn loss_queue_threshold_us(&self, ctx: &CcContext<'_>) -> f64 {
        let min_rtt = f64::from(ctx.min_rtt_us());
        let floor = if min_rtt > 0.0 {
            QUEUE_THRESHOLD_US.min(SHORT_PATH_QUEUE_OF_MIN_RTT * min_rtt)
        } else {
            QUEUE_THRESHOLD_US
        };
        self.queue_threshold_over_us(ctx, floor)
    }

    /// True when the flow's own excess over a credible capacity would have queued far more
    /// than the RTT shows (see [`UNSEEN_QUEUE_RATIO`]).
    ///
    /// The RTT shows the queue a round trip late, and the model is current: what the excess
    /// added in one round trip is allowed for. (Without it, at 100 Mb/s, 400 ms, 0.1 % random
    /// loss, a rate 0.7 % above the link read 3.8 ms of model queue against 1 ms seen, and
    /// random losses set off decreases that left a one-BDP queue empty: 0.93 of the link
    /// instead of 0.97.)
    fn queue_unseen(&self, ctx: &CcContext<'_>) -> bool {
        self.credible_capacity(ctx).is_some_and(|c| {
            let excess = (Self::sending_rate_pps(ctx) / c - 1.0).max(0.0);
            let lag = excess * f64::from(ctx.rtt_us());
            let seen = (Self::queueing_us(ctx) + lag).max(self.loss_queue_threshold_us(ctx));
            self.own_queue.delay_us(c) >= UNSEEN_QUEUE_RATIO * seen
        })
    }

    /// The largest queueing delay of the last [`DELIVERY_MEMORY_US`] (or ten RTTs), µs.
    fn fullest_queue_us(&self, ctx: &CcContext<'_>) -> f64 {
        (self.max_rtt.get() - f64::from(ctx.min_rtt_us())).max(0.0)
    }

    /// The delivery rate, cleaned of the jump that follows a filled hole: nothing can be
    /// delivered faster than it was sent.
    fn clean_delivery(ctx: &CcContext<'_>) -> f64 {
        let (d, s) = (ctx.delivery_rate_pps(), ctx.sent_rate_rtt_ago_pps());
        if s > 0.0 {
            d.min(s * 1.02)
        } else {
            d
        }
    }

    /// True when the path delivers at least [`KEEP_UP_FRACTION`] of what the flow sent a
    /// round trip ago: whatever the RTT shows, the flow has no excess of its own that a
    /// queue would hold. The probe goes on then (see [`PROBE_RESET_QUEUE_EVENTS`]): a flow
    /// at its bottleneck that probes further soon sends more than is delivered, and a
    /// queue that the RTT reads while everything sent arrives is another flow's, or noise.
    fn delivery_keeps_up(ctx: &CcContext<'_>) -> bool {
        let sent = ctx.sent_rate_rtt_ago_pps();
        sent > 0.0 && ctx.delivery_rate_pps() >= KEEP_UP_FRACTION * sent
    }

    /// The reported capacity if it is credible: the peer currently reports one, and it is
    /// not below what the path has delivered.
    fn credible_capacity(&self, ctx: &CcContext<'_>) -> Option<f64> {
        let reported = f64::from(ctx.bandwidth_pps());
        let best = self.best_delivery.get();
        (ctx.capacity_reported() && best > 0.0 && reported >= 0.95 * best).then_some(reported)
    }

    /// The capacity the increase rule may use, packets/s: the credible reported capacity;
    /// without one, the best recent delivery rate while the rate is below it (recovery), and
    /// above it a probe that starts at [`PROBE_START`] of the rate and doubles every
    /// [`PROBE_DOUBLING_US`] without congestion (the path may have more room: a competing
    /// flow left) — gentle where the last congestion was, fast where nothing stops it.
    fn effective_capacity(&self, ctx: &CcContext<'_>) -> u32 {
        let best = self.best_delivery.get();
        let c = match self.credible_capacity(ctx) {
            Some(c) => c,
            None => {
                let rate = Self::sending_rate_pps(ctx);
                if rate < RECOVERY_BELOW * best {
                    best
                } else if let Some(target) = self.recovery_target_pps(ctx) {
                    rate + RECOVERY_GAP_GAIN * (target - rate) + PROBE_START * rate
                } else {
                    rate * (1.0 + self.probe_fraction(ctx.now()))
                }
            }
        };
        c.min(f64::from(u32::MAX)) as u32
    }

    /// Without a credible capacity, the best delivery rate when the flow last decreased for
    /// congestion (packets/s) while the rate is still below it, for [`RECOVERY_MEMORY_US`]
    /// after the decrease: the recovery climbs back to it, and the probe's doubling clock
    /// starts only there.
    ///
    /// The best delivery rate is remembered for 2 s, and the recovery from an eighth below
    /// takes longer: once it forgot the decrease's level, the probe's clock ran from 0.9 of
    /// it, had doubled four or five times by the time the rate got back, and took the rate
    /// 8 % past the link within 0.2 s. At 100 Mb/s, 10 ms behind clumps the queue then
    /// reached an early decrease every 2.5 s (0.87–0.96 of the link, second by second).
    fn recovery_target_pps(&self, ctx: &CcContext<'_>) -> Option<f64> {
        let (target, at) = self.decrease_delivery?;
        (self.credible_capacity(ctx).is_none()
            && ctx.now().micros_since(at) < RECOVERY_MEMORY_US
            && Self::sending_rate_pps(ctx) < target)
            .then_some(target)
    }

    /// The probe's spare capacity as a fraction of the rate.
    fn probe_fraction(&self, now: Instant) -> f64 {
        let since = self.probing_since.map_or(0, |t| now.micros_since(t));
        let doublings = (since / PROBE_DOUBLING_US).min(16) as i32;
        (PROBE_START * 2f64.powi(doublings)).min(1.0)
    }

    /// Bounds the rate by the best recent delivery rate plus headroom, while a queue builds
    /// (without a queue the rate is not above what the path carries; and right after slow
    /// start, or behind a hole the cumulative ACK waits on, the delivery rate lags the rate
    /// the path can take).
    ///
    /// Only without a credible capacity: with one, the increase already falls to its minimum
    /// near the link and the rate is bounded by the capacity itself; a bound that is a
    /// multiple of each flow's own delivery would make flows sharing a queue grow in
    /// proportion to their shares, which freezes unequal shares (additive increase is what
    /// equalises them).
    fn bound_rate(&self, ctx: &mut CcContext<'_>) {
        // With a credible capacity, no flow can use more than the link: the rate stays within
        // the headroom of it. (Without this the native increase, which never falls below
        // 0.01 packets per SYN — 1 packet/s per SYN — doubled a 10 Mb/s flow's rate in 8 s
        // at 400 ms while the 400 ms queue filled, and the overflow took 40 % of its packets.)
        if let Some(c) = self.credible_capacity(ctx) {
            let bound = self
                .alone_drain_bound_pps(ctx)
                .unwrap_or(c * (1.0 + RATE_HEADROOM));
            let floor_period = 1e6 / bound;
            if ctx.pkt_snd_period_us() < floor_period {
                ctx.set_pkt_snd_period_us(floor_period);
            }
            return;
        }
        if let Some(bound) = self
            .alone_drain_bound_pps(ctx)
            .or_else(|| self.delivery_bound_pps(ctx))
        {
            let floor_period = 1e6 / bound;
            if ctx.pkt_snd_period_us() < floor_period {
                ctx.set_pkt_snd_period_us(floor_period);
            }
        }
    }

    /// The rate bound of a flow alone at its bottleneck while a queue stands, packets/s: just
    /// under what the path delivers, by [`ALONE_DRAIN_PER_US`] of the queue per µs of it, at
    /// least [`ALONE_DRAIN_MIN`] plus [`EXCESS_DECREASE`] per [`UdtCc::alone_drain_max_us`]
    /// the queue has stood, and at most [`EXCESS_DECREASE`], so that the queue the flow
    /// builds drains instead of growing to its next decrease. `None` unless the flow delivers
    /// at least [`OWN_QUEUE_RATE_FRACTION`] of the capacity `c` (packets/s) and a queue has
    /// stood for no longer than [`UdtCc::alone_drain_max_us`], and not while the flow doubts
    /// that it is alone (see [`AloneDrain`]).
    ///
    /// The delivery rate is the best of the last two RTTs: single samples dip by a few per
    /// cent on real hosts (ACK timing), and a bound that followed them cut the rate 4 % under
    /// the link at once.
    ///
    /// Alone, a flow's increase approaches the capacity estimate, and a packet-pair estimate
    /// that reads a few per cent high (behind GRO or a coalescing NIC: 1.00–1.05 × the link
    /// through `udt relay` at 1 Gb/s) holds the rate above the link: the queue grows until an
    /// overflow or an early decrease takes an eighth off, and the increase, which shrinks
    /// near the capacity, takes 8–10 s to climb back (1 Gb/s, 100 ms, one BDP: 912 Mb/s of
    /// 971). With a standing queue the delivery rate is the bottleneck's rate whatever the
    /// capacity reads. Flows that share the queue each deliver a share under the fraction,
    /// and keep the native decreases through which their shares converge; a flow that
    /// delivers nearly all of the link when a newcomer arrives finds the queue outlasting its
    /// drain and makes room (see [`UdtCc::track_alone`]).
    fn alone_drain_bound_pps(&self, ctx: &CcContext<'_>) -> Option<f64> {
        let (Some(since), None) = (self.alone.standing_since, self.alone.not_alone_until) else {
            return None;
        };
        if ctx.now().micros_since(since) > Self::alone_drain_max_us(ctx) {
            return None;
        }
        let delivered = self.drain_delivery_pps(ctx)?;
        // The longer the queue stands, the more the flow gives up: the best delivery rate of
        // two RTTs can read a per cent or two high, and a drain under that noise left the
        // queue standing until the flow took itself for not alone.
        let standing = ctx.now().micros_since(since) as f64 / Self::alone_drain_max_us(ctx) as f64;
        let drain = (ALONE_DRAIN_PER_US * Self::queueing_us(ctx))
            .max(ALONE_DRAIN_MIN + EXCESS_DECREASE * standing)
            .min(EXCESS_DECREASE);
        let bound = delivered * (1.0 - drain);
        if self.credible_capacity(ctx).is_some() {
            return Some(bound);
        }
        // Without a capacity, as for the delivery bound: never lower than one decrease below
        // the rate at the last congestion decrease (a delivery rate read behind lost
        // retransmissions can be a fraction of the link).
        let floor = self
            .last_decrease_rate_pps
            .map_or(0.0, |r| BOUND_FLOOR_OF_DECREASE_RATE * r);
        Some(bound.max(floor))
    }

    /// The best delivery rate of the last two RTTs (packets/s, at most the capacity `c`) if
    /// it is at least [`OWN_QUEUE_RATE_FRACTION`] of the lowest credible capacity of the last
    /// [`CAPACITY_FLOOR_MEMORY_US`] (never more than `c`): the flow has the link (nearly) to
    /// itself.
    ///
    /// The lowest, not the latest: our receiver's estimate, the lowest cluster of pair
    /// intervals, errs upwards (pairs that batched delivery squeezed read faster than the
    /// link; pairs that other flows split are left out), and behind GRO and `udt relay` at
    /// 1 Gbit/s, 0.1 % loss, it swung between 1.03 and 1.9 × the link within a second.
    /// Against each reading the test failed whenever one came over 1.11 ×: the queue then
    /// grew with nothing draining it, by 20–60 ms, until an overflow or an early decrease
    /// took an eighth off the rate.
    fn alone_delivery_pps(&self, ctx: &CcContext<'_>, c: f64) -> Option<f64> {
        let delivered = self
            .recent_delivery
            .peak_at(ctx.now(), Self::recent_delivery_window_us(ctx))
            .unwrap_or(0.0)
            .min(c);
        let floor = self
            .capacity_floor
            .get_at(ctx.now(), CAPACITY_FLOOR_MEMORY_US)
            .map_or(c, |f| f.min(c));
        (delivered >= OWN_QUEUE_RATE_FRACTION * floor).then_some(delivered)
    }

    /// What the drain of [`UdtCc::alone_drain_bound_pps`] keeps the rate under, packets/s:
    /// with a credible capacity, [`UdtCc::alone_delivery_pps`]; without one (a clumped
    /// receiver withholds it), what was acknowledged per second since the queue stood
    /// ([`UdtCc::standing_delivery_pps`]; until that is known, the best delivery rate of the
    /// last two RTTs), while no loss has been reported for [`DRAIN_CLEAN_RTTS`] RTTs and a
    /// SYN, since a standing queue makes
    /// the delivery rate the bottleneck's (or the flow's share of it) and a flow that sends
    /// more than that only lengthens the queue; and, in the start-up, only once slow start's
    /// own queue has drained, and while that rate is at least [`OWN_QUEUE_RATE_FRACTION`] of
    /// the best of the last seconds. Behind
    /// holes and lost retransmissions the delivery rate reads low (a quarter of the link,
    /// for seconds), hence the clean stretch, that test, and the bound's floor in
    /// [`UdtCc::alone_drain_bound_pps`].
    ///
    /// Without it such a flow's rate sat 1.5–3 % above the link (its probe, held by the
    /// delivery bound's headroom), the queue grew 15–30 ms a second, and an early decrease
    /// took an eighth off every 4–7 s (1 Gb/s, 100 ms, one BDP, clumps of up to 32 every
    /// 125 µs: a dip to 0.91–0.94 of the link each time, in the simulator and through
    /// `udt relay`).
    fn drain_delivery_pps(&self, ctx: &CcContext<'_>) -> Option<f64> {
        if let Some(c) = self.credible_capacity(ctx) {
            return self.alone_delivery_pps(ctx, c);
        }
        // Nor while the queue of slow start's last bursts stands (the start-up's rules
        // answer it). Once it has drained, a queue is the start-up's own: without the drain
        // a start-up held 6 % over the link by the delivery bound's headroom grew its queue
        // for 1.6 s to an overflow (1 Gb/s, 100 ms, one BDP, clumped: 1 062 packets dropped,
        // a second at 0.87 of the link).
        let clean_us = DRAIN_CLEAN_RTTS * u64::from(ctx.rtt_us()) + crate::time::SYN_US;
        if self.startup.is_some_and(|s| !s.drained)
            || self
                .last_loss_report
                .is_some_and(|t| ctx.now().micros_since(t) < clean_us)
        {
            return None;
        }
        // As with a capacity, only a flow that delivers nearly all it has delivered lately:
        // the best rate of the last seconds stands in for the capacity.
        let best = self.best_delivery.get();
        self.recent_delivery
            .peak_at(ctx.now(), Self::recent_delivery_window_us(ctx))
            .filter(|&d| d > 0.0 && d >= OWN_QUEUE_RATE_FRACTION * best)
            .map(|peak| self.standing_delivery_pps(ctx).unwrap_or(peak))
    }

    /// Packets acknowledged per second since the queue was first seen standing, once that
    /// is [`STANDING_MEAN_MIN_US`] or two RTTs ago: the bottleneck's rate, for a flow alone.
    /// The best delivery rate of a few RTTs reads its high tail instead, 1–2 % over the
    /// link behind a clumped receiver, and a drain under that left the rate over the link
    /// (1 Gb/s, 10 ms, one BDP: the queue still grew to an early decrease every 3.5 s).
    fn standing_delivery_pps(&self, ctx: &CcContext<'_>) -> Option<f64> {
        let (at, acked) = self.alone.standing_mark?;
        let span = ctx.now().micros_since(at);
        if span < STANDING_MEAN_MIN_US.max(2 * u64::from(ctx.rtt_us())) {
            return None;
        }
        let n = ctx.acked_pkts().saturating_sub(acked);
        (n > 0).then(|| n as f64 * 1e6 / span as f64)
    }

    /// How long a queue may stand under [`UdtCc::alone_drain_bound_pps`] before the flow
    /// concludes it is not alone, µs: the drain empties the flow's own queue within about a
    /// second, and the queue shows that a round trip late.
    fn alone_drain_max_us(ctx: &CcContext<'_>) -> u64 {
        ALONE_DRAIN_MAX_US + 2 * u64::from(ctx.rtt_us())
    }

    /// Tracks whether the queue stands, and ends the flow's belief that it is alone when a
    /// queue outlasts its drain (see [`AloneDrain`]).
    ///
    /// A flow that was draining under the bound when it found it is not alone makes a native
    /// decrease at once, as an overflow would have made it do: it holds nearly all of the
    /// link, and the newcomer's rate grows slowly behind the standing queue. True if it did.
    fn track_alone(&mut self, ctx: &mut CcContext<'_>) -> bool {
        let now = ctx.now();
        if self.alone.not_alone_until.is_some_and(|t| now >= t) {
            self.alone.not_alone_until = None;
        }
        // The queue's age counts only while the drain can apply: a capacity that reads high
        // (through `udt relay` at 1 Gb/s, 100 ms, the receiver's estimate read 1.2–1.5 × the
        // link for two seconds) hides that the flow delivers the whole link, and a queue that
        // stood meanwhile, with no drain to outlast, took the flow for not alone: the native
        // increase then filled the one-BDP queue and its overflow took an eighth (four of
        // nine traced 30 s runs: 892–923 Mb/s, against 926–931 for the other five).
        let can_drain = self.drain_delivery_pps(ctx).is_some();
        if self.native.in_slow_start() || !self.queue_standing(ctx) || !can_drain {
            self.alone.standing_since = None;
            self.alone.standing_mark = None;
            return false;
        }
        let since = *self.alone.standing_since.get_or_insert(now);
        // The flow holds the bottleneck: the first climb is over, and so is a start-up past
        // slow start's queue that has no capacity to aim at (its target, 0.9 of the pipe
        // slow start saw, read 1.16 × a 1 Gb/s link, and closing on it after each drain
        // took the rate 20 % over the link). With a credible capacity it goes on: its
        // target is under the capacity, and it waits there; ended, it left a plain 1 Gb/s,
        // 200 ms flow to the slow linear increase (0.878 → 0.764 of the link over 30 s).
        self.link_found = true;
        if self.startup.is_some_and(|s| s.drained) && self.credible_capacity(ctx).is_none() {
            self.startup = None;
        }
        self.alone
            .standing_mark
            .get_or_insert((now, ctx.acked_pkts()));
        if self.alone.not_alone_until.is_some()
            || now.micros_since(since) <= Self::alone_drain_max_us(ctx)
        {
            return false;
        }
        self.alone.not_alone_until = Some(now.plus_micros(ALONE_DOUBT_US));
        // Without a capacity the flow cannot tell that it holds nearly all of the link, so it
        // does not make room at once: it goes back to the delivery bound and the early
        // decrease, as before it drained.
        if self.decrease_held(ctx) || self.credible_capacity(ctx).is_none() {
            return false;
        }
        self.alone.yields += 1;
        self.decrease_now(ctx);
        true
    }

    /// The rate bound of [`UdtCc::bound_rate`] without a credible capacity, packets/s: the
    /// best recent delivery rate plus [`RATE_HEADROOM`] while a queue builds; none otherwise.
    fn delivery_bound_pps(&self, ctx: &CcContext<'_>) -> Option<f64> {
        if !self.queue_standing(ctx) {
            return None;
        }
        let floor = self
            .last_decrease_rate_pps
            .map_or(0.0, |r| BOUND_FLOOR_OF_DECREASE_RATE * r);
        let best = self
            .best_delivery
            .get()
            .max(ctx.delivery_rate_pps())
            .max(floor);
        (best > 0.0).then_some(best * (1.0 + RATE_HEADROOM))
    }

    /// Makes an early decrease if one is due (see [`EarlyDecrease`]); true if it did.
    fn early_decrease(&mut self, ctx: &mut CcContext<'_>) -> bool {
        let Some(depth) = self.early.depth_us else {
            return false;
        };
        let queue = Self::queueing_us(ctx);
        if queue < EARLY_REARM_FRACTION * depth {
            self.early.armed = true;
        }
        let threshold = self.queue_threshold_us(ctx);
        if !self.early.armed
            || self.decrease_held(ctx)
            || depth < EARLY_MIN_DEPTH_THRESHOLDS * threshold
            || self.queue_at_loss_us(ctx) < EARLY_DEPTH_FRACTION * depth
            || Self::sending_rate_pps(ctx) <= Self::clean_delivery(ctx)
        {
            return false;
        }
        self.early.armed = false;
        self.early.count += 1;
        let drained = self
            .queue_pass_rate_pps(ctx)
            .filter(|_| !self.loss_reported_within(ctx, 2 * u64::from(ctx.rtt_us())))
            .map(|passed| EARLY_DRAIN_OF_PASSED * passed);
        let floor = EARLY_DRAIN_FLOOR * Self::sending_rate_pps(ctx);
        self.decrease_now(ctx);
        if let Some(target) = drained {
            let target = target.max(floor);
            if Self::sending_rate_pps(ctx) > target {
                ctx.set_pkt_snd_period_us(1e6 / target);
            }
        }
        true
    }

    /// True when a loss was reported in the last `us` µs: the holes it left hold the
    /// cumulative ACK back, and the delivery rate reads low until they fill.
    fn loss_reported_within(&self, ctx: &CcContext<'_>, us: u64) -> bool {
        self.last_loss_report
            .is_some_and(|t| ctx.now().micros_since(t) < us)
    }

    /// The rate at which the queue would pass the current rate, packets/s: the rate times
    /// the fraction of what was sent a round trip ago that the path has delivered since
    /// ([`UdtCc::clean_delivery`] over [`CcContext::sent_rate_rtt_ago_pps`]). A FIFO queue
    /// passes every flow's packets at that fraction, the link over what arrives at it. None
    /// until both rates are known.
    fn queue_pass_rate_pps(&self, ctx: &CcContext<'_>) -> Option<f64> {
        let sent = ctx.sent_rate_rtt_ago_pps();
        let delivered = Self::clean_delivery(ctx);
        (sent > 0.0 && delivered > 0.0)
            .then(|| Self::sending_rate_pps(ctx) * (delivered / sent).min(1.0))
    }

    /// True within two RTTs and a SYN of the last decrease: its effect has not yet reached
    /// the queue the RTT reads, so a decrease without a loss would answer the same excess
    /// twice.
    fn decrease_held(&self, ctx: &CcContext<'_>) -> bool {
        self.last_decrease.is_some_and(|t| {
            ctx.now().micros_since(t) < 2 * u64::from(ctx.rtt_us()) + crate::time::SYN_US
        })
    }

    /// A native congestion decrease now, without a loss (an early decrease, or a flow
    /// making room for a newcomer).
    fn decrease_now(&mut self, ctx: &mut CcContext<'_>) {
        self.last_decrease = Some(ctx.now());
        self.startup = None;
        self.probing_since = None;
        let rate_before = Self::sending_rate_pps(ctx);
        // A loss of the packet just sent: beyond the last decrease point, so the native rule
        // starts a new epoch with its usual decrease.
        let seq = ctx.snd_curr_seq();
        let inputs = self.adjusted_inputs(ctx);
        self.native.on_loss(
            &mut ctx.with_inputs(&inputs),
            &[SeqRange {
                first: seq,
                last: seq,
            }],
        );
        self.after_congestion_decrease(ctx, rate_before);
    }

    /// After a loss that only the flow's own excess explains (see
    /// [`CongestionCause::ExcessOverCapacity`]), the rate need not fall further than
    /// [`EXCESS_DECREASE`] below the capacity: the excess was a few percent, and the native
    /// decrease (an eighth) left a flow alone on a short path 5–9 % under the link for
    /// seconds, while the increase, which shrinks near a known capacity, climbed back. The
    /// floor is also [`EXCESS_DECREASE`] below the rate before the decrease
    /// (`rate_before_pps`), if that is lower: a flow sending under the capacity that still
    /// overflowed a queue was not alone, or the capacity reads high, and the decrease must
    /// not raise its rate.
    fn decrease_to_capacity(&self, ctx: &mut CcContext<'_>, rate_before_pps: f64) {
        if let Some(c) = self.credible_capacity(ctx) {
            let floor = (1.0 - EXCESS_DECREASE) * c.min(rate_before_pps);
            let floor_period = 1e6 / floor;
            if ctx.pkt_snd_period_us() > floor_period {
                ctx.set_pkt_snd_period_us(floor_period);
            }
        }
    }

    /// Sets the own-queue model to the queue the RTT shows, if it held more (after a
    /// congestion event, whose excess was dropped).
    fn own_queue_to_seen(&mut self, ctx: &CcContext<'_>) {
        if let Some(c) = self.credible_capacity(ctx) {
            let seen = Self::queueing_us(ctx).min(self.own_queue.delay_us(c));
            self.own_queue.set_delay(seen, c);
        }
    }

    /// Records a congestion decrease (the rate before it, packets/s) and gives up more of a
    /// shrinking share (see [`ShareTrend`]); call it after the native decrease.
    ///
    /// Only a flow that delivers more than half of a credible capacity does: it is above its
    /// fair share whenever another flow is there (and only one that delivers less than 0.95
    /// of it: one that delivers the link is alone). Below that the flow cannot tell a share it
    /// should give up from one it should keep, and the rule, which reacts to the trend
    /// rather than to the level, then only adds swings: applied to every flow, two 100 Mb/s
    /// flows of 1 and 10 ms went from a throughput ratio of 0.91 to 0.72, the 1 ms flow
    /// giving up more at each of its frequent episodes.
    fn after_congestion_decrease(&mut self, ctx: &mut CcContext<'_>, rate_before_pps: f64) {
        self.last_decrease_rate_pps = Some(rate_before_pps);
        let best = self.best_delivery.get();
        self.decrease_delivery = (best > 0.0).then_some((best, ctx.now()));
        // What the model held beyond the queue the RTT shows was dropped.
        self.own_queue_to_seen(ctx);
        self.loss_since_decrease
            .restart(ctx.now(), ctx.snd_curr_seq());
        let gap = EPISODE_GAP_RTTS * u64::from(ctx.rtt_us()) + crate::time::SYN_US;
        let shrinking = self.share_trend.on_decrease(
            ctx.now(),
            gap,
            ctx.acked_pkts(),
            self.random_losses,
            SHRINKING_BELOW,
        );
        let best = self.best_delivery.get();
        let sharing_above_half = self
            .credible_capacity(ctx)
            .is_some_and(|c| best > SHRINKING_MIN_SHARE * c && best < SHRINKING_MAX_SHARE * c);
        if shrinking && sharing_above_half {
            let period = ctx.pkt_snd_period_us();
            ctx.set_pkt_snd_period_us(period / SHRINKING_EXTRA_DECREASE);
        }
    }

    fn adjusted_inputs(&self, ctx: &CcContext<'_>) -> CcInputs {
        let mut inputs = *ctx.inputs();
        // Without a credible capacity the increase comes from the probe, which only the
        // queue can stop: while one builds, the increase falls to its minimum (the queue
        // still fills, slowly, and its overflow makes flows converge). With a credible
        // capacity the spare capacity itself falls to zero near the link, as in UDT, and
        // braking on the queue would freeze whatever shares the flows had when the queue
        // formed (a deep queue takes minutes to overflow at the minimum increase).
        inputs.bandwidth_pps = if self.credible_capacity(ctx).is_none() && self.queue_standing(ctx)
        {
            1
        } else {
            self.effective_capacity(ctx)
        };
        let best = self.best_delivery.get().min(f64::from(u32::MAX)) as u32;
        inputs.rcv_rate_pps = inputs.rcv_rate_pps.max(best);
        inputs
    }

    /// One slow-start rate-control event: grow the window; leave slow start when the path is
    /// full (a queue shows, or the window exceeds a credible bandwidth-delay product).
    fn slow_start_event(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        let w = self.native.slow_start_grow(ctx, ack);
        // Paced at twice the window's rate rather than in bursts at line rate: the window
        // still doubles every round trip, but the queue a burst would build does not hide
        // the queue of a full pipe, which is what ends slow start.
        let srtt = f64::from(ctx.rtt_us().max(1));
        ctx.set_pkt_snd_period_us((srtt / (SS_PACING_GAIN * w.max(1.0))).max(1.0));
        let rtt = f64::from(ctx.min_rtt_us().max(1));
        let full_by_capacity = self
            .credible_capacity(ctx)
            .is_some_and(|c| w > c * rtt / 1e6 + CWND_HEADROOM_PKTS);
        // A plateau counts only once the window's rate is well past the best delivery rate:
        // on real hosts the first round trips' delivery samples can spike (a few ACKs close
        // together), and the best rate then seemed not to grow for three rounds although the
        // window was 4 % of the pipe (slow start ended at 0.7 s, 290 Mb/s on 1 Gb/s).
        let window_rate = w / (rtt / 1e6);
        let plateau =
            self.plateau
                .delivery_stalled(ctx.now(), ctx.rtt_us(), self.best_delivery.get())
                && window_rate > PLATEAU_WINDOW_RATIO * self.best_delivery.get();
        // A queue ends slow start only when two events in a row (a SYN or more apart) show it:
        // on real hosts one RTT sample can spike by twice the threshold with nothing queued
        // (through `udt relay` with clumped delivery, a 10 ms spike at 300 Mb/s ended slow
        // start, the pipe it measured was a third of the link, and the probe then took 5 s
        // to reach it).
        self.ss_queue_events = if self.queue_building(ctx) {
            self.ss_queue_events + 1
        } else {
            0
        };
        let queue = self.ss_queue_events >= SS_QUEUE_EVENTS;
        if w > ctx.max_cwnd() || full_by_capacity || plateau || queue {
            self.leave_slow_start(ctx);
        }
    }

    /// A congestion-avoidance rate-control event (the native increase, at most once per SYN),
    /// then the delivery bound.
    ///
    /// `fresh_rtt` is true when a full ACK has just brought a new RTT sample (a value other
    /// than the last: a receiver repeats its last measurement until its next ACK2 round
    /// trip); the rate-control clock also runs between ACKs, on the sample the last one
    /// brought.
    fn rate_control(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo, fresh_rtt: bool) {
        let elapsed_us = ctx.now().micros_since(self.last_rc_clock);
        self.last_rc_clock = ctx.now();
        if self.track_alone(ctx) {
            self.bound_rate(ctx);
            return;
        }
        let rate = Self::sending_rate_pps(ctx);
        // Counted once per RTT sample, and a SYN apart: the RTT comes with full ACKs only.
        // The rate-control clock, which runs every SYN while sending, would count one sample
        // again when it ticks before the next full ACK, and a lone spike would restart the
        // probe; so would the light ACKs between full ones, and the full ACKs that repeat the
        // receiver's last measurement (after a hole fills, each of them brought the same
        // stalled sample: 29 restarts in 21 s at 1 Gb/s, 100 ms, 0.1 % loss with stalls).
        if fresh_rtt {
            let (events, counted_at) = self.rc_queue_events;
            if !self.queue_standing(ctx) || Self::delivery_keeps_up(ctx) {
                self.rc_queue_events = (0, ctx.now());
            } else if events == 0 || ctx.now().micros_since(counted_at) >= crate::time::SYN_US {
                self.rc_queue_events = (events + 1, ctx.now());
            }
        }
        // A drain under the delivery rate (see `track_alone`) that has lasted long enough to
        // measure the bottleneck has found the path's limit as surely as a queue event: the
        // probe starts again from its first step once the queue is gone. (Draining, the
        // flow's delivery keeps up with what it sends, so the queue events never count; the
        // probe had doubled to the whole rate meanwhile, took the rate 7 % over the link
        // within half a second of the drain's end, and the queue rose to an early decrease:
        // 1 Gb/s, 10 ms, clumped, every 3.5 s, 0.908 of the link. Reset by any drain, as
        // soon as it began, the host stalls' lifted RTT samples restarted the probe again
        // and again: 100 Mb/s, 100 ms, 0.1 % loss, stalls, 0.886 → 0.830.)
        if rate < RECOVERY_BELOW * self.best_delivery.get()
            || self.recovery_target_pps(ctx).is_some()
            || self.rc_queue_events.0 >= PROBE_RESET_QUEUE_EVENTS
            || self.standing_delivery_pps(ctx).is_some()
        {
            self.probing_since = None;
        } else if self.probing_since.is_none() {
            self.probing_since = Some(ctx.now());
        }
        if self.queue_standing(ctx) {
            self.last_standing_queue = Some(ctx.now());
        }
        if self.early_decrease(ctx) {
            self.bound_rate(ctx);
            return;
        }
        let gain = if self.credible_capacity(ctx).is_some() {
            INCREASE_GAIN_WITH_CAPACITY
        } else {
            INCREASE_GAIN
        };
        self.native.set_increase(IncreaseRule::Linear { gain });
        let inputs = self.adjusted_inputs(ctx);
        let period_before = ctx.pkt_snd_period_us();
        self.native.on_ack(&mut ctx.with_inputs(&inputs), ack);
        self.window_growth_headroom(ctx, &inputs);
        if !self.rate_used() {
            // The native rule only increases here; a rate the sender does not use stays.
            ctx.set_pkt_snd_period_us(ctx.pkt_snd_period_us().max(period_before));
        } else {
            self.startup_recovery(ctx);
            self.first_climb(ctx, elapsed_us);
            self.empty_path_climb(ctx, elapsed_us);
        }
        self.bound_rate(ctx);
        // The window counts packets not yet cumulatively acknowledged, and a packet behind a
        // hole stays so until the retransmission fills it, a round trip later (more when the
        // retransmission is lost too: at 1 % loss and 1 Gb/s, 100 ms, about once a round trip):
        // the unacknowledged packets reach three to four bandwidth-delay products although the
        // path holds only one. While random losses are being taken in stride the window is
        // [`WINDOW_BDPS`] of them (more at higher loss); otherwise it stays the native one,
        // which also keeps flows that share a queue from running ahead of what they deliver.
        // That holds after a congestion decrease too, although the sender may then stop
        // behind the overflow's holes and empty the queue: two BDPs for the two round trips
        // after each decrease took two 1 Gb/s flows of 1 and 400 ms from a throughput ratio
        // of 0.93 to 0.58.
        let rtt_us = u64::from(ctx.rtt_us());
        let recent_random = self
            .last_random_loss
            .is_some_and(|t| ctx.now().micros_since(t) < 4 * rtt_us + crate::time::SYN_US);
        if recent_random {
            // From the sending rate, not the delivery rate: a window that followed delivery
            // would cap delivery, which would lower the window.
            let rate = Self::sending_rate_pps(ctx);
            let rtt = f64::from(ctx.rtt_us()) + crate::time::SYN_US as f64;
            // Holes last longer the more retransmissions are lost too, so the window grows
            // with the loss fraction, up to twice as many BDPs at 1 %.
            let bdps = WINDOW_BDPS
                * (1.0 + (self.loss.fraction() / WINDOW_FULL_LOSS_FRACTION).clamp(0.0, 1.0));
            let w = bdps * rate * rtt / 1e6 + CWND_HEADROOM_PKTS;
            if ctx.cwnd_pkts() < w {
                ctx.set_cwnd_pkts(w);
            }
        }
    }

    /// Raises the native window, the arrival rate times (RTT + SYN), to the arrival rate times
    /// (RTT + h) where that is larger, so that flows held by their windows behind one queue
    /// grow as fast per second whatever their RTTs (RTTs are the smoothed ones).
    ///
    /// A flow held by its window sends one window per round trip, and a headroom of h lets
    /// that grow by h / RTT per round trip, h / RTT² per second: with 4.11's h = SYN the
    /// growth falls with the square of the RTT, where the rate's increase (a step per SYN)
    /// does not depend on it. Flows that share a standing queue are all held by their
    /// windows (the queue's delay is in every RTT, and the rates run ahead), and their shares
    /// then follow their RTTs. Behind a queue of q every flow's RTT is its own path's plus q,
    /// so h = SYN × (RTT / (q + SYN))² gives each the growth SYN / (q + SYN)² a second, what
    /// a flow with no path delay of its own would get from 4.11's window. It stops at the
    /// queueing delay and at [`WINDOW_HEADROOM_MAX_OF_RTT`] of the RTT, so that a flow alone
    /// before its queue builds keeps 4.11's window (with only the quarter, `udt relay` with
    /// clumped delivery at 1 Gb/s, 100 ms, one BDP dropped 12 600–26 300 packets at its
    /// queue in three of four runs, 4.11's window 400–5 600 in four), and it never falls
    /// below SYN or [`WINDOW_GROWTH_PER_S`] × RTT². Eight flows of 1–250 ms on 600 Mb/s,
    /// one-BDP queue (seeds 1–4): a throughput ratio of 0.728 before, 0.812 with this
    /// (`docs/results.md`, thirty-third round); the 250 ms flow (RTT 0.4 s) had grown a sixth
    /// as fast per second as the others under their 150 ms queue.
    fn window_growth_headroom(&self, ctx: &mut CcContext<'_>, inputs: &CcInputs) {
        if self.native.in_slow_start() {
            return;
        }
        let rtt_s = f64::from(ctx.rtt_us()) / 1e6;
        let syn_s = crate::time::SYN_US as f64 / 1e6;
        // The queue every flow behind it has in its RTT, s.
        let queue_s = f64::from(ctx.rtt_us().saturating_sub(ctx.min_rtt_us())) / 1e6;
        let fair = syn_s * (rtt_s / (queue_s + syn_s)).powi(2);
        let headroom_s = (WINDOW_GROWTH_PER_S * rtt_s * rtt_s)
            .max(fair.min(WINDOW_HEADROOM_MAX_OF_RTT * rtt_s).min(queue_s));
        if headroom_s <= syn_s {
            return;
        }
        let w = f64::from(inputs.rcv_rate_pps) * (rtt_s + headroom_s) + CWND_HEADROOM_PKTS;
        if ctx.cwnd_pkts() < w {
            ctx.set_cwnd_pkts(w.min(ctx.max_cwnd()));
        }
    }

    /// After slow start, until the first congestion decrease or the end of its lifetime: a
    /// rate below its target — [`STARTUP_CAPACITY_FRACTION`] of a credible capacity, else
    /// [`STARTUP_TARGET_FRACTION`] of the pipe slow start saw — closes
    /// [`STARTUP_CLOSE_PER_SYN`] of the gap every SYN, unless a queue stands
    /// ([`UdtCc::queue_standing`]).
    fn startup_recovery(&mut self, ctx: &mut CcContext<'_>) {
        let capacity = self.credible_capacity(ctx);
        let best = self.best_delivery.get();
        let Some(startup) = &mut self.startup else {
            return;
        };
        // A credible capacity (which may come only later: the receiver's estimate takes about
        // 530 packets and ten ACKs to settle), else the pipe slow start saw. The pipe reads
        // low when slow start's own bursts ended it (through `udt relay` at 1 Gb/s, 100 ms:
        // 0.62 of the link, and the start-up ended at once); a capacity that reads high only
        // raises the rate until a queue shows, which pauses the start-up.
        // Once the start-up has outlived a congestion decrease, a target over
        // [`STARTUP_SUSPECT_OF_DELIVERY`] times the best delivery rate is approached only
        // through twice that rate, which the delivery then has to follow: a capacity that
        // reads many times the link (pairs that a clumping receiver squeezed) slipped through
        // now and then, and a start-up kept alive past its decreases, closing 2 % of a gap of
        // 3.4 Gb/s every SYN, took a 100 Mb/s flow to 650 Mb/s in a quarter of a second.
        // (Always at twice the delivery rate, flows behind host stalls, whose delivery rate
        // reads low, lost 0.1 of a 1 Gb/s, 100 ms link; and whenever a target was suspect, a
        // flow joining three others at 1 Gb/s, 300 ms with a small share caught up slower,
        // utilization 0.870 → 0.814.)
        let Some(target) = capacity
            .map(|c| STARTUP_CAPACITY_FRACTION * c)
            .or(startup.pipe_pps.map(|p| STARTUP_TARGET_FRACTION * p))
            .map(|t| {
                if startup.outlived_decrease && t > STARTUP_SUSPECT_OF_DELIVERY * best {
                    t.min(STARTUP_MAX_OF_DELIVERY * best)
                } else {
                    t
                }
            })
        else {
            return;
        };
        startup.recovering = true;
        let target_since = *startup.target_since.get_or_insert(ctx.now());
        // One step per SYN (rate control also runs on every ACK).
        if ctx.now().micros_since(startup.last_step) < crate::time::SYN_US {
            return;
        }
        startup.last_step = ctx.now();
        let rate = Self::sending_rate_pps(ctx);
        let lifetime = (STARTUP_MAX_RTTS * u64::from(ctx.rtt_us())).max(STARTUP_MAX_US);
        // The lifetime counts from when the target became known, not from the end of slow
        // start: under 1 % loss slow start ended at 20 Mb/s on a delivery plateau (holes hold
        // the ACK), with no pipe measured, and the capacity came a second later; counted from
        // the end of slow start, the start-up stopped at 0.5–0.9 of its target.
        if ctx.now().micros_since(target_since) > lifetime {
            self.startup = None;
            return;
        }
        // At the target the start-up waits rather than ends: the receiver's capacity estimate
        // is still settling (it read 0.94 of a 1 Gb/s link 0.1 s after slow start and the
        // link 0.3 s later), and the native increase then took 10 s from 0.93 to 0.97 of it.
        if rate >= target || self.queue_standing(ctx) {
            return;
        }
        let rate = rate + STARTUP_CLOSE_PER_SYN * (target - rate);
        ctx.set_pkt_snd_period_us(1e6 / rate);
    }

    /// Until its first congestion, or until it has drained a queue of its own (it has found
    /// its bottleneck; the climb's quarter a round trip took it 50 % past a 1 Gb/s link
    /// every 1.2 s after each drain), without a credible capacity, a flow whose path has no
    /// standing queue ([`UdtCc::queue_standing`]) keeps growing its rate by [`FIRST_CLIMB_PER_RTT`] a round trip (compounded over
    /// `elapsed_us`, the time since the last rate-control event), as long as the path has
    /// delivered at least half of it. Slow start often ends well below the link with no
    /// congestion: under random loss its window grows slower than it doubles (the cumulative
    /// ACK waits behind holes), and the queue its paced bursts build ends it at about half
    /// the link. Through `udt relay` at 1 Gb/s, 100 ms, one-BDP queue, clumped delivery and
    /// 0.1 % loss, it ended at 320 Mb/s (at 1 %: 18 Mb/s); from there the start-up's target
    /// (0.9 of the pipe slow start saw) and the linear probe, whose e-folding time is about
    /// 3 s at most, took 4–6 s to the link. The first standing queue pauses the climb (at
    /// most 50 ms after it formed, and the climb never passes twice the best delivery rate:
    /// read one sample at a time, host stalls paused it for good); the delivery
    /// bound then holds the rate, and the first congestion decrease ends it for good (a loss
    /// that ends slow start does not: slow start's own paced bursts build the queue that
    /// makes a random loss look like congestion).
    fn first_climb(&mut self, ctx: &mut CcContext<'_>, elapsed_us: u64) {
        if self.congestion_met
            || self.link_found
            || self.credible_capacity(ctx).is_some()
            || self.queue_standing(ctx)
        {
            return;
        }
        let rate = Self::sending_rate_pps(ctx);
        let best = self.best_delivery.get();
        if best <= 0.0 || rate > FIRST_CLIMB_DELIVERED_RATIO * best {
            return;
        }
        let rounds = elapsed_us as f64 / f64::from(ctx.rtt_us().max(crate::time::SYN_US as u32));
        let grown = rate * (1.0 + FIRST_CLIMB_PER_RTT).powf(rounds.min(1.0));
        ctx.set_pkt_snd_period_us(1e6 / grown);
    }

    /// With a credible capacity `c`, a flow past its start-up whose path shows no queue and
    /// delivers all it sends, while its rate is under [`EMPTY_PATH_UNTIL`] × `c` (and twice
    /// its best delivery rate), closes the gap to that with a time constant of
    /// [`EMPTY_PATH_TIME_CONSTANT_US`] (compounded over `elapsed_us`).
    ///
    /// The native increase near a known capacity caps the spare capacity at a ninth of it
    /// below the rate of the last decrease (4.11's rule, which makes flows that share a
    /// queue converge), about 1.3 % of the link a second: a flow whose competitors had left
    /// took 40 s to go from half of a 100 Mb/s, 300 ms link to all of it, and the last
    /// phase of the staggered flows ran at 0.79–0.84 of the link. With no queue there is no
    /// one to converge with; flows that share a link all see the queue once they fill it,
    /// and the native rules take over again. The gap, not the rate, sets the step, so the
    /// smaller of two flows that find room grows faster.
    fn empty_path_climb(&self, ctx: &mut CcContext<'_>, elapsed_us: u64) {
        let Some(c) = self.credible_capacity(ctx) else {
            return;
        };
        if self.startup.is_some() || self.queue_standing(ctx) || !Self::delivery_keeps_up(ctx) {
            return;
        }
        // Quiet for a while: no congestion and no standing queue. Right after a decrease
        // every flow that shares the queue finds room, and each took it for its own (four
        // flows at 100 Mb/s, 300 ms: 2.3 % of the packets lost, Jain 0.90).
        let quiet_us = EMPTY_PATH_QUIET_US.max(EMPTY_PATH_QUIET_RTTS * u64::from(ctx.rtt_us()));
        let now = ctx.now();
        let recent = |t: Option<Instant>| t.is_some_and(|t| now.micros_since(t) < quiet_us);
        if recent(self.last_congestion)
            || recent(self.last_standing_queue)
            || recent(self.last_loss_report)
        {
            return;
        }
        let rate = Self::sending_rate_pps(ctx);
        let target =
            (EMPTY_PATH_UNTIL * c).min(EMPTY_PATH_MAX_OF_DELIVERY * self.best_delivery.get());
        if rate >= target {
            return;
        }
        let t = elapsed_us.min(u64::from(ctx.rtt_us()).max(crate::time::SYN_US)) as f64;
        let closed = 1.0 - (-t / EMPTY_PATH_TIME_CONSTANT_US as f64).exp();
        let grown = rate + closed * (target - rate);
        ctx.set_pkt_snd_period_us(1e6 / grown);
    }

    /// Leaves slow start at the rate the path has shown it can carry.
    fn leave_slow_start(&mut self, ctx: &mut CcContext<'_>) {
        // When a queue ended slow start the path was full: the packets in flight over the RTT
        // that showed the queue are what the pipe holds.
        let pipe_pps = (self.queue_building(ctx) && ctx.last_rtt_us() > 0)
            .then(|| f64::from(ctx.inflight_pkts()) * 1e6 / f64::from(ctx.last_rtt_us()));
        // Leaving slow start is the answer to the congestion that ended it: losses in the
        // next round trip belong to it (a random loss while slow start's last bursts are still
        // queued looked like congestion, and cut the rate to 0.7 of 1 Gb/s for seconds).
        self.last_decrease = Some(ctx.now());
        self.ss_last_seq = Some(ctx.snd_curr_seq());
        // Losses of packets sent before now are slow start's overshoot, which this answers.
        self.loss_since_decrease
            .restart(ctx.now(), ctx.snd_curr_seq());
        // Slow start paces at twice the window's rate and is held by the window by design:
        // what it used says nothing about the rate it leaves with.
        self.rate_use = RateUse::new();
        // Slow start sends above the capacity by design (at twice the window's rate), and
        // leaving it answers the queue it built: what the model counted then is not an
        // overflow the RTT failed to show.
        self.own_queue_to_seen(ctx);
        self.startup = Some(Startup {
            left_at: ctx.now(),
            pipe_pps,
            recovering: false,
            target_since: None,
            last_step: ctx.now(),
            drained: false,
            outlived_decrease: false,
        });
        let best = self.best_delivery.get();
        let rtt = f64::from(ctx.min_rtt_us().max(1)) / 1e6;
        let window_rate = ctx.cwnd_pkts() / rtt.max(1e-6);
        // The window's rate is what the pipe held when slow start ended; the delivery rate
        // lags it by a round of doubling.
        let capacity = self.credible_capacity(ctx);
        let rate = match capacity {
            Some(c) => best.max(c.min(window_rate)),
            None => best.max(window_rate.min(SS_PACING_GAIN * best)),
        };
        let rate = if rate > 0.0 {
            rate
        } else {
            f64::from(ctx.rcv_rate_pps())
        };
        // The delivery bound applies from the next rate-control event on; applied here too,
        // the rate slow start leaves with is the one the native algorithm remembers as the
        // last decrease's. Otherwise that remembered rate was above the bounded one, and
        // the native rule that caps the increase at a ninth of the capacity below it held a
        // 100 Mb/s, 100 ms flow at 2 Mb/s more per second for 15 s.
        let rate = match (capacity, self.delivery_bound_pps(ctx)) {
            (None, Some(bound)) => rate.min(bound),
            _ => rate,
        };
        self.native.leave_slow_start(ctx, rate);
    }
}

/// The congestion window while random losses are taken in stride, in bandwidth-delay
/// products (sending rate × (RTT + SYN)), doubled as the loss fraction reaches
/// [`WINDOW_FULL_LOSS_FRACTION`]. The rate still paces every packet; the window only has to
/// stay out of the way. With 4 at 1 % loss, a 1 Gb/s, 100 ms path stalled on a full window
/// behind holes: 0.77–0.79 of the link in the simulator and 0.36 through `udt relay`; with 8,
/// 0.83–0.84 and 0.70 (with a 65 536-packet receive buffer; 25 600 caps the
/// window first there). With 8 at any loss, a 10 Mb/s, 10 ms path without random loss
/// retransmitted 1.2 % instead of 0.7 % (each timeout's go-back-N resends the whole window).
const WINDOW_BDPS: f64 = 4.0;

/// Least growth a flow held by its window has per second, 1/s, at any RTT (see
/// [`UdtCc::window_growth_headroom`]): about what the native window gives a flow whose
/// smoothed RTT is 0.32 s.
const WINDOW_GROWTH_PER_S: f64 = 0.1;
/// Most headroom the window gets over one RTT's worth of packets to keep flows of different
/// RTTs growing alike (see [`UdtCc::window_growth_headroom`]), as a fraction of the RTT (the
/// queueing delay bounds it too): the window stays within 1.25 times what the flow delivers
/// in a round trip. Half the RTT did no better for the ratios (seeds 1–2 of `rtt_fairness`).
const WINDOW_HEADROOM_MAX_OF_RTT: f64 = 0.25;
/// Loss fraction at which the random-loss window is twice [`WINDOW_BDPS`].
const WINDOW_FULL_LOSS_FRACTION: f64 = 0.01;

/// The start-up recovers to this fraction of the pipe slow start saw: that estimate read
/// 0.89–1.22 of the link in the simulator (the window counts packets sent at twice the rate
/// in the last round trip).
const STARTUP_TARGET_FRACTION: f64 = 0.9;
/// ... and to this fraction of a credible capacity (an estimate from packet pairs, which does
/// not count packets sent in slow start's bursts). The native increase closes the rest: at
/// 0.9, a 1 Gb/s, 100 ms flow took 10 s from 0.93 to 0.97 of the link. It is a trade: behind
/// a queue too shallow to show in the RTT (1 Gb/s, 10 ms, 0.1 BDP) the flow then overflows
/// the queue more often, and retransmitted 0.95 % of its packets at 0.9, 1.15 % at 0.97 and
/// 1.37 % at 0.99.
const STARTUP_CAPACITY_FRACTION: f64 = 0.97;
/// The start-up lasts at most this many RTTs...
const STARTUP_MAX_RTTS: u64 = 20;
/// ... or this long, µs, whichever is longer.
const STARTUP_MAX_US: u64 = 2_000_000;
/// A start-up target over this many times the best recent delivery rate is suspect...
const STARTUP_SUSPECT_OF_DELIVERY: f64 = 8.0;
/// ... and the start-up then aims at most at this many times that rate.
const STARTUP_MAX_OF_DELIVERY: f64 = 2.0;
/// Congestion ends the start-up once slow start's queue has drained, or this many RTTs
/// after slow start ended (a queue that outlasts them is not slow start's).
const STARTUP_DRAIN_MAX_RTTS: u64 = 8;
/// Fraction of the gap to the start-up target closed every SYN (half of it in 0.35 s).
const STARTUP_CLOSE_PER_SYN: f64 = 0.02;

/// Growth of the rate per round trip before the first congestion (see
/// [`UdtCc::first_climb`]): a quarter, as HyStart++'s conservative slow start grows the window
/// after a delay signal that may have been noise.
const FIRST_CLIMB_PER_RTT: f64 = 0.25;
/// The first climb goes on only while the best recent delivery rate is at least the rate
/// divided by this.
const FIRST_CLIMB_DELIVERED_RATIO: f64 = 2.0;

/// Gain of the linear increase (see [`IncreaseRule::Linear`]) while the spare capacity
/// comes from the delivery-rate probe (no credible capacity), whose schedule sets the pace.
/// At half this gain a clumped 1 Gb/s, 100 ms flow at 1 % loss (0.1-BDP queue) first
/// passed 0.9 of the link 24 s after its start instead of 16 s.
const INCREASE_GAIN: f64 = 3.0;
/// Gain of the linear increase with a credible capacity, where flows sharing a link grow
/// by `capacity/9` of spare capacity each (4.11's cap) once the increase runs on elapsed
/// time. Each step is a third of what a flow whose ACKs let it step every SYN took before,
/// two thirds of what one stepping every other SYN took. At 1.5, with the unsplit-pair
/// capacity, TCP friendliness at 100 ms fell to T = 0.23 (0.35 at 1) and the staggered
/// flows at 1 Gb/s, 300 ms lost 6 % of their packets (2 % at 1); `docs/cc.md`, row
/// "rate-control clock".
const INCREASE_GAIN_WITH_CAPACITY: f64 = 1.0;

/// After slow start the rate grows only while the sender used at least this fraction of it in
/// the last round trip (see [`RateUse`]).
const RATE_USED_FRACTION: f64 = 0.8;

/// The delivery bound never holds the rate below this fraction of the rate at the last
/// congestion decrease (one native decrease below it). Behind holes whose retransmissions
/// were lost, the cumulative ACK crept for a second while the path delivered the link (at
/// 1 % loss, 1 Gb/s, 200 ms: 0.3 of the link); once the older samples expired, the best
/// delivery rate read that, and the bound cut the rate to a third of the link for 14 s of
/// linear recovery. A decrease is the flow's answer to the congestion it met; the bound is
/// for climbs past what the path has shown, which the decrease point already bounds.
const BOUND_FLOOR_OF_DECREASE_RATE: f64 = 0.875;

/// A congestion episode starts with a decrease this many smoothed RTTs (plus a SYN) after
/// the previous decrease; closer ones answer the same overflow (see [`ShareTrend`]).
const EPISODE_GAP_RTTS: u64 = 4;
/// A flow is losing share when an episode delivered less than this fraction of the packets
/// per second of the episode before it (a flow alone delivers the link over each).
const SHRINKING_BELOW: f64 = 0.97;
/// A flow losing share multiplies its rate by this on top of the decrease (0.71 of the rate
/// instead of 8/9 of it). At 0.9 the staggered flows' worst Jain index was 0.985 instead of
/// 0.988, and their stability at 1 Gb/s, 300 ms 0.37 instead of 0.32.
const SHRINKING_EXTRA_DECREASE: f64 = 0.8;
/// ... and only when it delivers more than this fraction of a credible capacity (see
/// `UdtCc::after_congestion_decrease`) ...
const SHRINKING_MIN_SHARE: f64 = 0.5;
/// ... and less than this one: a flow alone delivers the link, and its episodes' means vary
/// with the number of decreases each took (at 10 Mb/s, 100 ms, one in two episodes took a
/// second decrease, delivered 0.93 of the one before, and the extra decrease that followed
/// cost 0.04 of the link: the increase at 10 Mb/s is slow).
const SHRINKING_MAX_SHARE: f64 = 0.95;

/// Window of the RTT minimum that shows a standing queue, µs (see [`UdtCc::queue_standing`]):
/// longer than the stalls of busy hosts (through `udt relay` on two shared cores, up to
/// 31 ms) plus the SYN between two RTT samples.
const STANDING_QUEUE_WINDOW_US: u64 = 50_000;

/// A sample taken more than this many round trips after the one before it stands alone (see
/// [`UdtCc::queue_at_loss_us`]): the queue may have filled meanwhile. Samples come once per
/// ACK2 round trip, about every 10 ms, so on paths under 5 ms every sample stands alone, and
/// the shallow queues that flows share there (which fill and drain between two samples) are
/// judged on the latest sample, as before.
const SPIKE_WINDOW_RTTS: u64 = 2;

/// A sample showing a queue that the sample before it did not show this fraction of is a
/// spike (see [`UdtCc::queue_at_loss_us`]).
const SPIKE_FRACTION: f64 = 0.5;

/// Slow-start events in a row that must show a queue to end slow start.
const SS_QUEUE_EVENTS: u32 = 2;
/// Rate-control events in a row (a SYN or more apart) that must show a queue to restart the
/// probe: on real hosts single RTT samples spike by milliseconds with nothing queued, and
/// through `udt relay` (1 Gb/s, 100 ms, clumped, 0.1 % loss) such spikes, several a second,
/// kept the probe at its first 1/32 for 18 s after an early decrease: the rate crept from
/// 260 to 310 Mb/s, in one run of four (288–450 Mb/s over 30 s, against 780–880).
const PROBE_RESET_QUEUE_EVENTS: u32 = 2;
/// The delivery rate keeps up with the sending rate of a round trip ago when it is at least
/// this fraction of it (see [`UdtCc::delivery_keeps_up`]): 1 % random loss and a few per cent
/// of ACK-timing noise fit under it, an excess of a twentieth does not.
const KEEP_UP_FRACTION: f64 = 0.95;

/// Slow start paces at this many times the window per RTT.
const SS_PACING_GAIN: f64 = 2.0;

/// Additive part of the window after slow start, packets (as the native algorithm).
const CWND_HEADROOM_PKTS: f64 = 16.0;

impl CongestionControl for UdtCc {
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        self.native.init(ctx);
        self.best_delivery = WindowedMax::default();
        self.recent_delivery = WindowedMax::default();
        self.last_ss_event = ctx.now();
        self.last_rc_clock = ctx.now();
        self.last_ack = ctx.snd_curr_seq();
        self.plateau = Plateau::default();
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        self.accrue_rate_use(ctx);
        self.drain_own_queue(ctx);
        let d = Self::clean_delivery(ctx);
        if d > 0.0 {
            let memory = Self::memory_us(ctx);
            self.best_delivery.update(ctx.now(), memory, d);
            self.recent_delivery
                .update(ctx.now(), Self::recent_delivery_window_us(ctx), d);
        }
        if let Some(c) = self.credible_capacity(ctx) {
            self.capacity_floor
                .update(ctx.now(), CAPACITY_FLOOR_MEMORY_US, c);
        }
        // Whether this ACK brought a new RTT sample (see below).
        let mut fresh_rtt = false;
        if ctx.last_rtt_us() > 0 {
            let memory = Self::memory_us(ctx);
            self.max_rtt
                .update(ctx.now(), memory, f64::from(ctx.last_rtt_us()));
            self.recent_min_rtt.update(
                ctx.now(),
                STANDING_QUEUE_WINDOW_US,
                f64::from(ctx.last_rtt_us()),
            );
            // A receiver repeats its latest measurement in every ACK until its next ACK2
            // round trip, so only a changed value is a new sample. (Counting every ACK that
            // acknowledged new data as one, the ACKs that follow a filled hole each brought
            // the same stalled sample: at 1 Gb/s, 100 ms, 0.1 % loss with stalls, 0.19 of
            // the link instead of 0.86.) Two measurements in a row equal to the microsecond
            // count as one, which only makes the signal slower to see a queue.
            fresh_rtt = ctx.last_rtt_us() != self.last_samples[0].0;
            if fresh_rtt {
                self.last_samples = [(ctx.last_rtt_us(), ctx.now()), self.last_samples[0]];
            }
        }
        self.last_ack = ack;
        let no_queue = ctx.last_rtt_us() > 0 && !self.queue_building(ctx);
        if let Some(startup) = &mut self.startup {
            startup.drained |= no_queue;
        }
        if self.native.in_slow_start() {
            if ctx.now().micros_since(self.last_ss_event) >= crate::time::SYN_US {
                self.last_ss_event = ctx.now();
                self.slow_start_event(ctx, ack);
            }
        } else {
            self.rate_control(ctx, ack, fresh_rtt);
        }
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, losses: &[SeqRange]) {
        self.last_loss_report = Some(ctx.now());
        self.accrue_rate_use(ctx);
        self.drain_own_queue(ctx);
        let interval = Self::loss_interval_us(ctx);
        let (lost, among) = self
            .loss
            .on_report(ctx.now(), interval, ctx.snd_curr_seq(), losses);
        self.random_loss.observe(ctx.now(), lost, among);
        self.loss_since_decrease
            .on_report(ctx.now(), interval, ctx.snd_curr_seq(), losses);
        // Only losses with no queue and no congestion event in the last round trips count as
        // the link's: the losses of an overflow are reported for a round trip after it, while
        // the decrease drains the queue (counted, they raised the background and the next
        // overflow went further: 2 % retransmitted at 1 Gb/s, 10 ms without random loss).
        let settle = 2 * u64::from(ctx.rtt_us()) + crate::time::SYN_US;
        let congestion_recent = self
            .last_congestion
            .is_some_and(|t| ctx.now().micros_since(t) < settle);
        // Nor do losses while more is lost than a link worth using loses, or while too few
        // packets have been counted to tell: an overflow the RTT does not show is likelier
        // then (a queue of a few packets overflows without a delay signal; early on, the
        // RTT variation a filling queue causes hides it). At 1 Gb/s, 1 ms, clumped, with a
        // 4 ms queue, slow start's overshoot (33 lost among 96) and the start-up's (4–5 %
        // of the packets) taught the background 1.3 %, and a full queue then overflowed
        // 1.5–2 % of the packets for 40 s, every loss taken as random. Nor do losses with
        // the queue at half its fullest: a queue of ten packets shared by four flows
        // (100 Mb/s, 1 ms) fills and drains between two RTT samples, and the flows learnt a
        // background of 0.2–0.5 % from their overflows, which then excused one flow's share
        // of each (Jain 0.70, 3.2 % of the packets lost; with this rule and the ones of
        // `loss_cause` that came with it, 0.97 and 0.84 %).
        if !self.queue_building(ctx)
            && !self.queue_above_half_fullest(ctx)
            && !self.loss_at_full_queue(ctx)
            && !congestion_recent
            && !self.queue_unseen(ctx)
            && self.loss.below_link_loss()
        {
            self.random_loss.add(ctx.now(), lost, among);
        }
        if self.native.in_slow_start() {
            // A queue, or more loss than a noisy link causes: a queue of a few packets
            // overflows long before it shows in the RTT.
            if self.path_congested(ctx) {
                self.last_congestion = Some(ctx.now());
                self.leave_slow_start(ctx);
            } else {
                self.random_losses += 1;
                self.last_random_loss = Some(ctx.now());
            }
            return;
        }
        let Some(cause) = self.loss_cause(ctx) else {
            self.random_losses += 1;
            self.last_random_loss = Some(ctx.now());
            return;
        };
        self.last_congestion = Some(ctx.now());
        // Losses of packets sent in slow start are its overshoot, answered when it ended. They
        // can be reported well after it: 0.25 s (2.3 round trips) later on a clumped
        // 100 Mb/s, 100 ms path, where the decrease they caused also ended the start-up, and
        // the rate stayed at 0.65 of the link for 4 s. A report that also names a later
        // packet goes on (the ranges are in order).
        if self
            .ss_last_seq
            .zip(losses.last())
            .is_some_and(|(last, l)| !l.last.is_after(last))
        {
            return;
        }
        // The queue of a congestion event takes a round trip (and the ACK timer) to show the
        // decrease; losses meanwhile — random ones included, which a busy lossy path reports
        // every few milliseconds — belong to the same event and must not start new epochs.
        if let Some(at) = self.last_decrease {
            let rtt = u64::from(ctx.rtt_us());
            let since = ctx.now().micros_since(at);
            // After one round trip, a loss that finds the queue still nearly full
            // means the congestion persists (other flows keep it full). The round trip is the
            // smoothed RTT, queueing included: the queue is shared, so
            // flows of every propagation RTT wait about as long, and a 1 ms flow that could
            // decrease every 11 ms under a 100 ms queue got 0.68 of a 100 ms flow's share.
            // And only while this flow still sends faster than the path delivers it: alone above
            // the link, a flow's own queue drains slowly after a decrease (at 1 Gb/s, 100 ms
            // with a 100 ms queue, at 5 % of the link) and still looked full a round trip
            // later; a second and third decrease 0.2 s apart took the rate to 0.85 of the link
            // and emptied the queue (0.4–0.55 of the link for seconds, through `udt relay`).
            // This only partly helps there: behind the overflow's holes the delivery rate
            // reads low too, and traced runs still showed a second decrease (no third).
            let queue = Self::queueing_us(ctx);
            let still_full = queue >= QUEUE_STILL_FULL_FRACTION * self.fullest_queue_us(ctx)
                && Self::sending_rate_pps(ctx) > Self::clean_delivery(ctx);
            // The second decrease waits, beyond the round trip, for the queue to have had time
            // to fall to [`QUEUE_STILL_FULL_FRACTION`] of its depth at the drain one decrease
            // makes (an eighth of the link: 0.8 × its delay), so that only a queue that stays
            // full counts. A flow sees a loss a round trip after the queue dropped it, and the
            // fall of the queue another queue delay later, so a short flow checked before any
            // decrease of the longer flows could show: four flows of 1, 7.4, 54 and 400 ms
            // under a 380 ms queue made 29, 25, 19 and 17 loss decreases in 90 s, the 1 and
            // 7.4 ms ones a second decrease 0.35–0.4 s after most overflows (`docs/results.md`,
            // twenty-eighth round). Without the second decrease at all, staggered flows at
            // 1 Gb/s, 300 ms overflowed more (utilization 0.883 → 0.823, two seeds).
            // Not where the wait is under a SYN: a queue that shallow falls within the ACK
            // clock's tick anyway, and the wait would only take up to half of the round trip in
            // which a second decrease may come (four flows sharing 10 packets at 100 Mb/s, 1 ms:
            // Jain 0.914 in the worst of six seeds, against 0.967).
            let fall_wait = QUEUE_FALL_WAIT_OF_DELAY * queue;
            let fall_wait = if fall_wait >= crate::time::SYN_US as f64 {
                fall_wait as u64
            } else {
                0
            };
            let first = rtt + crate::time::SYN_US + fall_wait;
            if since < first || (since < 2 * rtt + crate::time::SYN_US && !still_full) {
                return;
            }
        }
        self.last_decrease = Some(ctx.now());
        self.congestion_met = true;
        self.early.depth_us = Some(self.fullest_queue_us(ctx));
        // Armed again only once this decrease has drained the queue: the queue a decrease
        // leaves drains slowly (at 1/9 of the link), and behind the overflow's holes the
        // delivery rate reads low, so a flow that had just decreased looked like one building
        // the queue. An early decrease 0.4 s after the loss's took a 100 Mb/s, 100 ms flow's
        // rate to 0.82 of the link and emptied its one-BDP queue: the receiver got 0.76 of the
        // link in the next second.
        self.early.armed = false;
        // Congestion ends the start-up once it is recovering towards a target; a decrease
        // within two round trips of slow start's end, or before an RTT sample has shown the
        // queue of slow start's last bursts drained, is that queue, not a sign that the pipe
        // is smaller than it looked. At 1 Gb/s, 10 ms with 0.1 % random loss, the 9 ms queue
        // slow start left took 60 ms (six round trips) to drain; two random losses there
        // counted as congestion, ended the start-up at 0.62 of the link, and the native
        // increase took 20 s to reach 0.94 of it.
        let rtt = u64::from(ctx.rtt_us());
        let (settle, drain_max) = (
            2 * rtt + crate::time::SYN_US,
            STARTUP_DRAIN_MAX_RTTS * rtt + crate::time::SYN_US,
        );
        if let Some(s) = &mut self.startup {
            let since = ctx.now().micros_since(s.left_at);
            if s.recovering && since >= settle && (s.drained || since >= drain_max) {
                self.startup = None;
            } else {
                s.outlived_decrease |= since >= settle;
            }
        }
        self.probing_since = None;
        let rate_before = Self::sending_rate_pps(ctx);
        let inputs = self.adjusted_inputs(ctx);
        self.native.on_loss(&mut ctx.with_inputs(&inputs), losses);
        if cause == CongestionCause::ExcessOverCapacity {
            self.decrease_to_capacity(ctx, rate_before);
        }
        self.after_congestion_decrease(ctx, rate_before);
    }

    /// Pairs that other flows' packets split read low, and the lower the smaller the flow's
    /// share: with 4.11's estimate the larger of two flows read the higher capacity, and the
    /// increase, which follows it (4.11's cap of the spare capacity at a ninth of it), kept
    /// it larger. Two 1 Gb/s flows of 1 and 10 ms shared at a throughput ratio of 0.40–0.47
    /// with the time-scaled increase (`docs/cc.md`, row "rate-control clock").
    fn capacity_estimate(&self) -> super::CapacityEstimate {
        super::CapacityEstimate::UnsplitPairs
    }

    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, _pkt: &super::PacketInfo) {
        self.accrue_rate_use(ctx);
        self.rate_use.on_sent();
        // Drained here too: behind a hole the cumulative ACK, and `on_ack` with it, stops for
        // a round trip, and a model drained only there held a round trip of sending.
        self.drain_own_queue(ctx);
        let background = self
            .random_loss
            .fraction(ctx.now(), !self.congestion_met)
            .unwrap_or(0.0);
        self.own_queue.on_sent(1.0 - background);
        // The rate-control clock: UDT runs its increase when an ACK acknowledges new data,
        // which a hole in the sequence (random loss) stops for a round trip at a time; run it
        // every SYN while sending instead.
        if !self.native.in_slow_start()
            && ctx.now().micros_since(self.last_rc_clock) >= crate::time::SYN_US
        {
            self.rate_control(ctx, self.last_ack, false);
        }
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        self.accrue_rate_use(ctx);
        self.startup = None;
        self.last_congestion = Some(ctx.now());
        self.congestion_met = true;
        if self.native.in_slow_start() {
            self.leave_slow_start(ctx);
            return;
        }
        let inputs = self.adjusted_inputs(ctx);
        self.native.on_timeout(&mut ctx.with_inputs(&inputs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CcControls, CcInputs};

    /// A `UdtCc` and the inputs a connection would give it (1 Gb/s, 100 ms).
    struct Drive {
        cc: UdtCc,
        inputs: CcInputs,
        controls: CcControls,
        /// The share of its rate the sender uses (1: it sends at the rate).
        rate_used: f64,
        /// Steps taken (see [`Drive::step`]).
        steps: u32,
    }

    impl Drive {
        fn new() -> Self {
            let inputs = CcInputs {
                now: Instant::from_micros(1_000_000),
                mss: 1500,
                max_cwnd_pkts: 100_000.0,
                snd_curr_seq: SeqNo::new(999).unwrap(),
                rtt_us: 100_000,
                rtt_var_us: 1_000,
                bandwidth_pps: 83_000,
                capacity_reported: true,
                delivery_rate_pps: 80_000.0,
                sent_rate_rtt_ago_pps: 85_000.0,
                min_rtt_us: 100_000,
                last_rtt_us: 100_000,
                ..Default::default()
            };
            let mut d = Drive {
                cc: UdtCc::new(),
                inputs,
                controls: CcControls::default(),
                rate_used: 1.0,
                steps: 0,
            };
            d.with(|cc, ctx| cc.init(ctx));
            d
        }

        fn with(&mut self, f: impl FnOnce(&mut UdtCc, &mut CcContext<'_>)) {
            let mut ctx = CcContext::new(&self.inputs, &mut self.controls);
            f(&mut self.cc, &mut ctx);
        }

        /// Sends 100 packets over `us`, then an ACK arrives with an RTT of `rtt_ms` (give or
        /// take a few µs, as measured samples vary: a repeated value is the receiver's last
        /// measurement again). The rate-use measurement counts [`Drive::rate_used`] of what the
        /// rate allowed as sent.
        fn step(&mut self, us: u64, rtt_ms: u32) {
            self.step_rtt_us(us, rtt_ms * 1000);
        }

        /// [`Drive::step`] with the RTT in µs.
        fn step_rtt_us(&mut self, us: u64, rtt_us: u32) {
            self.steps += 1;
            let sent = (self.rate_used * self.rate() * us as f64 / 1e6).round() as u64;
            for _ in 0..sent {
                self.cc.rate_use.on_sent();
                self.cc.own_queue.on_sent(1.0);
            }
            self.inputs.snd_curr_seq = self.inputs.snd_curr_seq.add(100);
            self.inputs.now = self.inputs.now.plus_micros(us);
            self.inputs.acked_pkts += (self.inputs.delivery_rate_pps * us as f64 / 1e6) as u64;
            self.inputs.last_rtt_us = rtt_us + self.steps % 5;
            let ack = self.inputs.snd_curr_seq;
            self.with(|cc, ctx| cc.on_ack(ctx, ack));
        }

        /// `n` steps of [`Drive::step`], 10 ms apart.
        fn steps(&mut self, n: usize, rtt_ms: u32) {
            for _ in 0..n {
                self.step(10_000, rtt_ms);
            }
        }

        /// Ends slow start at the flow window with no queue (so no pipe measured) and no
        /// credible capacity, on a path that delivers `pps` packets/s.
        fn leave_slow_start_without_capacity(&mut self, pps: f64) {
            self.inputs.capacity_reported = false;
            self.inputs.delivery_rate_pps = pps;
            self.inputs.sent_rate_rtt_ago_pps = pps;
            self.leave_slow_start_at_flow_window();
        }

        /// A flow whose receiver reports no capacity, on a path that delivers 83 333
        /// packets/s (1 Gb/s) and got `sent_rtt_ago` packets/s from it a round trip ago, past
        /// slow start (a 30 ms queue ends it), its start-up (2 s at most) and, with
        /// `congestion_met`, its first climb.
        fn past_the_start_up_without_a_capacity(sent_rtt_ago: f64, congestion_met: bool) -> Self {
            let mut d = Drive::new();
            d.inputs.capacity_reported = false;
            d.inputs.delivery_rate_pps = 83_333.0;
            d.inputs.sent_rate_rtt_ago_pps = sent_rtt_ago;
            d.leave_slow_start_on_a_queue(130);
            d.cc.congestion_met |= congestion_met;
            d.steps(250, 100);
            assert!(d.cc.startup.is_none());
            d
        }

        /// Ends slow start at a 50-packet flow window, with no queue.
        fn leave_slow_start_at_flow_window(&mut self) {
            self.inputs.max_cwnd_pkts = 50.0;
            self.steps(2, 100);
            assert!(!self.cc.in_slow_start());
        }

        /// One RTT sample at the minimum, then two at `rtt_ms`: the queue they show ends slow
        /// start.
        fn leave_slow_start_on_a_queue(&mut self, rtt_ms: u32) {
            self.step(10_000, 100);
            self.step(10_000, rtt_ms);
            self.step(10_000, rtt_ms);
            assert!(!self.cc.in_slow_start());
        }

        /// A queue of 16 ms ends slow start and stays; three round trips on, a loss with the
        /// queue still up makes the first congestion decrease.
        fn first_congestion_behind_slow_starts_queue(&mut self) {
            self.leave_slow_start_on_a_queue(116);
            self.steps(30, 116);
            self.lose_newest();
            assert!(self.cc.congestion_met, "a congestion decrease");
        }

        /// Slow start ends on a queue; a second later the queue reaches 100 ms and
        /// overflows: the first congestion decrease, which shows the early decrease its depth.
        fn overflow_a_100_ms_queue(&mut self) {
            self.leave_slow_start_on_a_queue(130);
            self.steps(100, 100);
            self.step(10_000, 190);
            self.step(10_000, 200);
            self.lose_newest();
        }

        fn lose_newest(&mut self) {
            self.lose(self.inputs.snd_curr_seq);
        }

        fn lose(&mut self, s: SeqNo) {
            self.with(|cc, ctx| cc.on_loss(ctx, &[SeqRange { first: s, last: s }]));
        }

        /// Sets the sending rate, packets/s.
        fn send_at(&mut self, pps: f64) {
            self.controls.pkt_snd_period_us = 1e6 / pps;
        }

        fn rate(&self) -> f64 {
            1e6 / self.controls.pkt_snd_period_us
        }
    }

    #[test]
    fn before_the_first_congestion_a_loss_at_a_queue_of_host_noise_is_random() {
        // Slow start ended with no credible capacity (a clumped receiver reports none); the
        // RTT wanders 0-2 ms over its minimum, as it does through `udt relay` at any rate.
        // `samples` RTT samples in a row show the queue when the loss is reported.
        let noisy = |queue_ms: u32, samples: usize| {
            let mut d = Drive::new();
            d.leave_slow_start_without_capacity(20_000.0);
            for i in 0..20 {
                d.step(10_000, 100 + 2 * (i % 2));
            }
            d.steps(samples, 100 + queue_ms);
            // Sending what the path delivers: no excess of its own that could have raised
            // the queue between two samples.
            d.send_at(20_000.0);
            let rate = d.rate();
            d.lose_newest();
            (d.cc.congestion_met, d.cc.random_losses(), d.rate() < rate)
        };
        // 2 ms of a 100 ms path is noise: the first climb goes on.
        assert_eq!(noisy(2, 2), (false, 1, false));
        // 8 ms in two samples may be the flow's own queue overflowing...
        assert_eq!(noisy(8, 2), (true, 0, true));
        // ... but not in one sample 10 ms after one without it: a stall lifted it.
        assert_eq!(noisy(8, 1), (false, 1, false));
    }

    #[test]
    fn a_loss_behind_one_rtt_sample_a_stall_lifted_is_random_but_behind_two_is_congestion() {
        // 100 Mb/s, 10 ms, clumped (no credible capacity), past its first congestion: the
        // host stalls for 2 ms now and then, which lifts one RTT sample at a time by more than
        // the path's 1 ms queue holds (`from_start_noisy.toml`: every random loss reported
        // after a stall counted as an overflow, and the rate decayed to 14 Mb/s).
        let run = |lifted: usize, rate_pps: f64| {
            let mut d = Drive::new();
            d.leave_slow_start_without_capacity(8_000.0);
            d.cc.congestion_met = true;
            (d.inputs.min_rtt_us, d.inputs.rtt_us, d.inputs.rtt_var_us) = (10_000, 10_000, 500);
            // Long enough for the 100 ms samples of slow start to age out of the fullest
            // queue; the last of these samples is not lifted.
            for i in 0..300 {
                d.step_rtt_us(10_000, if i % 5 == 2 { 12_000 } else { 10_000 });
            }
            for _ in 0..lifted {
                d.step_rtt_us(10_000, 12_000);
            }
            d.send_at(rate_pps);
            let rate = d.rate();
            d.lose_newest();
            (d.cc.random_losses(), d.rate() < rate)
        };
        // At the rate the path delivers, the flow cannot have raised a queue by 2 ms in the
        // 10 ms since the last sample.
        assert_eq!(run(1, 8_000.0), (1, false), "one lifted sample: a stall");
        // A queue that holds two samples in a row, 10 ms apart, is full when it drops.
        assert_eq!(run(2, 8_000.0), (0, true), "two: a full queue");
        // Sending 1.5 × what is delivered, the flow's own excess adds 5 ms in 10 ms.
        assert_eq!(
            run(1, 12_000.0),
            (0, true),
            "a queue the flow's excess built"
        );
    }

    #[test]
    fn a_queue_ends_slow_start_only_when_two_events_in_a_row_show_it() {
        let mut d = Drive::new();
        d.step(10_000, 100);
        // One RTT sample 15 ms up (a busy host), then none: slow start goes on.
        d.step(10_000, 115);
        assert!(d.cc.in_slow_start());
        d.step(10_000, 100);
        d.step(10_000, 115);
        assert!(d.cc.in_slow_start());
        // A queue that stays.
        d.step(10_000, 116);
        assert!(!d.cc.in_slow_start());
    }

    #[test]
    fn the_start_up_runs_its_course_from_when_its_target_is_known() {
        let mut d = Drive::new();
        // Slow start ends with no credible capacity yet, at 20 000 packets/s.
        d.leave_slow_start_without_capacity(20_000.0);
        d.steps(300, 100);
        let before = d.rate();
        // Three seconds later the capacity report settles: on a path that delivers what is
        // sent, the start-up closes most of the gap to it within a second, as it would have
        // right after slow start.
        d.inputs.capacity_reported = true;
        climb_on_a_path_that_delivers(&mut d, 10, 100);
        // Before it, the first climb (no queue, no congestion yet) took the rate to twice what
        // the path delivered and the probe went on from there, well short of the target
        // (0.97 of 83 000).
        assert!(before < 60_000.0, "rate before {before}");
        assert!(d.rate() > 75_000.0, "rate {} a second later", d.rate());
    }

    #[test]
    fn a_queue_stands_on_the_last_two_samples_once_acks_stop() {
        let mut d = Drive::new();
        d.leave_slow_start_without_capacity(80_000.0);
        let standing = |d: &mut Drive| {
            let mut standing = false;
            d.with(|cc, ctx| standing = cc.queue_standing(ctx));
            standing
        };
        d.steps(10, 100);
        d.step(10_000, 116);
        assert!(
            !standing(&mut d),
            "one sample up, the others of the window not"
        );
        // No ACK for 60 ms (a hole holds the cumulative ACK): one sample a stall lifted, just
        // after one that was not, is still not a standing queue...
        d.inputs.now = d.inputs.now.plus_micros(60_000);
        assert!(!standing(&mut d));
        // ... but two are, once the window's older samples have aged out...
        d.steps(10, 100);
        d.step(10_000, 116);
        d.step(10_000, 116);
        assert!(
            !standing(&mut d),
            "the window still holds samples without a queue"
        );
        d.inputs.now = d.inputs.now.plus_micros(60_000);
        assert!(standing(&mut d));
        // ... and so is one that came long after the sample before it.
        d.steps(10, 100);
        d.inputs.now = d.inputs.now.plus_micros(100_000);
        d.step(10_000, 116);
        d.inputs.now = d.inputs.now.plus_micros(60_000);
        assert!(standing(&mut d));
    }

    #[test]
    fn a_start_up_past_a_decrease_approaches_a_suspect_capacity_only_through_twice_delivery() {
        let run = |decrease_first: bool| {
            let mut d = Drive::new();
            d.leave_slow_start_without_capacity(10_000.0);
            d.send_at(10_000.0);
            if decrease_first {
                // Another flow's queue (the flow's own delivery halves), and a loss with it
                // three round trips on: a decrease, which the start-up outlives (it has no
                // target yet). A queue of the flow's own at its best delivery rate would
                // have shown it the link and ended the start-up.
                d.inputs.delivery_rate_pps = 5_000.0;
                d.steps(25, 100);
                d.steps(30, 116);
                d.lose_newest();
                assert!(d.cc.congestion_met && d.cc.startup.is_some());
                d.inputs.delivery_rate_pps = 10_000.0;
                d.steps(5, 100);
                d.send_at(10_000.0);
            }
            // A capacity 20 times what the path delivers (pairs a clumping receiver squeezed).
            d.inputs.capacity_reported = true;
            d.inputs.bandwidth_pps = 200_000;
            d.steps(50, 100);
            d.rate()
        };
        let after_decrease = run(true);
        assert!(
            after_decrease < 25_000.0,
            "rate {after_decrease} on a path that delivers 10 000"
        );
        // A start-up that met no decrease follows the capacity, as before.
        let fresh = run(false);
        assert!(fresh > 50_000.0, "rate {fresh}");
    }

    #[test]
    fn a_start_up_without_a_capacity_drains_its_own_queue_once_slow_starts_has_drained() {
        // A clumped receiver reports no capacity; a 30 ms queue ends slow start and drains.
        let mut d = Drive::new();
        d.inputs.capacity_reported = false;
        d.inputs.delivery_rate_pps = 83_333.0;
        d.inputs.sent_rate_rtt_ago_pps = 88_000.0;
        d.leave_slow_start_on_a_queue(130);
        d.steps(10, 100);
        assert!(d.cc.startup.is_some_and(|s| s.drained));
        // The rate then sits 6 % over what the path delivers and a queue of its own stands.
        // The delivery bound's headroom allows that; the queue would grow to an overflow.
        d.controls.pkt_snd_period_us = 1e6 / 88_333.0;
        d.steps(40, 115);
        assert!(d.cc.startup.is_none(), "the start-up has found the link");
        assert!(
            d.rate() < 83_333.0,
            "drained under the delivery rate: {:.0} packets/s",
            d.rate()
        );
        // Once the queue has gone, the first climb (a quarter a round trip) does not take
        // the rate back over the link it has found: only the probe grows it.
        d.inputs.sent_rate_rtt_ago_pps = 83_333.0;
        d.steps(50, 100);
        assert!(d.cc.link_found);
        assert!(
            d.rate() < 1.05 * 83_333.0,
            "no first climb past the link found: {:.0} packets/s",
            d.rate()
        );
    }

    #[test]
    fn without_a_capacity_the_probe_starts_only_once_the_recovery_is_back_where_it_decreased() {
        // Alone at 1 Gb/s behind a clumped receiver: a 30 ms queue and a loss, a decrease.
        let link = 83_333.0;
        let mut d = Drive::past_the_start_up_without_a_capacity(link, true);
        d.send_at(link);
        d.steps(10, 130);
        d.lose_newest();
        assert!(d.rate() < 0.95 * link, "a congestion decrease");
        // The queue drains; the path now delivers what the flow sends, and the best delivery
        // rate (remembered for 2 s) forgets the link long before the rate is back.
        let mut back_after = None;
        for i in 0..1_000 {
            d.inputs.delivery_rate_pps = d.rate().min(link);
            d.inputs.sent_rate_rtt_ago_pps = d.rate();
            d.step(10_000, 100);
            if d.rate() >= link {
                back_after = Some(i);
                break;
            }
        }
        let steps = back_after.expect("the rate climbs back to the link");
        assert!(steps > 200, "the recovery takes seconds: {steps} steps");
        // Only there does the probe's clock start: it has not been doubling all the way up.
        let fraction = d.cc.probe_fraction(d.inputs.now);
        assert!(fraction <= PROBE_START, "probe at {fraction} of the rate");
    }

    #[test]
    fn a_flow_whose_path_has_emptied_climbs_back_to_the_capacity_within_seconds() {
        // 1 Gb/s with a credible capacity, past slow start and its start-up (2 s at most),
        // at half the link: its competitors have left and no queue shows.
        let link = 83_000.0;
        let run = |decrease: bool| {
            let mut d = Drive::new();
            d.leave_slow_start_on_a_queue(130);
            d.steps(250, 100);
            assert!(d.cc.startup.is_none());
            if decrease {
                d.steps(10, 130);
                d.lose_newest();
                assert!(d.cc.congestion_met, "a congestion decrease");
            }
            d.send_at(0.5 * link);
            for _ in 0..300 {
                d.inputs.delivery_rate_pps = d.rate().min(link);
                d.inputs.sent_rate_rtt_ago_pps = d.rate();
                d.step(10_000, 100);
            }
            d.rate() / link
        };
        // 3 s of quiet (no congestion, no queue), then a second and more of climbing.
        let quiet = run(false);
        assert!(quiet > 0.75, "at {quiet} of the link after 3 s");
        // Right after a congestion decrease every flow that shared the queue finds room:
        // the native rules recover, a ninth of the capacity a second at most.
        let after_decrease = run(true);
        assert!(after_decrease < 0.6, "at {after_decrease} of the link");
    }

    #[test]
    fn the_start_up_outlives_decreases_until_slow_starts_queue_has_drained() {
        let mut d = Drive::new();
        d.first_congestion_behind_slow_starts_queue();
        // That decrease leaves the start-up in place (the queue is slow start's).
        assert!(d.cc.startup.is_some(), "slow start's queue has not drained");
        // Once a sample has shown the queue gone, a later congestion decrease ends it.
        d.steps(5, 100);
        d.steps(30, 116);
        let before = d.rate();
        d.lose_newest();
        assert!(d.rate() < 0.95 * before, "a congestion decrease");
        assert!(d.cc.startup.is_none());
    }

    #[test]
    fn a_second_decrease_waits_for_a_deep_queue_to_be_able_to_fall() {
        let mut d = Drive::new();
        d.first_congestion_behind_slow_starts_queue();
        // Then a queue of 300 ms on the 100 ms path, with the smoothed RTT showing it.
        d.inputs.rtt_us = 400_000;
        d.steps(100, 400);
        let before = d.rate();
        d.lose_newest();
        assert!(
            d.rate() < 0.95 * before,
            "a congestion decrease at 300 ms of queue"
        );
        // The queue stays full and the path delivers less than the flow sends.
        d.inputs.delivery_rate_pps = 1_000.0;
        d.inputs.sent_rate_rtt_ago_pps = 1_000.0;
        // 450 ms on, past RTT + SYN (410 ms) but before RTT + SYN + 0.8 x 300 ms (650 ms):
        // the queue could not have shown a fall yet, so a loss is the same event.
        d.steps(45, 400);
        let before = d.rate();
        d.lose_newest();
        assert_eq!(d.rate(), before, "a second decrease 450 ms after the first");
        // 700 ms on, the queue had time to fall and did not: the congestion persists.
        d.steps(25, 400);
        let before = d.rate();
        d.lose_newest();
        assert!(
            d.rate() < 0.95 * before,
            "no second decrease 700 ms after the first"
        );
    }

    /// `round_trips` round trips of 10 steps (100 ms) each on a path that delivers what is
    /// sent, with RTT samples of `rtt_ms`; returns the factor by which the rate grew.
    fn climb_on_a_path_that_delivers(d: &mut Drive, round_trips: usize, rtt_ms: u32) -> f64 {
        let start = d.rate();
        for _ in 0..10 * round_trips {
            let r = d.rate();
            d.inputs.delivery_rate_pps = r;
            d.inputs.sent_rate_rtt_ago_pps = r;
            d.step(10_000, rtt_ms);
        }
        d.rate() / start
    }

    #[test]
    fn before_its_first_congestion_a_flow_climbs_a_quarter_per_round_trip() {
        let mut d = Drive::new();
        // Slow start ended with no queue and no credible capacity, at 20 000 packets/s.
        d.leave_slow_start_without_capacity(20_000.0);
        d.send_at(20_000.0);
        let climbed = climb_on_a_path_that_delivers(&mut d, 5, 100);
        assert!(
            climbed > 0.95 * 1.25f64.powi(5),
            "grew {climbed:.2} x in five round trips"
        );
        // A queue that holds every RTT sample up for a whole window pauses the climb (the
        // rate may still creep by the native minimum).
        let window = STANDING_QUEUE_WINDOW_US as usize / 10_000;
        for _ in 0..window {
            let r = d.rate();
            d.inputs.delivery_rate_pps = r;
            d.inputs.sent_rate_rtt_ago_pps = r;
            d.step(10_000, 110);
        }
        let queued = climb_on_a_path_that_delivers(&mut d, 3, 110);
        assert!(queued < 1.05, "grew {queued:.3} x over a queue");
        // The first congestion decrease ends it: a loss with the queue at its fullest.
        d.lose_newest();
        assert!(d.cc.congestion_met);
        d.steps(30, 100);
        let after = climb_on_a_path_that_delivers(&mut d, 5, 100);
        assert!(
            after < 1.25f64.powi(2),
            "grew {after:.2} x in five round trips after the first congestion"
        );
    }

    #[test]
    fn windows_under_one_queue_grow_as_fast_per_second_whatever_the_rtt() {
        let mut d = Drive::new();
        d.leave_slow_start_without_capacity(20_000.0);
        d.inputs.max_cwnd_pkts = 100_000.0;
        // What the path delivers (the window follows the arrival rate).
        d.inputs.rcv_rate_pps = 20_000;
        // The headroom over one RTT's worth of packets, s.
        let headroom_at = |d: &mut Drive, min_ms: u32, rtt_ms: u32| {
            d.inputs.min_rtt_us = min_ms * 1000;
            d.inputs.rtt_us = rtt_ms * 1000;
            d.steps(3, rtt_ms);
            (d.controls.cwnd_pkts - CWND_HEADROOM_PKTS) / 20_000.0 - f64::from(rtt_ms) / 1e3
        };
        // Two flows behind the same 150 ms queue, of 50 and 250 ms: 4.11's window gives both
        // a SYN of headroom, growth of 0.01 / 0.2² = 25 % a second for the first and
        // 0.01 / 0.4² = 6 % for the second. Here both grow 0.01 / 0.16² = 39 % a second.
        let short = headroom_at(&mut d, 50, 200);
        let long = headroom_at(&mut d, 250, 400);
        let (short_growth, long_growth) = (short / 0.2f64.powi(2), long / 0.4f64.powi(2));
        let fair = 0.01 / 0.16f64.powi(2);
        for growth in [short_growth, long_growth] {
            assert!(
                (growth / fair - 1.0).abs() < 0.01,
                "growth {short_growth:.3} and {long_growth:.3} a second, not {fair:.3}"
            );
        }
        // (minimum RTT ms, RTT ms, headroom s): it never exceeds the queue (a flow alone
        // with no queue keeps 4.11's SYN) or a quarter of the RTT, and behind a deep queue
        // the floor is 4.11's SYN.
        for (min_ms, rtt_ms, want) in [
            (100, 100, 0.01),
            (100, 130, 0.03),
            (140, 200, 0.05),
            (10, 110, 0.01),
        ] {
            let got = headroom_at(&mut d, min_ms, rtt_ms);
            assert!(
                (got - want).abs() < 1e-4,
                "headroom {got:.4} s at {rtt_ms} ms over {min_ms} ms, not {want}"
            );
        }
        // Beyond 0.32 s, at least 10 % a second.
        let very_long = headroom_at(&mut d, 100, 800);
        let grown = WINDOW_GROWTH_PER_S * 0.8 * 0.8;
        assert!(
            (very_long - grown).abs() < 1e-4,
            "headroom {very_long:.4} s at 800 ms, not {grown:.4}"
        );
    }

    #[test]
    fn a_rate_the_sender_does_not_use_does_not_grow() {
        let mut d = Drive::new();
        d.leave_slow_start_without_capacity(20_000.0);
        d.send_at(20_000.0);
        // Held by its window, the sender sends half of what its rate allows: neither the first
        // climb nor the native increase may raise a rate that is not being tested.
        // (The measurement covers the last round trip, so it takes up to two to show.)
        d.rate_used = 0.5;
        climb_on_a_path_that_delivers(&mut d, 2, 100);
        let held = climb_on_a_path_that_delivers(&mut d, 5, 100);
        assert!(held <= 1.0, "grew {held:.3} x while using half of its rate");
        // Once it sends at its rate again, the climb resumes.
        d.rate_used = 1.0;
        let resumed = climb_on_a_path_that_delivers(&mut d, 5, 100);
        assert!(
            resumed > 1.25f64.powi(4),
            "grew {resumed:.2} x in five round trips at its rate"
        );
    }

    #[test]
    fn a_burst_in_the_own_queue_model_is_no_congestion_while_losses_stay_at_the_background() {
        let decreased = |background: bool, rate_pps: f64| {
            let mut d = Drive::new();
            d.leave_slow_start_at_flow_window();
            d.inputs.max_cwnd_pkts = 100_000.0;
            d.send_at(rate_pps);
            d.steps(50, 100);
            if background {
                // 0.1 % random loss, counted while no queue showed.
                d.cc.random_loss.add(d.inputs.now, 20, 20_000);
            }
            // A host stalled, then sent its backlog at once: 5 ms of the capacity (83 000
            // packets/s) in the model, none in the RTT.
            for _ in 0..415 {
                d.cc.own_queue.on_sent(1.0);
            }
            let before = d.rate();
            d.lose_newest();
            d.rate() < before
        };
        // One loss among the background's, 10 % under the capacity, is not the flow's
        // excess...
        assert!(!decreased(true, 75_000.0));
        // ... but with no background known, any loss with the model that full is...
        assert!(decreased(false, 75_000.0));
        // ... and so is one near the capacity, where the excess may be the flow's own.
        assert!(decreased(true, 82_000.0));
    }

    #[test]
    fn the_delivery_bound_holds_the_rate_no_lower_than_one_decrease_below_the_last() {
        let mut d = Drive::new();
        d.leave_slow_start_without_capacity(80_000.0);
        d.send_at(80_000.0);
        // A queue builds and a loss with it is congestion: one decrease.
        d.steps(20, 110);
        let before = d.rate();
        d.lose_newest();
        assert!(d.cc.congestion_met);
        // The queue stays and, for three seconds, the ACKs creep behind lost retransmissions:
        // delivery reads a quarter of the rate, from packets sent at the rate.
        d.inputs.delivery_rate_pps = 20_000.0;
        d.inputs.sent_rate_rtt_ago_pps = 20_000.0;
        d.steps(300, 110);
        assert!(d.cc.best_delivery.get() <= 21_000.0);
        let held = d.rate();
        assert!(
            held >= BOUND_FLOOR_OF_DECREASE_RATE * before,
            "rate {held} after a decrease from {before}"
        );
    }

    #[test]
    fn a_flow_whose_share_shrank_since_the_last_episode_gives_up_more() {
        // Three congestion episodes 5 s apart, each met at the same rate. Over the first the
        // flow delivers 80 000 packets/s; over the second as much (alone), or 60 000 (a flow
        // that joined took a share) or 30 000 (below half the capacity, where the rule does
        // not apply). Returns the rate after the third decrease over the rate before it.
        let run = |second_episode_pps: f64| {
            let mut d = Drive::new();
            d.leave_slow_start_at_flow_window();
            d.inputs.max_cwnd_pkts = 100_000.0;
            for pps in [80_000.0, second_episode_pps] {
                d.send_at(80_000.0);
                d.steps(20, 110);
                d.lose_newest();
                assert!(d.cc.congestion_met);
                d.inputs.delivery_rate_pps = pps;
                d.inputs.sent_rate_rtt_ago_pps = pps;
                d.steps(480, 110);
            }
            d.send_at(80_000.0);
            let before = d.rate();
            d.lose_newest();
            d.rate() / before
        };
        let native = 8.0 / 9.0;
        let alone = run(80_000.0);
        assert!((alone - native).abs() < 0.01, "alone: {alone}");
        let shrinking = run(60_000.0);
        assert!(
            shrinking < 0.95 * alone
                && (shrinking - SHRINKING_EXTRA_DECREASE * native).abs() < 0.01,
            "shrinking: {shrinking}"
        );
        let below_half = run(30_000.0);
        assert!(
            (below_half - native).abs() < 0.01,
            "below half: {below_half}"
        );
    }

    #[test]
    fn the_start_up_follows_a_capacity_estimate_that_is_still_settling() {
        let mut d = Drive::new();
        // Slow start ends at the flow window while the receiver's estimate still reads 0.72
        // of the link.
        d.inputs.bandwidth_pps = 60_000;
        d.inputs.delivery_rate_pps = 55_000.0;
        d.inputs.sent_rate_rtt_ago_pps = 57_000.0;
        d.leave_slow_start_at_flow_window();
        d.steps(120, 100);
        let early = d.rate();
        // The estimate settles at the link: the start-up, still running, follows it.
        d.inputs.bandwidth_pps = 83_000;
        d.steps(100, 100);
        assert!(early < 60_000.0, "rate {early} before the estimate settled");
        assert!(
            d.rate() > 75_000.0,
            "rate {} a second after it settled",
            d.rate()
        );
    }

    #[test]
    fn losses_of_packets_sent_in_slow_start_are_not_a_new_congestion_event() {
        let run = |lose: &str| {
            let mut d = Drive::new();
            d.step(10_000, 100);
            let sent_in_slow_start = d.inputs.snd_curr_seq;
            // A queue ends slow start, and stays.
            d.step(10_000, 116);
            d.step(10_000, 116);
            assert!(!d.cc.in_slow_start());
            d.steps(30, 116);
            let before = d.rate();
            // 0.3 s later (three round trips) a loss is reported.
            let newest = d.inputs.snd_curr_seq;
            let old = SeqRange {
                first: sent_in_slow_start,
                last: sent_in_slow_start,
            };
            let new = SeqRange {
                first: newest,
                last: newest,
            };
            let report: Vec<SeqRange> = match lose {
                "old" => vec![old],
                "new" => vec![new],
                _ => vec![old, new],
            };
            d.with(|cc, ctx| cc.on_loss(ctx, &report));
            (before, d.rate())
        };
        let (before, after) = run("old");
        assert!(
            after >= before,
            "rate {before} -> {after} on a slow-start packet's loss"
        );
        // The same loss of a packet sent since is congestion, alone or in the same report.
        for lose in ["new", "both"] {
            let (before, after) = run(lose);
            assert!(
                after < 0.95 * before,
                "rate {before} -> {after} on the loss of {lose}"
            );
        }
    }

    #[test]
    fn early_decrease_answers_a_queue_the_flow_builds_before_it_overflows_again() {
        let mut d = Drive::new();
        d.overflow_a_100_ms_queue();
        let depth = d.cc.early.depth_us.expect("a depth");
        assert!((depth - 100_000.0).abs() < 10.0, "depth {depth} µs");
        // The queue the decrease leaves drains slowly, and behind the holes delivery reads
        // low: that is not a queue being built.
        for _ in 0..60 {
            d.send_at(85_000.0);
            d.step(10_000, 170);
        }
        assert_eq!(
            d.cc.early_decreases(),
            0,
            "the loss's decrease has not drained it yet"
        );
        // The decrease drains the queue; the flow then sends faster than the path delivers.
        d.steps(30, 105);
        // One sample a stall lifted out of the drained queue is not the queue rebuilt.
        d.send_at(85_000.0);
        d.step(10_000, 170);
        assert_eq!(d.cc.early_decreases(), 0, "a spike from 5 to 70 ms");
        d.steps(3, 105);
        d.send_at(85_000.0);
        d.step(10_000, 150);
        assert_eq!(d.cc.early_decreases(), 0, "50 ms is under 0.6 of the depth");
        d.send_at(85_000.0);
        d.step(10_000, 165);
        assert_eq!(d.cc.early_decreases(), 1);
        assert!(d.rate() < 0.9 * 85_000.0, "rate {}", d.rate());
        // Others keep the queue full: no second early decrease until it drains.
        for _ in 0..100 {
            d.send_at(85_000.0);
            d.step(10_000, 170);
        }
        assert_eq!(d.cc.early_decreases(), 1);
        // Drained, then built again by a flow that sends no faster than it is delivered.
        d.steps(10, 110);
        for _ in 0..50 {
            d.send_at(79_000.0);
            d.step(10_000, 170);
        }
        assert_eq!(d.cc.early_decreases(), 1);
        // The same queue, built by this flow: the second early decrease.
        d.send_at(85_000.0);
        d.step(10_000, 170);
        assert_eq!(d.cc.early_decreases(), 2);
    }

    /// Flows that together send a quarter more than the link fill one queue: each gets 0.8 of
    /// what it sent a round trip ago. An early decrease takes each under what the queue passes
    /// it, whatever its share, and keeps the shares; the native 8/9 would leave them above.
    #[test]
    fn early_decrease_drains_a_queue_that_flows_together_overfill() {
        let after_early_decrease = |rate: f64| {
            let mut d = Drive::new();
            d.overflow_a_100_ms_queue();
            // The loss's decrease drains the queue; then the flows overfill it again.
            d.steps(100, 105);
            d.inputs.sent_rate_rtt_ago_pps = rate;
            d.inputs.delivery_rate_pps = 0.8 * rate;
            for queue_ms in [30, 50, 65] {
                d.send_at(rate);
                d.step(10_000, 100 + queue_ms);
            }
            assert_eq!(d.cc.early_decreases(), 1, "rate {rate}");
            d.rate()
        };
        let (large, small) = (
            after_early_decrease(60_000.0),
            after_early_decrease(20_000.0),
        );
        assert!(
            large <= 0.95 * 0.8 * 60_000.0 + 1.0,
            "{large} packets/s; the native step alone leaves 53 333"
        );
        assert!(
            (large / small - 3.0).abs() < 0.01,
            "{large} against {small}"
        );
    }

    /// A flow past slow start on a 1 Gb/s, 100 ms path (83 333 packets/s) whose receiver
    /// reports a capacity 2 % high, delivering the link.
    fn alone_behind_a_high_capacity() -> Drive {
        let mut d = Drive::new();
        d.inputs.bandwidth_pps = 85_000;
        d.inputs.delivery_rate_pps = 83_333.0;
        d.inputs.sent_rate_rtt_ago_pps = 85_000.0;
        d.leave_slow_start_on_a_queue(130);
        d.steps(100, 100);
        d
    }

    /// Ten ACKs 10 ms apart with 12 ms of queue on [`alone_behind_a_high_capacity`]'s path;
    /// asserts that the rate is then under the 83 333 packets/s the path delivers by at least
    /// [`ALONE_DRAIN_MIN`], and returns it (packets/s).
    fn drains_for_100_ms(d: &mut Drive) -> f64 {
        for _ in 0..10 {
            d.step(10_000, 112);
        }
        let rate = d.rate();
        assert!(
            rate <= 83_333.0 * (1.0 - ALONE_DRAIN_MIN) + 1.0,
            "under the delivery rate: {rate}"
        );
        rate
    }

    #[test]
    fn a_flow_alone_drains_the_queue_it_builds_under_a_capacity_that_reads_high() {
        let mut d = alone_behind_a_high_capacity();
        // The increase has taken the rate to the capacity it is told, over the link: a queue
        // builds and stands.
        d.send_at(85_000.0);
        let rate = drains_for_100_ms(&mut d);
        assert!(
            rate >= 83_333.0 * (1.0 - EXCESS_DECREASE) - 1.0,
            "no native decrease: {rate}"
        );
        assert_eq!(d.cc.early_decreases(), 0);
        assert_eq!(d.cc.alone.yields, 0);
        // A deeper queue drains faster, up to the cap.
        d.send_at(85_000.0);
        d.step(10_000, 125);
        let deeper = d.rate();
        assert!(deeper < rate, "{deeper} against {rate}");
        assert!(
            deeper >= 83_333.0 * (1.0 - EXCESS_DECREASE) - 1.0,
            "{deeper}"
        );
    }

    #[test]
    fn a_queue_that_outlasts_the_drain_is_another_flows_and_the_flow_makes_room() {
        let mut d = alone_behind_a_high_capacity();
        // Another flow keeps the queue standing whatever this one does.
        for _ in 0..100 {
            d.step(10_000, 115);
        }
        assert_eq!(d.cc.alone.yields, 0, "within the drain's time");
        let before = d.rate();
        for _ in 0..30 {
            d.step(10_000, 115);
        }
        assert_eq!(d.cc.alone.yields, 1);
        let after = d.rate();
        assert!(
            after < 0.9 * before,
            "a native decrease: {before} -> {after}"
        );
        // Not alone now: no bound under the delivery rate, and no second decrease of this
        // kind while the doubt lasts.
        for _ in 0..500 {
            d.send_at(84_000.0);
            d.step(10_000, 115);
        }
        assert_eq!(d.cc.alone.yields, 1);
        assert!(d.rate() > 83_333.0, "rate {}", d.rate());
    }

    #[test]
    fn a_capacity_that_reads_high_for_a_while_does_not_stop_the_drain() {
        let mut d = alone_behind_a_high_capacity();
        // The capacity now reads half again the link while a queue stands: the flow delivers
        // under 0.9 of that reading, but not of the lowest of the last seconds, and drains.
        d.inputs.bandwidth_pps = 125_000;
        d.send_at(85_000.0);
        drains_for_100_ms(&mut d);
        assert_eq!(d.cc.alone.yields, 0);
        // Once the high reading has lasted the floor's memory, with no queue meanwhile, it is
        // the capacity the test compares with: the flow delivers under 0.9 of it, so it is
        // not alone, and its queue does not age.
        for _ in 0..(CAPACITY_FLOOR_MEMORY_US / 10_000 + 200) {
            d.send_at(83_000.0);
            d.step(10_000, 100);
        }
        let c = f64::from(d.inputs.bandwidth_pps);
        d.with(|cc, ctx| assert_eq!(cc.alone_delivery_pps(ctx, c), None));
        d.send_at(85_000.0);
        for _ in 0..150 {
            d.step(10_000, 112);
        }
        assert!(d.cc.alone.not_alone_until.is_none());
        // The estimate settles with the queue still there: the flow drains it as one alone.
        d.inputs.bandwidth_pps = 85_000;
        drains_for_100_ms(&mut d);
        assert_eq!(d.cc.alone.yields, 0);
    }

    #[test]
    fn a_flow_without_a_capacity_drains_its_queue_under_a_clean_delivery_rate() {
        // A clumped receiver withholds its capacity; the path delivers 83 333 packets/s.
        // `loss_within_the_clean_stretch`: a loss is reported as the queue starts to stand.
        let run = |loss_within_the_clean_stretch: bool| {
            let mut d = Drive::past_the_start_up_without_a_capacity(85_000.0, false);
            // The probe has taken the rate past the link and a queue stands.
            d.send_at(85_000.0);
            if loss_within_the_clean_stretch {
                d.lose_newest();
            }
            for _ in 0..10 {
                d.step(10_000, 112);
            }
            d.rate()
        };
        let clean = run(false);
        assert!(
            clean <= 83_333.0 * (1.0 - ALONE_DRAIN_MIN) + 1.0,
            "under the delivery rate: {clean}"
        );
        assert!(
            clean >= 83_333.0 * (1.0 - EXCESS_DECREASE) - 1.0,
            "no native decrease: {clean}"
        );
        // Behind a hole the delivery rate reads low: the bound stays the delivery rate plus
        // its headroom.
        let lossy = run(true);
        assert!(lossy > 83_333.0, "no drain after a loss: {lossy}");
    }

    #[test]
    fn after_a_drain_without_a_capacity_the_probe_starts_again_from_its_first_step() {
        // Past the start-up and its first climb (a congestion decrease ends that), and long
        // enough without a queue for the probe to have doubled to the whole rate: the path
        // delivers everything sent.
        let mut d = Drive::past_the_start_up_without_a_capacity(83_333.0, true);
        d.steps(150, 100);
        d.with(|cc, ctx| assert!(cc.probe_fraction(ctx.now()) >= 1.0));
        // A queue stands and the flow drains it...
        d.send_at(85_000.0);
        for _ in 0..30 {
            d.step(10_000, 112);
        }
        assert!(d.rate() < 83_333.0, "drained: {}", d.rate());
        // ... and once it is gone, the probe climbs from its first step, not from where it
        // had doubled to.
        d.steps(30, 100);
        assert!(
            d.rate() < 83_333.0 * 1.03,
            "0.3 s after the drain: {}",
            d.rate()
        );
    }

    #[test]
    fn a_flow_that_shares_the_link_keeps_the_native_rules_under_a_standing_queue() {
        let mut d = alone_behind_a_high_capacity();
        d.inputs.delivery_rate_pps = 40_000.0;
        d.inputs.sent_rate_rtt_ago_pps = 41_000.0;
        // The best of the last two RTTs forgets the old delivery rate.
        d.steps(30, 100);
        d.send_at(41_000.0);
        for _ in 0..20 {
            d.step(10_000, 115);
        }
        assert!(d.rate() >= 41_000.0, "rate {}", d.rate());
        assert_eq!(d.cc.alone.yields, 0);
    }

    #[test]
    fn losses_reported_after_a_decrease_count_only_for_packets_sent_after_it() {
        // A lossy 1 Gb/s, 100 ms path: a background of 0.1 %, learnt with no queue.
        let run = |new_losses: u32| {
            let mut d = Drive::new();
            d.leave_slow_start_on_a_queue(130);
            for i in 0..150 {
                d.step(10_000, 100);
                if i % 10 == 0 {
                    d.lose_newest();
                }
            }
            assert_eq!(d.cc.random_losses(), 15);
            // The queue overflows: ten losses in one report.
            d.step(10_000, 190);
            d.step(10_000, 200);
            let newest = d.inputs.snd_curr_seq;
            let overflow = |k: u32| SeqRange {
                first: newest.sub(50 - k * 10),
                last: newest.sub(41 - k * 10),
            };
            d.with(|cc, ctx| cc.on_loss(ctx, &[overflow(0)]));
            let decreased = d.rate();
            // For the next round trip the receiver reports the rest of the overflow (packets
            // sent before the decrease) while the queue drains slowly.
            for k in 1..=4 {
                d.step(50_000, 195);
                d.with(|cc, ctx| cc.on_loss(ctx, &[overflow(k)]));
            }
            assert!(
                d.rate() >= 0.99 * decreased,
                "the hold covers the event's own losses"
            );
            // 250 ms after the decrease, with the queue still 90 ms deep: losses of packets
            // sent after it.
            d.step(50_000, 190);
            let before = d.rate();
            let s = d.inputs.snd_curr_seq;
            for i in 0..new_losses {
                d.lose(s.sub((new_losses - 1 - i) * 3));
            }
            (before, d.rate())
        };
        let (before, after) = run(1);
        assert!(
            after >= 0.99 * before,
            "one random loss of a later packet: rate {before} -> {after}"
        );
        // More losses of later packets than the background explains: the queue still
        // overflows (others keep it full), and that is a new congestion event.
        let (before, after) = run(6);
        assert!(after < 0.95 * before, "rate {before} -> {after}");
    }

    #[test]
    fn rtt_spikes_and_stalls_do_not_restart_the_probe_but_a_queue_of_the_flows_excess_does() {
        let mut d = Drive::new();
        d.leave_slow_start_without_capacity(80_000.0);
        d.cc.congestion_met = true;
        d.send_at(80_000.0);
        d.steps(5, 100);
        let since = d.cc.probing_since;
        assert!(since.is_some(), "probing at the best delivery rate");
        // One RTT sample in five 10 ms up (a busy host): the probe keeps its age.
        for i in 0..100 {
            d.step(10_000, if i % 5 == 4 { 110 } else { 100 });
        }
        assert_eq!(d.cc.probing_since, since);
        // Nor does a spike that the rate-control clock sees again before the next full ACK.
        d.step(10_000, 100);
        d.step(10_000, 110);
        for _ in 0..3 {
            d.inputs.now = d.inputs.now.plus_micros(10_000);
            let pkt = crate::cc::testkit::packet(d.inputs.snd_curr_seq);
            d.with(|cc, ctx| cc.on_packet_sent(ctx, &pkt));
        }
        d.step(10_000, 100);
        assert_eq!(d.cc.probing_since, since);
        // Nor do stalls that lift two samples in three, back to back (a host descheduled for
        // 20 ms at a time): some sample of every 50 ms still shows the empty path.
        for i in 0..100 {
            d.step(10_000, if i % 3 == 2 { 100 } else { 110 });
        }
        assert_eq!(d.cc.probing_since, since);
        // Two samples up in a row, which a stall makes too, no longer restart it...
        d.step(10_000, 110);
        d.step(10_000, 110);
        assert_eq!(d.cc.probing_since, since);
        // Nor does a queue that holds every sample up while the path delivers all the flow
        // sends (another flow's queue, or a host's noise)...
        for _ in 0..6 {
            d.step(10_000, 110);
        }
        assert_eq!(d.cc.probing_since, since);
        // ... but one that holds them up while the flow sends more than is delivered does.
        d.inputs.sent_rate_rtt_ago_pps = 90_000.0;
        for _ in 0..3 {
            d.step(10_000, 110);
        }
        assert_ne!(d.cc.probing_since, since);
    }

    #[test]
    fn background_loss_excuses_what_it_explains_and_no_more() {
        let mut bg = RandomLoss::default();
        let t = Instant::ZERO + std::time::Duration::from_secs(1);
        // No background known yet: every loss may be congestion.
        assert!(bg.exceeded_by(t, 1, 17_000, true));
        // 0.1 % of 20 000 packets, reported while no queue showed.
        bg.add(t, 20, 20_000);
        assert_eq!(bg.fraction(t, true), Some(0.001));
        // Two round trips at 1 Gb/s, 100 ms: 17 expected; 37 is the margin.
        assert!(!bg.exceeded_by(t, 17, 17_000, true));
        assert!(!bg.exceeded_by(t, 37, 17_000, true));
        assert!(bg.exceeded_by(t, 38, 17_000, true));
        // An overflow on top (a few per cent of the packets) is congestion.
        assert!(bg.exceeded_by(t, 17 + 170, 17_000, true));
    }

    #[test]
    fn background_loss_needs_enough_packets_and_forgets_old_buckets() {
        let mut bg = RandomLoss::default();
        let at = |s: u64| Instant::ZERO + std::time::Duration::from_secs(s);
        bg.add(at(1), 5, 9_000);
        assert_eq!(bg.fraction(at(1), true), None, "9 000 packets are too few");
        bg.add(at(2), 5, 1_000);
        assert_eq!(bg.fraction(at(2), true), Some(0.001));
        // Two buckets later (5 s each) the old counts are gone.
        bg.add(at(7), 0, 10_000);
        assert_eq!(bg.fraction(at(7), true), Some(10.0 / 20_000.0));
        bg.add(at(13), 0, 10_000);
        assert_eq!(bg.fraction(at(13), true), Some(0.0));
        // A background of zero excuses nothing.
        assert!(bg.exceeded_by(at(13), 1, 17_000, true));
    }

    #[test]
    fn a_background_that_every_loss_since_contradicts_is_set_aside() {
        let at = |s: u64| Instant::ZERO + std::time::Duration::from_secs(s);
        let mut bg = RandomLoss::default();
        // 0.5 % learnt in a start-up (10 losses among 2 000 packets, before the first
        // decrease), with every loss counted too.
        bg.add(at(1), 10, 2_000);
        bg.observe(at(1), 10, 2_000);
        assert_eq!(bg.fraction(at(1), true), Some(0.005));
        // Nothing learnt since, and the path loses 1 packet in 100 000: the background would
        // excuse 250 times that, and is set aside.
        bg.observe(at(6), 1, 100_000);
        bg.observe(at(12), 0, 0);
        assert_eq!(bg.fraction(at(12), true), None);
        assert!(bg.exceeded_by(at(12), 1, 17_000, true));
        // A flow that keeps a queue of its own learns nothing while it shows, but every loss
        // still bears the background out: it stays.
        let mut bg = RandomLoss::default();
        bg.add(at(1), 20, 20_000);
        bg.observe(at(1), 20, 20_000);
        for s in 2..30 {
            bg.observe(at(s), 10, 10_000);
        }
        assert_eq!(bg.fraction(at(30), true), Some(0.001));
        // Fewer than 10 000 packets since say nothing either way.
        let mut bg = RandomLoss::default();
        bg.add(at(1), 20, 20_000);
        bg.observe(at(20), 0, 9_999);
        assert_eq!(bg.fraction(at(20), true), Some(0.001));
    }

    #[test]
    fn a_lossy_link_shows_its_background_after_ten_losses() {
        let mut bg = RandomLoss::default();
        let t = Instant::ZERO + std::time::Duration::from_secs(1);
        // Ten losses among too few packets may be one burst.
        bg.add(t, 10, 999);
        assert_eq!(bg.fraction(t, true), None);
        bg.add(t, 0, 1);
        assert_eq!(bg.fraction(t, true), Some(0.01));
        // 1 % of a few round trips' packets is then no congestion; five times that is.
        assert!(!bg.exceeded_by(t, 7, 330, true));
        assert!(bg.exceeded_by(t, 5 * 7, 330, true));
        // After the first congestion decrease the estimate needs its 10 000 packets again.
        assert_eq!(bg.fraction(t, false), None);
        assert!(bg.exceeded_by(t, 1, 330, false));
        // Nine losses among 5 000 packets are not enough yet.
        let mut bg = RandomLoss::default();
        bg.add(t, 9, 5_000);
        assert_eq!(bg.fraction(t, true), None);
    }

    /// A 1 ms path at 300 Mb/s (25 000 packets/s) after slow start, sending at `pps`, whose
    /// RTT samples show `queue_us` of queueing for 20 SYNs.
    fn short_path_with_queue(pps: f64, queue_us: u32) -> Drive {
        let mut d = Drive::new();
        d.inputs.rtt_us = 1_000;
        d.inputs.rtt_var_us = 20;
        d.inputs.min_rtt_us = 1_000;
        d.inputs.bandwidth_pps = 25_000;
        d.inputs.delivery_rate_pps = 25_000.0;
        d.inputs.sent_rate_rtt_ago_pps = 25_000.0;
        d.inputs.max_cwnd_pkts = 50.0;
        for _ in 0..3 {
            d.step_rtt_us(10_000, 1_000);
        }
        assert!(!d.cc.in_slow_start());
        d.send_at(pps);
        for _ in 0..20 {
            d.step_rtt_us(10_000, 1_000 + queue_us);
        }
        d
    }

    #[test]
    fn on_a_path_shorter_than_the_queue_floor_an_overflow_is_congestion() {
        // The one-BDP queue of a 1 ms path holds 1 ms, under the 1.5 ms floor: a loss with
        // 0.9 ms queued is its overflow, and the flow, above the link, decreases.
        let mut d = short_path_with_queue(26_000.0, 900);
        let before = d.rate();
        d.lose_newest();
        assert!(d.rate() < 0.95 * before, "{} -> {}", before, d.rate());
        assert_eq!(d.cc.random_losses(), 0);
        // A loss over 0.3 ms of queue, under half the RTT, where the queue has shown 0.9 ms,
        // is still taken as random (at a rate under the capacity: above it, see the next
        // test).
        let mut d = short_path_with_queue(24_500.0, 900);
        for _ in 0..5 {
            d.step_rtt_us(10_000, 1_300);
        }
        let before = d.rate();
        d.lose_newest();
        assert!(d.rate() >= before, "{} -> {}", before, d.rate());
        assert_eq!(d.cc.random_losses(), 1);
    }

    #[test]
    fn a_queue_too_shallow_to_show_counts_when_full() {
        // The fullest queue seen, 0.3 ms, is under the 0.5 ms threshold of a 1 ms path: a
        // queue that shallow never shows more, and a loss at its fullest is its overflow. A
        // flow near the capacity is alone with it: its decrease stops just below the capacity.
        let mut d = short_path_with_queue(24_500.0, 300);
        let before = d.rate();
        d.lose_newest();
        assert_eq!(d.cc.random_losses(), 0);
        let floor = (1.0 - EXCESS_DECREASE) * before;
        assert!(
            (d.rate() - floor).abs() < 1.0,
            "{} against {floor}",
            d.rate()
        );
        // A loss with the queue well under its fullest is random.
        let mut d = short_path_with_queue(24_500.0, 300);
        for _ in 0..5 {
            d.step_rtt_us(10_000, 1_100);
        }
        let before = d.rate();
        d.lose_newest();
        assert!(d.rate() >= before, "{} -> {}", before, d.rate());
        assert_eq!(d.cc.random_losses(), 1);
        // A flow well below the capacity shares the queue: the native decrease, which makes
        // flows converge.
        let mut d = short_path_with_queue(15_000.0, 300);
        let before = d.rate();
        d.lose_newest();
        assert_eq!(d.cc.random_losses(), 0);
        assert!(d.rate() < 0.9 * before, "{} -> {}", before, d.rate());
    }

    #[test]
    fn a_flow_under_the_capacity_answers_a_full_queue_shallower_than_4_ms() {
        // A 1 ms path whose queue fills to 1 ms: deep enough to show (over the 0.5 ms
        // threshold), never 4 ms deep. A flow at 0.6 of the capacity shares it; a loss with
        // the queue at its fullest is its overflow, whoever filled it.
        let mut d = short_path_with_queue(15_000.0, 1_000);
        let before = d.rate();
        d.lose_newest();
        assert_eq!(d.cc.random_losses(), 0);
        assert!(d.rate() < 0.9 * before, "{} -> {}", before, d.rate());
        // With the queue at 0.6 of its fullest (under the 0.9 that counts), the loss is random.
        let mut d = short_path_with_queue(15_000.0, 1_000);
        for _ in 0..5 {
            d.step_rtt_us(10_000, 1_600);
        }
        let before = d.rate();
        d.lose_newest();
        assert_eq!(d.cc.random_losses(), 1);
        assert!(d.rate() >= before, "{} -> {}", before, d.rate());
    }

    /// After slow start, below the capacity and with no queue, `per_step` of every 100
    /// packets sent are reported lost (one report each) for 60 steps of 10 ms.
    #[test]
    fn a_flow_with_a_background_answers_a_half_full_queue_that_keeps_overflowing() {
        // A 1 ms path whose queue fills to 1 ms, and a flow at 0.6 of the capacity that has
        // learnt a background of 0.1 % with the queue empty. Under 0.9 of the capacity, a
        // loss counts at a queue that reads 0.9 of its fullest.
        let learnt = || {
            let mut d = short_path_with_queue(15_000.0, 1_000);
            // Held under the capacity (a rate it does not use does not grow).
            d.rate_used = 0.5;
            for k in 0..150 {
                d.step_rtt_us(10_000, 1_000);
                if k % 10 == 9 {
                    d.lose_newest();
                }
            }
            assert_eq!(d.cc.random_losses(), 15);
            let p = d.cc.random_loss.fraction(d.inputs.now, true);
            assert!(p.is_some_and(|p| (0.0005..0.002).contains(&p)), "{p:?}");
            d
        };
        // The queue then fills to its fullest between reports, and reads 0.6 of that at each
        // report (its samples miss the moments it overflows), and one packet in two hundred is
        // lost: more than twice the background, so the losses soon count as congestion.
        let mut d = learnt();
        let before = d.rate();
        let mut rounds = 0;
        while d.rate() >= before && rounds < 60 {
            d.step_rtt_us(10_000, 2_000);
            d.step_rtt_us(10_000, 1_600);
            d.lose_newest();
            rounds += 1;
        }
        assert!(d.rate() < 0.95 * before, "{} -> {}", before, d.rate());
        assert!(rounds < 60);
        // At the background's rate the same queue excuses them.
        let mut d = learnt();
        let before = d.rate();
        for k in 0..100 {
            d.step_rtt_us(10_000, 2_000);
            d.step_rtt_us(10_000, 1_600);
            if k % 5 == 4 {
                d.lose_newest();
            }
        }
        assert!(d.rate() >= before, "{} -> {}", before, d.rate());
        assert_eq!(d.cc.random_losses(), 35);
    }

    fn lossy_without_queue(per_step: u32) -> Drive {
        let mut d = Drive::new();
        d.leave_slow_start_at_flow_window();
        d.send_at(70_000.0);
        for _ in 0..60 {
            d.step(10_000, 100);
            let newest = d.inputs.snd_curr_seq;
            for k in (0..per_step).rev() {
                d.lose(newest.sub(10 * k + 1));
            }
        }
        d
    }

    #[test]
    fn only_a_loss_rate_a_link_could_have_teaches_the_background() {
        // 1 %: the link's own loss, learned (ten losses among a thousand are enough before
        // the first decrease).
        let d = lossy_without_queue(1);
        assert_eq!(d.cc.random_losses(), 60);
        let p =
            d.cc.random_loss
                .fraction(d.inputs.now, true)
                .expect("learned");
        assert!((0.005..0.02).contains(&p), "{p}");
        // 4 %, under the 5 % that is congestion by itself: after the first reports (over
        // fewer packets, they read above 5 %) each loss is taken as random, as no queue
        // shows; but such a rate is likelier an overflow the RTT does not show, and it is
        // not learned as the background, which would excuse the next overflow.
        let d = lossy_without_queue(4);
        assert!(d.cc.random_losses() >= 230, "{}", d.cc.random_losses());
        assert_eq!(d.cc.random_loss.fraction(d.inputs.now, true), None);
    }

    #[test]
    fn a_loss_that_only_the_flows_own_excess_explains_is_congestion() {
        // 4 % above a credible 25 000 packets/s for 200 ms would have queued 8 ms; the RTT
        // shows 0.15 ms. The queue cannot hold the excess: the loss is its overflow, and the
        // rate falls to 3 % under the capacity (not by the native eighth).
        let mut d = short_path_with_queue(26_000.0, 150);
        d.lose_newest();
        assert_eq!(d.cc.random_losses(), 0);
        let floor = 25_000.0 * (1.0 - EXCESS_DECREASE);
        assert!((d.rate() - floor).abs() < 1.0, "{}", d.rate());
        // The same RTT samples under the capacity: the model holds nothing, the loss is
        // random.
        let mut d = short_path_with_queue(24_900.0, 150);
        let before = d.rate();
        d.lose_newest();
        assert_eq!(d.cc.random_losses(), 1);
        assert!(d.rate() >= before, "{} -> {}", before, d.rate());
    }
}
