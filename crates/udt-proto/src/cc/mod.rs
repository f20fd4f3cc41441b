//! Congestion control: the interface of Composable UDT (papers 003/004, spec §13) and UDT's
//! native algorithm.
//!
//! An algorithm implements [`CongestionControl`]. Every hook has a no-op default, so an
//! algorithm overrides only the events it reacts to. Through the [`CcContext`] handed to each
//! hook it reads the connection's measurements (RTT, receive rate, link capacity, statistics)
//! and sets the two controls of UDT's sender, the inter-packet period and the congestion
//! window, plus the protocol knobs of CCC: ACK timer, ACK interval, RTO, custom control
//! messages. A [`CongestionControlFactory`] makes one instance per connection.
//!
//! The sender transmits a new packet only while fewer than `min(flow window, cwnd)` packets
//! are unacknowledged and no sooner than one period after the previous packet. A purely
//! rate-based algorithm keeps the window huge; a purely window-based one sets the period to 0.

pub mod bic;
pub mod ctcp;
pub mod fast;
pub mod glibc_rand;
pub mod gtp;
pub mod highspeed;
pub mod native;
mod own_queue;
mod rate_use;
pub mod registry;
pub mod scalable;
mod share_trend;
#[cfg(test)]
mod testkit;
pub mod udpblast;
pub mod udt;
pub mod vegas;
pub mod westwood;

use core::fmt;
use std::cell::OnceCell;
use std::sync::Arc;

use crate::stats::{InstantStats, Stats};

// Everything an algorithm written outside this crate needs, in one place.
pub use crate::estimate::CapacityEstimate;
pub use crate::seq::{SeqNo, SeqRange};
pub use crate::stats::PerfStats;
pub use crate::time::Instant;
pub use crate::wire::{MessageWord, UserDefined};

pub use gtp::GtpFactory;
pub use native::{DecreaseRule, IncreaseRule, NativeCc, NativeConfig};
pub use registry::{available, by_name, names, register, unregister, RegistryError};
pub use udt::UdtCc;

/// Measurements the connection provides to congestion control before each hook.
#[derive(Clone, Copy, Debug, Default)]
pub struct CcInputs {
    /// Current time.
    pub now: Instant,
    /// Negotiated MSS, bytes, including the 28 bytes of IP and UDP headers.
    pub mss: u32,
    /// The peer's flow window from the handshake (the largest useful window), packets.
    pub max_cwnd_pkts: f64,
    /// Largest sequence number sent so far.
    pub snd_curr_seq: SeqNo,
    /// Smoothed packet arrival rate reported by the receiver, packets per second.
    pub rcv_rate_pps: u32,
    /// Smoothed round-trip time, µs.
    pub rtt_us: u32,
    /// Smoothed RTT variance, µs.
    pub rtt_var_us: u32,
    /// Smoothed link capacity estimate, packets per second.
    pub bandwidth_pps: u32,
    /// The peer's latest ACK carried a capacity estimate that can be trusted: enough packet
    /// pairs are behind it, and [`CcInputs::bandwidth_pps`] has caught up with it. Ours sends
    /// none (0) while packets reach it in clumps, when packet pairs cannot be timed;
    /// [`CcInputs::bandwidth_pps`] then keeps its last value.
    pub capacity_reported: bool,
    /// Packets per second the peer acknowledged over the last round trip (at least
    /// [`DELIVERY_WINDOW_MIN_US`]), measured by the sender from the progress of ACKs; 0 until
    /// known. Unlike the receiver's reports, it does not depend on packet spacing.
    pub delivery_rate_pps: f64,
    /// Packets per second the peer is known to have received over the same window as
    /// [`CcInputs::delivery_rate_pps`] (0 until known): the cumulative ACK's progress and,
    /// past it, the packet after each range a NAK reports lost, less the packets reported
    /// lost for the first time (`estimate::receipt`). A hole holds the cumulative ACK back
    /// for a round trip or more; this rate does not wait for it, so under random loss it
    /// reads what the path carries where the delivery rate swings from near zero to several
    /// times it. It counts from the peer's ACKs and NAKs alone, so a UDT4 peer gives it too.
    pub receipt_rate_pps: f64,
    /// Packets acknowledged since the connection started.
    pub acked_pkts: u64,
    /// New packets per second the sender sent over the window of
    /// [`CcInputs::delivery_rate_pps`] that ended one RTT ago (0 until known): the rate at which
    /// the packets being acknowledged now were sent. Delivery well below it means the path
    /// does not carry what is sent.
    pub sent_rate_rtt_ago_pps: f64,
    /// Smallest RTT the peer reported over the last ten seconds, µs (0 until known): the
    /// path's delay without queueing.
    pub min_rtt_us: u32,
    /// The RTT in the peer's latest ACK, µs (0 until known).
    pub last_rtt_us: u32,
    /// Packets sent and not yet acknowledged.
    pub inflight_pkts: u32,
}

