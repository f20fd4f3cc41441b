//! Performance statistics with the fields of UDT4's `perfmon` (spec §15).
//!
//! Each counter exists twice: a total since the connection was opened, and a local value since
//! the last query that asked to clear. Instant values (period, windows, RTT, buffer space) are
//! filled in by the connection when a snapshot is taken.

use crate::time::Instant;

/// Event counters kept by a connection; one copy holds totals, another the values since the
/// last clearing query.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Data packets sent, including retransmissions.
    pub pkt_sent: u64,
    /// Data packets received (every arrival, including duplicates and discarded ones).
    pub pkt_recv: u64,
    /// Sequence numbers newly put into the sender loss list (from NAKs and timeouts).
    pub pkt_snd_loss: u64,
    /// Sequence numbers found missing by the receiver's gap detection.
    pub pkt_rcv_loss: u64,
    /// Data packets retransmitted.
    pub pkt_retrans: u64,
    /// Full ACKs sent.
    pub pkt_sent_ack: u64,
    /// Full ACKs received that acknowledged new data.
    pub pkt_recv_ack: u64,
    /// NAKs sent.
    pub pkt_sent_nak: u64,
    /// Valid NAKs received.
    pub pkt_recv_nak: u64,
    /// Microseconds during which the sender had data queued.
    pub us_snd_duration: u64,
    /// Payload bytes sent in data packets, including retransmissions.
    pub bytes_sent: u64,
    /// Payload bytes received in data packets accepted into the receive buffer.
    pub bytes_recv: u64,
    /// Data packets received that were duplicates or outside the receive window.
    pub pkt_recv_discarded: u64,
    /// Datagrams dropped because they were malformed or violated the protocol (includes the
    /// three `*_forged` counters below).
    pub pkt_invalid: u64,
    /// ACKs and light ACKs dropped because they acknowledged data never sent (forged, or
    /// corrupted in a way the checksum-less header cannot tell).
    pub pkt_forged_ack: u64,
    /// NAKs dropped because they named packets never sent or a reversed range.
    pub pkt_forged_nak: u64,
    /// Handshakes reaching an established connection that do not match it (another peer
    /// socket ID, or another ISN than the connection's): ignored, never answered.
    pub pkt_forged_handshake: u64,
    /// NAKs naming only packets already acknowledged (reordered behind the ACK, or replayed):
    /// ignored, and not a loss signal to congestion control (not in `pkt_invalid`).
    pub pkt_stale_nak: u64,
    /// Messages the sender dropped because their TTL expired.
    pub msg_snd_dropped: u64,
    /// Packets of messages the receiver discarded because they could not be completed.
    pub pkt_rcv_dropped: u64,
    /// EXP expiries with data outstanding (retransmission timeouts).
    pub timeouts: u64,
    /// Packets of an encrypted connection dropped because they did not authenticate (forged,
    /// altered, or sealed under another key or sequence number).
    pub pkt_auth_failed: u64,
    /// Control packets of an encrypted connection dropped as replays (counter already seen or
    /// too old). Replayed data packets are duplicates and count in `pkt_recv_discarded`.
    pub pkt_replayed: u64,
}

/// Counters plus the time base of the local (since last query) interval.
#[derive(Clone, Debug)]
pub struct Stats {
    opened_at: Instant,
    local_since: Instant,
    total: Counters,
    local: Counters,
    /// When the send buffer last became non-empty, for `us_snd_duration`.
    busy_since: Option<Instant>,
}

impl Stats {
    /// Statistics for a socket opened at `now`.
    pub fn new(now: Instant) -> Self {
        Stats {
            opened_at: now,
            local_since: now,
            total: Counters::default(),
            local: Counters::default(),
            busy_since: None,
        }
    }

    /// Applies `f` to both the total and the local counters.
    #[inline]
    pub fn count(&mut self, f: impl Fn(&mut Counters)) {
        f(&mut self.total);
        f(&mut self.local);
    }

    /// Totals since the socket was opened.
    pub fn total(&self) -> &Counters {
        &self.total
    }

    /// Values since the last clearing query.
    pub fn local(&self) -> &Counters {
        &self.local
    }

