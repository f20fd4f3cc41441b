//! `socket.perfmon()`'s result: UDT4's `TRACEINFO` (`CPerfMon`), with its field names.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use udt::PerfStats;

macro_rules! perfmon {
    ($( $(#[$doc:meta])* $py:ident : $ty:ty = |$s:ident| $e:expr ),* $(,)?) => {
        /// Performance statistics of a connection, as UDT4's `perfmon` reports them
        /// (`CPerfMon`): totals since the connection opened (`…Total`), values since the last
        /// `perfmon(clear=True)`, and instant values. Read the fields as attributes
        /// (`stats.mbpsSendRate`) or all at once with `as_dict()`.
        #[pyclass(frozen, module = "udt", name = "PerfMon")]
        #[allow(non_snake_case)]
        pub struct PerfMon {
            $( $(#[$doc])* #[pyo3(get)] pub $py: $ty, )*
        }

        impl PerfMon {
            /// The names of the fields, in UDT4's order.
            const FIELDS: &'static [&'static str] = &[$(stringify!($py)),*];

            /// The statistics in UDT4's form.
            pub fn from_stats(s: &PerfStats) -> PerfMon {
                PerfMon { $( $py: { let $s = s; $e }, )* }
            }

            fn items<'py>(&self, py: Python<'py>) -> PyResult<Vec<(&'static str, Bound<'py, PyAny>)>> {
                Ok(vec![$( (stringify!($py), self.$py.into_pyobject(py)?.into_any()), )*])
            }
        }
    };
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

perfmon! {
    /// Milliseconds since the connection was opened.
    msTimeStamp: i64 = |s| int(s.ms_timestamp),
    /// Data packets sent, retransmissions included.
    pktSentTotal: i64 = |s| int(s.pkt_sent_total),
    /// Data packets received.
    pktRecvTotal: i64 = |s| int(s.pkt_recv_total),
    /// Packets the sender learnt were lost.
    pktSndLossTotal: i64 = |s| int(s.pkt_snd_loss_total),
    /// Packets the receiver found missing.
    pktRcvLossTotal: i64 = |s| int(s.pkt_rcv_loss_total),
    /// Retransmitted packets.
    pktRetransTotal: i64 = |s| int(s.pkt_retrans_total),
    /// ACKs sent.
    pktSentACKTotal: i64 = |s| int(s.pkt_sent_ack_total),
    /// ACKs received.
    pktRecvACKTotal: i64 = |s| int(s.pkt_recv_ack_total),
    /// NAKs sent.
    pktSentNAKTotal: i64 = |s| int(s.pkt_sent_nak_total),
    /// NAKs received.
    pktRecvNAKTotal: i64 = |s| int(s.pkt_recv_nak_total),
    /// Microseconds with data to send.
    usSndDurationTotal: i64 = |s| int(s.us_snd_duration_total),
    /// Data packets sent since the last clear.
    pktSent: i64 = |s| int(s.pkt_sent),
    /// Data packets received since the last clear.
    pktRecv: i64 = |s| int(s.pkt_recv),
    /// Sender-side losses since the last clear.
    pktSndLoss: i64 = |s| int(s.pkt_snd_loss),
    /// Receiver-side losses since the last clear.
    pktRcvLoss: i64 = |s| int(s.pkt_rcv_loss),
    /// Retransmissions since the last clear.
    pktRetrans: i64 = |s| int(s.pkt_retrans),
    /// ACKs sent since the last clear.
    pktSentACK: i64 = |s| int(s.pkt_sent_ack),
    /// ACKs received since the last clear.
    pktRecvACK: i64 = |s| int(s.pkt_recv_ack),
    /// NAKs sent since the last clear.
    pktSentNAK: i64 = |s| int(s.pkt_sent_nak),
    /// NAKs received since the last clear.
    pktRecvNAK: i64 = |s| int(s.pkt_recv_nak),
    /// Sending rate since the last clear, Mb/s.
    mbpsSendRate: f64 = |s| s.mbps_send_rate,
    /// Receiving rate since the last clear, Mb/s.
    mbpsRecvRate: f64 = |s| s.mbps_recv_rate,
    /// Microseconds with data to send since the last clear.
    usSndDuration: i64 = |s| int(s.us_snd_duration),
    /// Current interval between packets, µs.
    usPktSndPeriod: f64 = |s| s.us_pkt_snd_period,
    /// Flow window, packets.
    pktFlowWindow: i64 = |s| i64::from(s.pkt_flow_window),
    /// Congestion window, packets.
    pktCongestionWindow: i64 = |s| i64::from(s.pkt_congestion_window),
    /// Packets in flight.
    pktFlightSize: i64 = |s| i64::from(s.pkt_flight_size),
    /// Smoothed round-trip time, ms.
    msRTT: f64 = |s| s.ms_rtt,
    /// Estimated link capacity, Mb/s.
    mbpsBandwidth: f64 = |s| s.mbps_bandwidth,
    /// Free space in the send buffer, bytes.
    byteAvailSndBuf: i64 = |s| int(s.byte_avail_snd_buf),
    /// Free space in the receive buffer, bytes.
    byteAvailRcvBuf: i64 = |s| int(s.byte_avail_rcv_buf),
}

#[pymethods]
impl PerfMon {
    /// Every field as a `dict`, in UDT4's order.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.items(py)? {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// The field names, in UDT4's order.
    #[classattr]
    fn fields() -> Vec<&'static str> {
        Self::FIELDS.to_vec()
    }

    fn __repr__(&self) -> String {
        format!(
            "<udt.PerfMon msTimeStamp={} pktSentTotal={} pktRecvTotal={} pktRetransTotal={} mbpsSendRate={:.3} mbpsRecvRate={:.3} msRTT={:.3}>",
            self.msTimeStamp, self.pktSentTotal, self.pktRecvTotal, self.pktRetransTotal,
            self.mbpsSendRate, self.mbpsRecvRate, self.msRTT
        )
    }
}