/// Shortest window of [`CcInputs::delivery_rate_pps`], µs: long enough that clumped arrivals
/// and clumped ACKs (≤ 250 µs) move it by well under 1 %, and that several ACK timer periods
/// (10 ms) fall in it.
pub const DELIVERY_WINDOW_MIN_US: u64 = 50_000;

/// Custom control message queued by an algorithm for its peer (type 0x7FFF).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomMessage {
    /// Extended type (16 bits).
    pub ext_type: u16,
    /// Additional-info word.
    pub info: u32,
    /// Body, bytes on the wire; use [`CustomMessage::from_words`] for 4.11 compatibility.
    pub body: Vec<u8>,
}

impl CustomMessage {
    /// A message whose body is 32-bit words in network order (what 4.11 peers expect).
    pub fn from_words(ext_type: u16, info: u32, words: &[u32]) -> Self {
        CustomMessage {
            ext_type,
            info,
            body: words.iter().flat_map(|w| w.to_be_bytes()).collect(),
        }
    }

    /// The body read as big-endian 32-bit words (trailing bytes ignored).
    pub fn words(body: &[u8]) -> impl Iterator<Item = u32> + '_ {
        body.chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
    }
}

/// Controls an algorithm sets; they persist between hooks and the sender reads them live.
#[derive(Clone, Debug)]
pub struct CcControls {
    /// Inter-packet sending period, µs (0 = no pacing).
    pub pkt_snd_period_us: f64,
    /// Congestion window, packets.
    pub cwnd_pkts: f64,
    /// Period of timer-driven full ACKs at the receiver, µs (`None` = SYN, 10 ms).
    pub ack_period_us: Option<u64>,
    /// Also send a full ACK every this many received packets (0 = off).
    pub ack_interval_pkts: u32,
    /// Fixed retransmission timeout replacing UDT's EXP formula, µs (`None` = UDT's formula).
    pub rto_us: Option<u64>,
    /// Do not send new data before this time (the papers' "freeze" after a congestion event).
    pub pause_until: Option<Instant>,
    /// Custom messages waiting to be sent.
    pub outbox: Vec<CustomMessage>,
    /// The second packet of each probing pair (every 16th packet and the one after it leave
    /// back to back) is sent on top of the period, as 4.11 does: the average rate is then
    /// 16/15 of `1 / pkt_snd_period_us`. Off by default: the packet after the pair waits one
    /// more period, so the average rate is the period's.
    pub probe_pair_outside_rate: bool,
}

impl Default for CcControls {
    fn default() -> Self {
        CcControls {
            pkt_snd_period_us: 1.0,
            cwnd_pkts: 16.0,
            ack_period_us: None,
            ack_interval_pkts: 0,
            rto_us: None,
            pause_until: None,
            outbox: Vec::new(),
            probe_pair_outside_rate: false,
        }
    }
}

/// Fills the measurements of [`CcInputs`] that a connection computes only on demand (see
/// [`CcContext::measured_on_demand`]).
pub type MeasureOnDemand<'a> = &'a dyn Fn(&mut CcInputs);

/// What a hook sees: the connection's measurements and the controls it may change.
pub struct CcContext<'a> {
    inputs: &'a CcInputs,
    /// Measures the on-demand rates of `inputs` into `measured` when one is first read.
    on_demand: Option<MeasureOnDemand<'a>>,
    measured: OnceCell<CcInputs>,
    stats: Option<(&'a Stats, InstantStats)>,
    controls: &'a mut CcControls,
}