    /// Notes whether the sender has data queued at `now`, to accumulate the send duration.
    pub fn set_sender_busy(&mut self, busy: bool, now: Instant) {
        match (busy, self.busy_since) {
            (true, None) => self.busy_since = Some(now),
            (false, Some(since)) => {
                let d = now.micros_since(since);
                self.count(|c| c.us_snd_duration += d);
                self.busy_since = None;
            }
            _ => {}
        }
    }

    /// Builds a snapshot; `instant` carries the values the connection knows at `now`. With
    /// `clear`, the local counters restart from zero.
    pub fn snapshot(&mut self, now: Instant, instant: InstantStats, clear: bool) -> PerfStats {
        // Fold an ongoing busy period into the duration counters before reading them.
        if let Some(since) = self.busy_since {
            let d = now.micros_since(since);
            self.count(|c| c.us_snd_duration += d);
            self.busy_since = Some(now);
        }
        let snap = self.peek(now, instant);
        if clear {
            self.local = Counters::default();
            self.local_since = now;
        }
        snap
    }

    /// Builds a snapshot without clearing anything (an ongoing busy period is not counted).
    pub fn peek(&self, now: Instant, instant: InstantStats) -> PerfStats {
        let interval_us = now.micros_since(self.local_since).max(1) as f64;
        let rate = |pkts: u64| pkts as f64 * f64::from(instant.payload_size) * 8.0 / interval_us;
        let t = self.total;
        let l = self.local;
        PerfStats {
            ms_timestamp: now.micros_since(self.opened_at) / 1000,
            pkt_sent_total: t.pkt_sent,
            pkt_recv_total: t.pkt_recv,
            pkt_snd_loss_total: t.pkt_snd_loss,
            pkt_rcv_loss_total: t.pkt_rcv_loss,
            pkt_retrans_total: t.pkt_retrans,
            pkt_sent_ack_total: t.pkt_sent_ack,
            pkt_recv_ack_total: t.pkt_recv_ack,
            pkt_sent_nak_total: t.pkt_sent_nak,
            pkt_recv_nak_total: t.pkt_recv_nak,
            us_snd_duration_total: t.us_snd_duration,
            pkt_sent: l.pkt_sent,
            pkt_recv: l.pkt_recv,
            pkt_snd_loss: l.pkt_snd_loss,
            pkt_rcv_loss: l.pkt_rcv_loss,
            pkt_retrans: l.pkt_retrans,
            pkt_sent_ack: l.pkt_sent_ack,
            pkt_recv_ack: l.pkt_recv_ack,
            pkt_sent_nak: l.pkt_sent_nak,
            pkt_recv_nak: l.pkt_recv_nak,
            mbps_send_rate: rate(l.pkt_sent),
            mbps_recv_rate: rate(l.pkt_recv),
            us_snd_duration: l.us_snd_duration,
            us_pkt_snd_period: instant.pkt_snd_period_us,
            pkt_flow_window: instant.flow_window_pkts,
            pkt_congestion_window: instant.cwnd_pkts,
            pkt_flight_size: instant.flight_size_pkts,
            ms_rtt: f64::from(instant.rtt_us) / 1000.0,
            mbps_bandwidth: f64::from(instant.bandwidth_pps)
                * f64::from(instant.payload_size)
                * 8.0
                / 1e6,
            byte_avail_snd_buf: instant.avail_snd_buf_bytes,
            byte_avail_rcv_buf: instant.avail_rcv_buf_bytes,
            total: t,
            local: l,
        }
    }
}

/// Values a connection knows at the moment of a snapshot.
#[derive(Clone, Copy, Debug, Default)]
pub struct InstantStats {
    /// Data payload per full packet (MSS − 44), bytes.
    pub payload_size: u32,
    /// Current inter-packet period, µs.
    pub pkt_snd_period_us: f64,
    /// Current flow window, packets.
    pub flow_window_pkts: u32,
    /// Current congestion window (whole packets).
    pub cwnd_pkts: u32,
    /// Unacknowledged packets in flight.
    pub flight_size_pkts: u32,
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    /// Smoothed link capacity estimate, packets per second.
    pub bandwidth_pps: u32,
    /// Free send buffer, bytes.
    pub avail_snd_buf_bytes: u64,
    /// Free receive buffer, bytes.
    pub avail_rcv_buf_bytes: u64,
}

