//! UDP Blast (paper 003 §4.1, `CUDPBlast`; after RBUDP, E. He et al., "Reliable Blast UDP",
//! IEEE Cluster 2002): a fixed sending rate chosen by the application.
//!
//! The window is made large enough never to limit sending and packets are paced at
//! `MSS · 8 / rate` apart. The rate lives in a [`BlastRate`] handle shared with the application,
//! which may change it at any time; the period is recomputed after every packet, so a change
//! takes effect from the next packet. Losses and timeouts do not change the rate (the engine
//! still retransmits).
//!
//! The period is set against an absolute schedule (the `n`-th packet since the rate was set is
//! due `n` nominal periods after the first) rather than to the nominal period, because the
//! sender does not always wait a period: like UDT4 it sends the packet after every sixteenth
//! one at once, as a probing pair for the receiver's capacity estimate. A fixed period would
//! therefore run 1/15 fast; the schedule makes up for each pair with a longer next gap. After
//! a stall (no data to send) the schedule restarts instead of bursting to catch up.
//!
//! The rate counts whole datagrams of `MSS` bytes including the 28 bytes of IP and UDP headers
//! (what a link of that rate carries). The registry's `udpblast` runs at
//! [`DEFAULT_RATE_BPS`]; `udpblast:<Mb/s>` picks another rate.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{CcContext, CongestionControl, PacketInfo};
use crate::seq::SeqNo;

/// The registry's default rate, bits per second (100 Mb/s).
pub const DEFAULT_RATE_BPS: u64 = 100_000_000;
/// Window that never limits sending, packets (the paper's 83 333).
pub const BLAST_CWND_PKTS: f64 = 83_333.0;
/// Lowest rate, bits per second: a smaller one (0 included) is taken as this. A new rate takes
/// effect after the gap in progress, so a rate near 0 would hold back a later increase for as
/// long as its gap (12 s at this rate with 1500-byte packets).
pub const MIN_RATE_BPS: u64 = 1_000;

/// The application's handle on a UDP Blast rate, bits per second; clones share the rate.
#[derive(Clone, Debug)]
pub struct BlastRate(Arc<AtomicU64>);

impl BlastRate {
    /// A handle with the initial rate `bps`, bits per second.
    pub fn new(bps: u64) -> Self {
        BlastRate(Arc::new(AtomicU64::new(bps)))
    }
    /// Sets the rate, bits per second (at least [`MIN_RATE_BPS`] is used).
    pub fn set_bps(&self, bps: u64) {
        self.0.store(bps, Ordering::Relaxed);
    }
    /// The rate, bits per second.
    pub fn bps(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// UDP Blast.
#[derive(Clone, Debug)]
pub struct UdpBlast {
    rate: BlastRate,
    /// Start of the current schedule (µs) and the rate it is for (bits per second).
    origin: Option<(f64, u64)>,
    /// Packets sent since the schedule started.
    sent: u64,
}

impl UdpBlast {
    /// A UDP Blast that follows `rate`.
    pub fn new(rate: BlastRate) -> Self {
        UdpBlast {
            rate,
            origin: None,
            sent: 0,
        }
    }

    /// The rate handle.
    pub fn rate(&self) -> &BlastRate {
        &self.rate
    }

    fn bps(&self) -> u64 {
        self.rate.bps().max(MIN_RATE_BPS)
    }

    /// Sets the nominal period for the current rate.
    fn apply(&self, ctx: &mut CcContext<'_>) {
        ctx.set_pkt_snd_period_us(f64::from(ctx.mss()) * 8.0 * 1e6 / self.bps() as f64);
        ctx.set_cwnd_pkts(BLAST_CWND_PKTS);
    }
}

impl CongestionControl for UdpBlast {
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        self.apply(ctx);
    }
    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, _: &PacketInfo) {
        let bps = self.bps();
        let nominal = f64::from(ctx.mss()) * 8.0 * 1e6 / bps as f64;
        let now = ctx.now().as_micros() as f64;
        let origin = match self.origin {
            Some((t, b)) if b == bps => t,
            _ => {
                self.sent = 0;
                now
            }
        };
        self.sent += 1;
        let lag = origin + self.sent as f64 * nominal - now;
        let period = if lag < -nominal {
            // Behind schedule by more than a packet: a stall, not pacing error. Restart.
            self.origin = Some((now, bps));
            self.sent = 1;
            nominal
        } else {
            self.origin = Some((origin, bps));
            lag.clamp(0.0, 2.0 * nominal)
        };
        ctx.set_pkt_snd_period_us(period);
        ctx.set_cwnd_pkts(BLAST_CWND_PKTS);
    }
    fn on_ack(&mut self, ctx: &mut CcContext<'_>, _: SeqNo) {
        // A rate changed during a long gap takes effect now rather than after it.
        if self.origin.is_some_and(|(_, b)| b != self.bps()) {
            self.origin = None;
            self.apply(ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testkit::Harness;

    #[test]
    fn registry_names_choose_the_rate() {
        let mut h = Harness::new(crate::cc::by_name("udpblast:12").unwrap().build());
        assert!((h.period() - 1000.0).abs() < 1e-9);
        h = Harness::new(crate::cc::by_name("udpblast").unwrap().build());
        assert!((h.period() - 120.0).abs() < 1e-9, "default 100 Mb/s");
        for bad in [
            "udpblast:",
            "udpblast:0",
            "udpblast:-5",
            "udpblast:x",
            "udpblastx",
        ] {
            assert!(crate::cc::by_name(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn period_follows_the_rate_handle() {
        let rate = BlastRate::new(120_000_000);
        let mut h = Harness::new(Box::new(UdpBlast::new(rate.clone())));
        // 1500 bytes at 120 Mb/s: 100 µs.
        assert!((h.period() - 100.0).abs() < 1e-9);
        assert_eq!(h.cwnd(), BLAST_CWND_PKTS);
        rate.set_bps(12_000_000);
        h.send(1);
        assert!((h.period() - 1000.0).abs() < 1e-9);
        // On schedule: the nominal period. Losses and timeouts do not change it.
        h.advance_us(1000);
        let s = h.send(1);
        h.loss(s, s);
        h.timeout();
        assert!((h.period() - 1000.0).abs() < 1e-9);
        // A packet sent at once (a probing pair) is made up for by a longer gap.
        h.send(1);
        assert!((h.period() - 2000.0).abs() < 1e-9);
        // After a stall the schedule restarts rather than bursting.
        h.advance_us(50_000);
        h.send(1);
        assert!((h.period() - 1000.0).abs() < 1e-9);
        // A change is picked up at the next ACK, without waiting for the gap to end.
        let s = h.send(1);
        rate.set_bps(24_000_000);
        h.ack(s.next());
        assert!((h.period() - 500.0).abs() < 1e-9);
        rate.set_bps(0);
        h.send(1);
        assert!((h.period() - 1500.0 * 8.0 * 1e6 / MIN_RATE_BPS as f64).abs() < 1e-3);
    }
}
