package net.udt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Message sockets: boundaries kept, long messages cut, wrong-type calls refused. */
class MessageTest {
    /** Message k's size: 1 to 20 000 bytes, spread (as the interop tests' --vary-sizes). */
    static int size(int k) {
        return (int) (1 + (k * 2654435761L % 20_000));
    }

    @Test
    void everyMessageArrivesWholeWithItsOwnLength() throws Exception {
        final int count = 500;
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.MESSAGE)) {
            assertEquals(UdtSocketType.MESSAGE, p.server().getType());
            CompletableFuture<Void> sender = CompletableFuture.runAsync(() -> {
                try {
                    long at = 0;
                    for (int k = 0; k < count; k++) {
                        byte[] m = TestSupport.patternBytes(at, size(k));
                        // Offsets inside a larger array must be honoured.
                        byte[] framed = new byte[m.length + 10];
                        System.arraycopy(m, 0, framed, 5, m.length);
                        assertEquals(m.length, p.client().sendMessage(framed, 5, m.length, -1, true));
                        at += m.length;
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            byte[] buf = new byte[20_000];
            long at = 0;
            for (int k = 0; k < count; k++) {
                int n = p.server().receiveMessage(buf);
                assertEquals(size(k), n, "message " + k);
                assertArrayEquals(TestSupport.patternBytes(at, n), Arrays.copyOf(buf, n), "message " + k);
                at += n;
            }
            sender.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aLongMessageIsCutAndTheNextStartsClean() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.MESSAGE)) {
            p.client().sendMessage(TestSupport.patternBytes(0, 5000));
            p.client().sendMessage(new byte[] {1, 2, 3}, 0, 3, 1000, false);
            byte[] small = new byte[100];
            assertEquals(10, p.server().receiveMessage(small, 20, 10));
            assertArrayEquals(TestSupport.patternBytes(0, 10), Arrays.copyOfRange(small, 20, 30));
            assertEquals(3, p.server().receiveMessage(small));
            assertArrayEquals(new byte[] {1, 2, 3}, Arrays.copyOf(small, 3));
        }
    }

    @Test
    void afterThePeerClosesReceiveFailsWithConnectionLost() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.MESSAGE)) {
            p.client().sendMessage(new byte[] {5});
            p.client().close();
            byte[] b = new byte[8];
            assertEquals(1, p.server().receiveMessage(b));
            p.server().setSoTimeout(5000);
            UdtException e = assertThrows(UdtException.class, () -> p.server().receiveMessage(b));
            assertEquals(UdtException.ECONNLOST, e.getErrorCode());
        }
    }

    @Test
    void streamAndMessageCallsAreRefusedOnTheOtherType() throws Exception {
        try (TestSupport.Pair m = TestSupport.pair(UdtSocketType.MESSAGE);
                TestSupport.Pair s = TestSupport.pair(UdtSocketType.STREAM)) {
            UdtException e = assertThrows(UdtException.class, () -> m.client().getOutputStream().write(1));
            assertEquals(UdtException.EDGRAMILL, e.getErrorCode());
            e = assertThrows(UdtException.class, () -> m.client().getInputStream().read());
            assertEquals(UdtException.EDGRAMILL, e.getErrorCode());
            e = assertThrows(UdtException.class, () -> s.client().sendMessage(new byte[] {1}));
            assertEquals(UdtException.ESTREAMILL, e.getErrorCode());
            e = assertThrows(UdtException.class, () -> s.client().receiveMessage(new byte[1]));
            assertEquals(UdtException.ESTREAMILL, e.getErrorCode());
        }
    }

    @Test
    void aMessageLargerThanTheSendBufferIsRefused() throws Exception {
        try (UdtServerSocket l = new UdtServerSocket(true)) {
            l.bind(TestSupport.loopback());
            try (UdtSocket c = new UdtSocket(UdtSocketType.MESSAGE)) {
                c.setOption(UdtOption.UDT_SNDBUF, 64 * 1024);
                c.connect(l.getLocalSocketAddress(), 5000);
                try (UdtSocket s = l.accept()) {
                    assertTrue(s.isConnected());
                    UdtException e = assertThrows(UdtException.class, () -> c.sendMessage(new byte[1 << 20]));
                    assertEquals(UdtException.ELARGEMSG, e.getErrorCode());
                }
            }
        }
    }
}
