//! A congestion-control algorithm written by a "user", outside the udt crates, against the
//! public Composable UDT trait: window-based AIMD in the manner of TCP congestion avoidance.
//!
//! * The window grows by one packet per window of packets acknowledged (one per RTT).
//! * A loss report halves it, once per round trip: losses of packets sent before the last
//!   decrease belong to the same congestion event and are ignored.
//! * A timeout (nothing heard for a while) restarts it at two packets.
//! * No pacing: the window alone clocks the sender (period 0).
//!
//! Use it by value (`udt::Builder::congestion_control(user_cc::factory())`) or by name
//! after [`register`] (`udt perf --cc user-aimd`, `cc = "user-aimd"` in a scenario file).

use std::sync::Arc;

use udt_proto::cc::{
    self, CcContext, CongestionControl, FnFactory, RegistryError, SeqNo, SeqRange, SharedFactory,
};

/// The name [`register`] uses.
pub const NAME: &str = "user-aimd";
/// Initial window and window after a timeout, packets.
const MIN_WINDOW: f64 = 2.0;

/// Window-based AIMD.
#[derive(Debug, Default)]
pub struct Aimd {
    /// First unacknowledged packet at the last ACK.
    last_ack: Option<SeqNo>,
    /// Losses of packets up to this one were caused by the window before the last decrease.
    recovery_until: Option<SeqNo>,
}

impl CongestionControl for Aimd {
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        ctx.set_pkt_snd_period_us(0.0);
        ctx.set_cwnd_pkts(MIN_WINDOW);
        // Acknowledge every other packet, as TCP does, so that the window grows smoothly.
        ctx.set_ack_interval_pkts(2);
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        let acked = match self.last_ack {
            Some(prev) => prev.offset_to(ack).max(0) as f64,
            None => 1.0,
        };
        self.last_ack = Some(ack);
        let cwnd = ctx.cwnd_pkts();
        ctx.set_cwnd_pkts((cwnd + acked / cwnd).min(ctx.max_cwnd()));
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, losses: &[SeqRange]) {
        let Some(last_lost) = losses.last().map(|r| r.last) else {
            return;
        };
        if self.recovery_until.is_some_and(|r| !last_lost.is_after(r)) {
            return;
        }
        self.recovery_until = Some(ctx.snd_curr_seq());
        ctx.set_cwnd_pkts((ctx.cwnd_pkts() / 2.0).max(MIN_WINDOW));
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        self.recovery_until = Some(ctx.snd_curr_seq());
        ctx.set_cwnd_pkts(MIN_WINDOW);
    }
}

/// A factory making one [`Aimd`] per connection.
pub fn factory() -> SharedFactory {
    Arc::new(FnFactory::new(NAME, || {
        Box::new(Aimd::default()) as Box<dyn CongestionControl>
    }))
}

/// Registers the algorithm as [`NAME`] for the whole process; registering it again is fine.
pub fn register() -> Result<(), RegistryError> {
    match cc::register(NAME, factory()) {
        Err(RegistryError::AlreadyRegistered(_)) | Ok(()) => Ok(()),
        Err(e) => Err(e),
    }
}
