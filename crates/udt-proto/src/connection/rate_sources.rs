//! The rates congestion control reads that a connection measures only when a hook asks for
//! them (see [`CcContext::measured_on_demand`](crate::cc::CcContext::measured_on_demand)):
//! each is a search through the ACK or send history, and the per-packet hooks rarely read
//! them.

use crate::cc::{CcInputs, DELIVERY_WINDOW_MIN_US};
use crate::estimate::{DeliveryRate, Receipts};
use crate::time::Instant;

/// A connection's state that the on-demand rates of [`CcInputs`] are measured from, as it
/// stood when the hook began.
pub(super) struct RateSources<'a> {
    /// When the hook runs.
    pub(super) now: Instant,
    /// Smoothed RTT, µs.
    pub(super) rtt_us: u32,
    /// Packets acknowledged over time (the cumulative ACK's progress).
    pub(super) delivery: &'a DeliveryRate,
    /// Packets the peer is known to hold, over time.
    pub(super) receipts: &'a Receipts,
    /// New packets sent over time, counted from the same first sequence number.
    pub(super) sent_history: &'a DeliveryRate,
    /// The peer's reported arrival rate, packets/s.
    pub(super) arrival_rate_pps: u32,
    /// The peer's arrival timing reads compressed (see `Connection::peer_timing_compressed`).
    pub(super) peer_timing_compressed: bool,
    /// The rate the current sending period sets, packets/s.
    pub(super) pacing_pps: f64,
}

impl RateSources<'_> {
    /// Fills [`CcInputs::rcv_rate_pps`], [`CcInputs::delivery_rate_pps`],
    /// [`CcInputs::receipt_rate_pps`] and [`CcInputs::sent_rate_rtt_ago_pps`].
    pub(super) fn measure(&self, all: &mut CcInputs) {
        let rtt = u64::from(self.rtt_us);
        let window = rtt.max(DELIVERY_WINDOW_MIN_US);
        let delivery = self
            .delivery
            .rate_pps_bounded_by_sending(self.sent_history, window)
            .unwrap_or(0.0);
        all.delivery_rate_pps = delivery;
        all.receipt_rate_pps = self
            .receipts
            .history()
            .rate_pps_bounded_by_sending(self.sent_history, window)
            .unwrap_or(0.0);
        all.rcv_rate_pps = self.arrival_rate_for_cc(delivery);
        all.sent_rate_rtt_ago_pps = self
            .sent_history
            .rate_ending(
                Instant::from_micros(self.now.as_micros().saturating_sub(rtt)),
                window,
            )
            .unwrap_or(0.0);
    }

    /// The arrival rate congestion control is given, packets/s: the peer's, unless its timing
    /// is compressed; then the higher of the rate data is acknowledged at (`delivery`, which
    /// ACK timing measures at the sender, whatever the receiver's clock saw) and the pacing
    /// rate. The window is this rate times the RTT: the delivery rate alone held it to what
    /// the path carried a round trip ago plus 16 packets, and a flow alone into a 4.11
    /// receiver then climbed for seconds and settled at 0.73 of a 1 Gbit/s link. A receiver
    /// whose clock is right reads about the pacing rate while the path keeps up, as ours does.
    fn arrival_rate_for_cc(&self, delivery: f64) -> u32 {
        if !self.peer_timing_compressed {
            return self.arrival_rate_pps;
        }
        (delivery
            .max(self.pacing_pps)
            .min(f64::from(self.arrival_rate_pps)) as u32)
            .max(1)
    }
}