impl<'a> CcContext<'a> {
    /// A context over `inputs` and `controls`, without statistics (for tests that drive an
    /// algorithm directly).
    pub fn new(inputs: &'a CcInputs, controls: &'a mut CcControls) -> Self {
        CcContext {
            inputs,
            on_demand: None,
            measured: OnceCell::new(),
            stats: None,
            controls,
        }
    }

    /// A context that can also report the connection's statistics.
    pub fn with_stats(
        inputs: &'a CcInputs,
        stats: &'a Stats,
        instant: InstantStats,
        controls: &'a mut CcControls,
    ) -> Self {
        CcContext {
            inputs,
            on_demand: None,
            measured: OnceCell::new(),
            stats: Some((stats, instant)),
            controls,
        }
    }

    /// The rates [`CcInputs::rcv_rate_pps`], [`CcInputs::delivery_rate_pps`],
    /// [`CcInputs::receipt_rate_pps`] and [`CcInputs::sent_rate_rtt_ago_pps`] are not in
    /// `inputs` (they hold placeholders) but measured by `measure` the first time a hook reads
    /// one of them, or [`CcContext::inputs`]; at most once per context.
    ///
    /// Why: these searches through the ACK and send histories ran before every hook, the
    /// per-packet ones included, and took a tenth of the sending I/O thread's CPU at 10 Gbit/s
    /// on loopback; the native algorithm reads them only when its rate control runs (about
    /// once per SYN). The values are those of the hook's start either way: `measure` sees
    /// nothing the hook changes.
    pub fn measured_on_demand(mut self, measure: MeasureOnDemand<'a>) -> Self {
        self.on_demand = Some(measure);
        self
    }

    /// A context over other measurements that shares this one's controls and statistics:
    /// for an algorithm that runs another one on adjusted inputs (see `cc::udt`).
    pub fn with_inputs<'b>(&'b mut self, inputs: &'b CcInputs) -> CcContext<'b> {
        CcContext {
            inputs,
            on_demand: None,
            measured: OnceCell::new(),
            stats: self.stats,
            controls: self.controls,
        }
    }

    /// Every measurement at once.
    pub fn inputs(&self) -> &CcInputs {
        match self.on_demand {
            None => self.inputs,
            Some(measure) => self.measured.get_or_init(|| {
                let mut all = *self.inputs;
                measure(&mut all);
                all
            }),
        }
    }

    /// Current time.
    pub fn now(&self) -> Instant {
        self.inputs.now
    }
    /// Negotiated MSS, bytes including IP and UDP headers.
    pub fn mss(&self) -> u32 {
        self.inputs.mss
    }
    /// The peer's flow window, packets: a window larger than this is never used.
    pub fn max_cwnd(&self) -> f64 {
        self.inputs.max_cwnd_pkts
    }
    /// Largest sequence number sent so far.
    pub fn snd_curr_seq(&self) -> SeqNo {
        self.inputs.snd_curr_seq
    }
    /// Smoothed receiver arrival rate, packets per second.
    pub fn rcv_rate_pps(&self) -> u32 {
        self.inputs().rcv_rate_pps
    }
    /// Smoothed RTT, µs.
    pub fn rtt_us(&self) -> u32 {
        self.inputs.rtt_us
    }
    /// Smoothed RTT variance, µs.
    pub fn rtt_var_us(&self) -> u32 {
        self.inputs.rtt_var_us
    }
    /// Smoothed link capacity estimate, packets per second.
    pub fn bandwidth_pps(&self) -> u32 {
        self.inputs.bandwidth_pps
    }
    /// True when the peer's latest ACK carried a capacity estimate; see
    /// [`CcInputs::capacity_reported`].
    pub fn capacity_reported(&self) -> bool {
        self.inputs.capacity_reported
    }
    /// Delivery rate over the last round trip, packets per second (0 until known); see
    /// [`CcInputs::delivery_rate_pps`].
    pub fn delivery_rate_pps(&self) -> f64 {
        self.inputs().delivery_rate_pps
    }
    /// Packets per second the peer is known to have received over the last round trip (0
    /// until known); see [`CcInputs::receipt_rate_pps`].
    pub fn receipt_rate_pps(&self) -> f64 {
        self.inputs().receipt_rate_pps
    }
    /// Packets acknowledged since the connection started.
    pub fn acked_pkts(&self) -> u64 {
        self.inputs.acked_pkts
    }
    /// Rate at which the packets being acknowledged now were sent, packets per second; see
    /// [`CcInputs::sent_rate_rtt_ago_pps`].
    pub fn sent_rate_rtt_ago_pps(&self) -> f64 {
        self.inputs().sent_rate_rtt_ago_pps
    }
    /// Smallest recent RTT, µs (0 until known).
    pub fn min_rtt_us(&self) -> u32 {
        self.inputs.min_rtt_us
    }
    /// RTT of the latest ACK, µs (0 until known).
    pub fn last_rtt_us(&self) -> u32 {
        self.inputs.last_rtt_us
    }
    /// Packets sent and not yet acknowledged.
    pub fn inflight_pkts(&self) -> u32 {
        self.inputs.inflight_pkts
    }
    /// The connection's statistics (UDT4 `getPerfInfo`); nothing is cleared. All zero when
    /// the context has no statistics attached.
    pub fn perf(&self) -> PerfStats {
        match self.stats {
            Some((stats, instant)) => stats.peek(self.inputs.now, instant),
            None => PerfStats::default(),
        }
    }