/// A `perfmon` snapshot: UDT4's `TRACEINFO` fields (names in snake case, same units), plus the
/// raw counters. `*_total` fields are totals since the socket was opened; the plain ones are
/// since the last clearing query; the rest are instant values.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerfStats {
    /// Milliseconds since the socket was opened.
    pub ms_timestamp: u64,
    /// Data packets sent, including retransmissions (total).
    pub pkt_sent_total: u64,
    /// Data packets received (total).
    pub pkt_recv_total: u64,
    /// Sender-side losses (total).
    pub pkt_snd_loss_total: u64,
    /// Receiver-side losses (total).
    pub pkt_rcv_loss_total: u64,
    /// Retransmitted packets (total).
    pub pkt_retrans_total: u64,
    /// Full ACKs sent (total).
    pub pkt_sent_ack_total: u64,
    /// Full ACKs received (total).
    pub pkt_recv_ack_total: u64,
    /// NAKs sent (total).
    pub pkt_sent_nak_total: u64,
    /// NAKs received (total).
    pub pkt_recv_nak_total: u64,
    /// Microseconds with data queued for sending (total).
    pub us_snd_duration_total: u64,
    /// Data packets sent since the last clear.
    pub pkt_sent: u64,
    /// Data packets received since the last clear.
    pub pkt_recv: u64,
    /// Sender-side losses since the last clear.
    pub pkt_snd_loss: u64,
    /// Receiver-side losses since the last clear.
    pub pkt_rcv_loss: u64,
    /// Retransmissions since the last clear.
    pub pkt_retrans: u64,
    /// Full ACKs sent since the last clear.
    pub pkt_sent_ack: u64,
    /// Full ACKs received since the last clear.
    pub pkt_recv_ack: u64,
    /// NAKs sent since the last clear.
    pub pkt_sent_nak: u64,
    /// NAKs received since the last clear.
    pub pkt_recv_nak: u64,
    /// Sending rate since the last clear, Mb/s of payload.
    pub mbps_send_rate: f64,
    /// Receiving rate since the last clear, Mb/s of payload.
    pub mbps_recv_rate: f64,
    /// Microseconds with data queued since the last clear.
    pub us_snd_duration: u64,
    /// Current inter-packet period, µs.
    pub us_pkt_snd_period: f64,
    /// Current flow window, packets.
    pub pkt_flow_window: u32,
    /// Current congestion window, packets.
    pub pkt_congestion_window: u32,
    /// Packets in flight (unacknowledged).
    pub pkt_flight_size: u32,
    /// Smoothed RTT, ms.
    pub ms_rtt: f64,
    /// Estimated link capacity, Mb/s of payload.
    pub mbps_bandwidth: f64,
    /// Free send buffer, bytes.
    pub byte_avail_snd_buf: u64,
    /// Free receive buffer, bytes.
    pub byte_avail_rcv_buf: u64,
    /// All counters, totals.
    pub total: Counters,
    /// All counters, since the last clear.
    pub local: Counters,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_resets_local_only() {
        let mut s = Stats::new(Instant::ZERO);
        s.count(|c| c.pkt_sent += 10);
        let inst = InstantStats {
            payload_size: 1000,
            ..Default::default()
        };
        let a = s.snapshot(Instant::from_micros(1_000_000), inst, true);
        assert_eq!((a.pkt_sent, a.pkt_sent_total), (10, 10));
        // 10 packets × 1000 bytes × 8 bits over 1 s = 0.08 Mb/s.
        assert!((a.mbps_send_rate - 0.08).abs() < 1e-9);
        s.count(|c| c.pkt_sent += 1);
        let b = s.snapshot(Instant::from_micros(2_000_000), inst, false);
        assert_eq!((b.pkt_sent, b.pkt_sent_total), (1, 11));
        assert_eq!(b.ms_timestamp, 2000);
    }

    #[test]
    fn send_duration_accumulates() {
        let mut s = Stats::new(Instant::ZERO);
        s.set_sender_busy(true, Instant::from_micros(100));
        s.set_sender_busy(false, Instant::from_micros(600));
        s.set_sender_busy(true, Instant::from_micros(1000));
        let snap = s.snapshot(Instant::from_micros(1200), InstantStats::default(), false);
        assert_eq!(snap.us_snd_duration_total, 700);
    }
}
