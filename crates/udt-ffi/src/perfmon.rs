//! `udt_perfmon`: performance statistics in UDT4's `TRACEINFO` (`CPerfMon`) layout: the same
//! fields, names, C types and order, so the C++ drop-in copies them one to one.

use std::os::raw::c_int;

use udt_proto::stats::PerfStats;

use crate::call::guarded;
use crate::handles;
use crate::last_error::FfiError;

/// UDT4's `TRACEINFO`. Totals count since the connection started; the others since the last
/// `udt_perfmon` with `clear` ≠ 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[allow(non_snake_case)]
pub struct udt_traceinfo {
    /// Milliseconds since the socket was opened.
    pub msTimeStamp: i64,
    /// Data packets sent, including retransmissions (total).
    pub pktSentTotal: i64,
    /// Data packets received (total).
    pub pktRecvTotal: i64,
    /// Packets the sender learned were lost (total).
    pub pktSndLossTotal: c_int,
    /// Packets the receiver found missing (total).
    pub pktRcvLossTotal: c_int,
    /// Retransmitted packets (total).
    pub pktRetransTotal: c_int,
    /// ACKs sent (total).
    pub pktSentACKTotal: c_int,
    /// ACKs received (total).
    pub pktRecvACKTotal: c_int,
    /// NAKs sent (total).
    pub pktSentNAKTotal: c_int,
    /// NAKs received (total).
    pub pktRecvNAKTotal: c_int,
    /// Microseconds spent with data to send (total).
    pub usSndDurationTotal: i64,
    /// Data packets sent, including retransmissions.
    pub pktSent: i64,
    /// Data packets received.
    pub pktRecv: i64,
    /// Packets the sender learned were lost.
    pub pktSndLoss: c_int,
    /// Packets the receiver found missing.
    pub pktRcvLoss: c_int,
    /// Retransmitted packets.
    pub pktRetrans: c_int,
    /// ACKs sent.
    pub pktSentACK: c_int,
    /// ACKs received.
    pub pktRecvACK: c_int,
    /// NAKs sent.
    pub pktSentNAK: c_int,
    /// NAKs received.
    pub pktRecvNAK: c_int,
    /// Sending rate, Mb/s.
    pub mbpsSendRate: f64,
    /// Receiving rate, Mb/s.
    pub mbpsRecvRate: f64,
    /// Microseconds spent with data to send.
    pub usSndDuration: i64,
    /// Current time between packets, µs.
    pub usPktSndPeriod: f64,
    /// Current flow window, packets.
    pub pktFlowWindow: c_int,
    /// Current congestion window, packets.
    pub pktCongestionWindow: c_int,
    /// Packets in flight.
    pub pktFlightSize: c_int,
    /// Smoothed round-trip time, ms.
    pub msRTT: f64,
    /// Estimated link capacity, Mb/s.
    pub mbpsBandwidth: f64,
    /// Free space in the send buffer, bytes.
    pub byteAvailSndBuf: c_int,
    /// Free space in the receive buffer, bytes.
    pub byteAvailRcvBuf: c_int,
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn int_of(v: u64) -> c_int {
    c_int::try_from(v).unwrap_or(c_int::MAX)
}

impl From<&PerfStats> for udt_traceinfo {
    fn from(p: &PerfStats) -> udt_traceinfo {
        udt_traceinfo {
            msTimeStamp: i64_of(p.ms_timestamp),
            pktSentTotal: i64_of(p.pkt_sent_total),
            pktRecvTotal: i64_of(p.pkt_recv_total),
            pktSndLossTotal: int_of(p.pkt_snd_loss_total),
            pktRcvLossTotal: int_of(p.pkt_rcv_loss_total),
            pktRetransTotal: int_of(p.pkt_retrans_total),
            pktSentACKTotal: int_of(p.pkt_sent_ack_total),
            pktRecvACKTotal: int_of(p.pkt_recv_ack_total),
            pktSentNAKTotal: int_of(p.pkt_sent_nak_total),
            pktRecvNAKTotal: int_of(p.pkt_recv_nak_total),
            usSndDurationTotal: i64_of(p.us_snd_duration_total),
            pktSent: i64_of(p.pkt_sent),
            pktRecv: i64_of(p.pkt_recv),
            pktSndLoss: int_of(p.pkt_snd_loss),
            pktRcvLoss: int_of(p.pkt_rcv_loss),
            pktRetrans: int_of(p.pkt_retrans),
            pktSentACK: int_of(p.pkt_sent_ack),
            pktRecvACK: int_of(p.pkt_recv_ack),
            pktSentNAK: int_of(p.pkt_sent_nak),
            pktRecvNAK: int_of(p.pkt_recv_nak),
            mbpsSendRate: p.mbps_send_rate,
            mbpsRecvRate: p.mbps_recv_rate,
            usSndDuration: i64_of(p.us_snd_duration),
            usPktSndPeriod: p.us_pkt_snd_period,
            pktFlowWindow: int_of(u64::from(p.pkt_flow_window)),
            pktCongestionWindow: int_of(u64::from(p.pkt_congestion_window)),
            pktFlightSize: int_of(u64::from(p.pkt_flight_size)),
            msRTT: p.ms_rtt,
            mbpsBandwidth: p.mbps_bandwidth,
            byteAvailSndBuf: int_of(p.byte_avail_snd_buf),
            byteAvailRcvBuf: int_of(p.byte_avail_rcv_buf),
        }
    }
}

/// Writes the statistics of connected socket `u` to `*perf`; `clear` ≠ 0 restarts the
/// interval values (UDT4's C++ default is to clear). Returns 0 or `UDT_ERROR`.
///
/// # Safety
/// `perf` must point to a writable `udt_traceinfo`.
#[no_mangle]
pub unsafe extern "C" fn udt_perfmon(u: c_int, perf: *mut udt_traceinfo, clear: c_int) -> c_int {
    guarded(|| {
        let s = handles::socket(u)?;
        if perf.is_null() {
            return Err(FfiError::param("perf is null"));
        }
        let stats = s.perfmon(clear != 0)?;
        // SAFETY: `perf` is non-null and writable per the contract.
        unsafe { std::ptr::write_unaligned(perf, udt_traceinfo::from(&stats)) };
        Ok(0)
    })
}