    /// Current inter-packet period, µs.
    pub fn pkt_snd_period_us(&self) -> f64 {
        self.controls.pkt_snd_period_us
    }
    /// Sets the inter-packet period, µs (0 = send as fast as the window allows).
    pub fn set_pkt_snd_period_us(&mut self, us: f64) {
        self.controls.pkt_snd_period_us = if us.is_finite() { us.max(0.0) } else { 1e9 };
    }
    /// Current congestion window, packets.
    pub fn cwnd_pkts(&self) -> f64 {
        self.controls.cwnd_pkts
    }
    /// Sets the congestion window, packets.
    pub fn set_cwnd_pkts(&mut self, pkts: f64) {
        self.controls.cwnd_pkts = if pkts.is_finite() { pkts.max(0.0) } else { 1e9 };
    }
    /// Sets the period of timer-driven full ACKs, µs; capped at SYN (10 000 µs) as in 4.11.
    /// `0` restores the default (SYN).
    pub fn set_ack_timer_us(&mut self, us: u64) {
        self.controls.ack_period_us = (us > 0).then_some(us.min(crate::time::SYN_US));
    }
    /// Sends each probing pair's second packet on top of the period, as 4.11 does (see
    /// [`CcControls::probe_pair_outside_rate`]).
    pub fn set_probe_pair_outside_rate(&mut self, on: bool) {
        self.controls.probe_pair_outside_rate = on;
    }
    /// Also acknowledge every `n` received packets with a full ACK (0 = off).
    pub fn set_ack_interval_pkts(&mut self, n: u32) {
        self.controls.ack_interval_pkts = n;
    }
    /// Replaces UDT's timeout formula by a fixed RTO, µs (`0` restores the formula).
    pub fn set_rto_us(&mut self, us: u64) {
        self.controls.rto_us = (us > 0).then_some(us);
    }
    /// Stops new transmissions until `until` (retransmissions are not held back).
    pub fn pause_sending_until(&mut self, until: Instant) {
        self.controls.pause_until = Some(until);
    }
    /// Queues a custom control message (type 0x7FFF) for the peer's algorithm. Delivery is
    /// unreliable, like any UDP datagram.
    pub fn send_custom(&mut self, msg: CustomMessage) {
        // Bounded so that a misbehaving algorithm cannot grow memory without limit.
        if self.controls.outbox.len() < 1024 {
            self.controls.outbox.push(msg);
        }
    }
}

/// A data packet as congestion control sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    /// Sequence number.
    pub seq: SeqNo,
    /// Boundary bits, in-order flag and message number.
    pub message: MessageWord,
    /// Timestamp field, µs since the sending socket was opened.
    pub timestamp: u32,
    /// Payload length, bytes.
    pub payload_len: usize,
    /// True for a retransmission (sender side only).
    pub retransmission: bool,
}

