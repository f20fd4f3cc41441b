package net.udt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** perfmon: counters that follow a transfer, and the clear flag. */
class PerfmonTest {
    @Test
    void countersFollowATransferAndClearResetsTheInterval() throws Exception {
        final long total = 4 << 20;
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            CompletableFuture<Void> reader = CompletableFuture.runAsync(() -> {
                try {
                    TestSupport.readVerified(p.server().getInputStream(), total);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            TestSupport.writePattern(p.client().getOutputStream(), total, 1 << 16);
            reader.get(30, TimeUnit.SECONDS);
            PerfStats s = p.client().perfmon(true);
            long payload = total / 1456; // data packets carry at most 1456 bytes at the default MSS
            assertTrue(s.pktSentTotal() >= payload, "sent " + s.pktSentTotal());
            assertTrue(s.pktSent() >= payload, "interval count before clearing");
            assertTrue(s.msTimeStamp() >= 0);
            assertTrue(s.msRtt() >= 0 && s.msRtt() < 1000, "rtt " + s.msRtt());
            assertTrue(s.pktFlowWindow() > 0);
            assertTrue(s.byteAvailSndBuf() > 0);
            assertTrue(s.mbpsSendRate() >= 0);
            assertTrue(s.usPktSndPeriod() >= 0);
            assertTrue(s.pktRecvAckTotal() > 0, "the sender got ACKs");
            PerfStats after = p.client().perfmon(false);
            assertEquals(0, after.pktSent(), "cleared");
            assertTrue(after.pktSentTotal() >= s.pktSentTotal(), "totals are never cleared");
            PerfStats r = p.server().perfmon(false);
            assertTrue(r.pktRecvTotal() >= payload, "received " + r.pktRecvTotal());
            assertTrue(r.pktSentAckTotal() > 0);
            assertTrue(r.byteAvailRcvBuf() > 0);
        }
    }

    @Test
    void perfmonNeedsAConnection() throws Exception {
        try (UdtSocket s = new UdtSocket()) {
            UdtException e = assertThrows(UdtException.class, () -> s.perfmon(false));
            assertEquals(UdtException.ENOCONN, e.getErrorCode());
        }
    }
}
