package net.udt;

/**
 * A connection's performance counters, UDT4's {@code TRACEINFO} ({@code CPerfMon}) with its
 * field names in Java style ({@code pktSentACKTotal} is {@link #pktSentAckTotal()},
 * {@code msRTT} is {@link #msRtt()}), returned by {@link UdtSocket#perfmon(boolean)}.
 * "Total" fields count since the connection began; the others since the last
 * {@code perfmon(true)}; the last group are instant values.
 *
 * @param msTimeStamp milliseconds since the socket was opened
 * @param pktSentTotal data packets sent, including retransmissions
 * @param pktRecvTotal data packets received
 * @param pktSndLossTotal packets the peer reported lost
 * @param pktRcvLossTotal packets found missing on receipt
 * @param pktRetransTotal packets retransmitted
 * @param pktSentAckTotal ACKs sent
 * @param pktRecvAckTotal ACKs received
 * @param pktSentNakTotal NAKs sent
 * @param pktRecvNakTotal NAKs received
 * @param usSndDurationTotal microseconds with data queued for sending
 * @param pktSent data packets sent since the last clear
 * @param pktRecv data packets received since the last clear
 * @param pktSndLoss sender-side losses since the last clear
 * @param pktRcvLoss receiver-side losses since the last clear
 * @param pktRetrans retransmissions since the last clear
 * @param pktSentAck ACKs sent since the last clear
 * @param pktRecvAck ACKs received since the last clear
 * @param pktSentNak NAKs sent since the last clear
 * @param pktRecvNak NAKs received since the last clear
 * @param mbpsSendRate sending rate since the last clear, Mb/s
 * @param mbpsRecvRate receiving rate since the last clear, Mb/s
 * @param usSndDuration microseconds with data queued since the last clear
 * @param usPktSndPeriod current interval between packets, microseconds
 * @param pktFlowWindow current flow window, packets
 * @param pktCongestionWindow current congestion window, packets
 * @param pktFlightSize packets in flight (sent, not acknowledged)
 * @param msRtt smoothed round-trip time, milliseconds
 * @param mbpsBandwidth estimated link capacity, Mb/s
 * @param byteAvailSndBuf free send buffer, bytes
 * @param byteAvailRcvBuf free receive buffer, bytes
 */
public record PerfStats(
        long msTimeStamp,
        long pktSentTotal,
        long pktRecvTotal,
        long pktSndLossTotal,
        long pktRcvLossTotal,
        long pktRetransTotal,
        long pktSentAckTotal,
        long pktRecvAckTotal,
        long pktSentNakTotal,
        long pktRecvNakTotal,
        long usSndDurationTotal,
        long pktSent,
        long pktRecv,
        long pktSndLoss,
        long pktRcvLoss,
        long pktRetrans,
        long pktSentAck,
        long pktRecvAck,
        long pktSentNak,
        long pktRecvNak,
        double mbpsSendRate,
        double mbpsRecvRate,
        long usSndDuration,
        double usPktSndPeriod,
        long pktFlowWindow,
        long pktCongestionWindow,
        long pktFlightSize,
        double msRtt,
        double mbpsBandwidth,
        long byteAvailSndBuf,
        long byteAvailRcvBuf) {

    /** Integer fields the native layer fills, in declaration order. */
    static final int LONGS = 26;
    /** Real fields the native layer fills, in declaration order. */
    static final int REALS = 5;

    /** Builds the record from the native layer's two arrays (declaration order each). */
    static PerfStats of(long[] l, double[] r) {
        return new PerfStats(
                l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7], l[8], l[9], l[10],
                l[11], l[12], l[13], l[14], l[15], l[16], l[17], l[18], l[19],
                r[0], r[1], l[20], r[2], l[21], l[22], l[23], r[3], r[4], l[24], l[25]);
    }
}