/// A congestion-control algorithm: the event hooks of UDT/CCC. All hooks default to no-ops.
pub trait CongestionControl: Send {
    /// Called once when the connection is established, with the initial measurements.
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        let _ = ctx;
    }
    /// Called when the connection closes.
    fn close(&mut self, ctx: &mut CcContext<'_>) {
        let _ = ctx;
    }
    /// A full ACK acknowledged new data; `ack` is the first unacknowledged sequence number.
    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        let _ = (ctx, ack);
    }
    /// A NAK reported `losses` (ascending ranges, as the peer sent them).
    fn on_loss(&mut self, ctx: &mut CcContext<'_>, losses: &[SeqRange]) {
        let _ = (ctx, losses);
    }
    /// The retransmission timer expired with data outstanding.
    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        let _ = ctx;
    }
    /// A data packet is about to be sent.
    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, pkt: &PacketInfo) {
        let _ = (ctx, pkt);
    }
    /// A data packet arrived (before any validity check).
    fn on_packet_received(&mut self, ctx: &mut CcContext<'_>, pkt: &PacketInfo) {
        let _ = (ctx, pkt);
    }
    /// A custom control message (type 0x7FFF) arrived from the peer.
    fn on_custom_message(&mut self, ctx: &mut CcContext<'_>, msg: &UserDefined<'_>) {
        let _ = (ctx, msg);
    }
    /// The link capacity estimate this side's receiver reports in its ACKs, asked once when
    /// the connection is made. The report feeds the peer's algorithm, not this one, but a
    /// connection's two sides usually run the same algorithm. Default: 4.11's.
    fn capacity_estimate(&self) -> CapacityEstimate {
        CapacityEstimate::Udt4Mean
    }
}

/// Makes one [`CongestionControl`] per connection.
pub trait CongestionControlFactory: Send + Sync {
    /// Name of the algorithm (for statistics and logs).
    fn name(&self) -> &str;
    /// A fresh instance for a new connection.
    fn build(&self) -> Box<dyn CongestionControl>;
}

/// A factory from a name and a closure.
pub struct FnFactory<F> {
    name: String,
    make: F,
}

impl<F> FnFactory<F>
where
    F: Fn() -> Box<dyn CongestionControl> + Send + Sync,
{
    /// A factory called `name` that builds instances with `make`.
    pub fn new(name: impl Into<String>, make: F) -> Self {
        FnFactory {
            name: name.into(),
            make,
        }
    }
}

impl<F> CongestionControlFactory for FnFactory<F>
where
    F: Fn() -> Box<dyn CongestionControl> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn build(&self) -> Box<dyn CongestionControl> {
        (self.make)()
    }
}

impl fmt::Debug for dyn CongestionControlFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CongestionControlFactory({})", self.name())
    }
}

/// A shared factory, as stored in configurations.
pub type SharedFactory = Arc<dyn CongestionControlFactory>;

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn on_demand_rates_are_measured_once_when_first_read_and_not_passed_to_other_inputs() {
        let measured = Cell::new(0);
        let measure = |all: &mut CcInputs| {
            measured.set(measured.get() + 1);
            all.rcv_rate_pps = 7;
            all.delivery_rate_pps = 8.0;
            all.sent_rate_rtt_ago_pps = 9.0;
        };
        let inputs = CcInputs {
            rtt_us: 100_000,
            ..CcInputs::default()
        };
        let mut controls = CcControls::default();
        let mut ctx = CcContext::new(&inputs, &mut controls).measured_on_demand(&measure);
        // Reading anything else measures nothing.
        assert_eq!(ctx.rtt_us(), 100_000);
        ctx.set_cwnd_pkts(20.0);
        assert_eq!(measured.get(), 0);
        assert_eq!(ctx.delivery_rate_pps(), 8.0);
        assert_eq!(ctx.rcv_rate_pps(), 7);
        assert_eq!(ctx.sent_rate_rtt_ago_pps(), 9.0);
        assert_eq!(ctx.inputs().rtt_us, 100_000);
        assert_eq!(measured.get(), 1);
        // Inputs given explicitly are taken as they are.
        let other = CcInputs {
            delivery_rate_pps: 3.0,
            ..*ctx.inputs()
        };
        let inner = ctx.with_inputs(&other);
        assert_eq!(inner.delivery_rate_pps(), 3.0);
        assert_eq!(inner.rcv_rate_pps(), 7);
        assert_eq!(measured.get(), 1);
    }
}
