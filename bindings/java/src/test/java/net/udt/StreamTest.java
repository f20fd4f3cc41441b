package net.udt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.security.MessageDigest;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Byte streams: round trips, end of stream, timeouts, a large transfer checked byte for byte. */
class StreamTest {
    @Test
    void bytesArriveInOrderAndEndOfStreamIsMinusOne() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            OutputStream out = p.client().getOutputStream();
            InputStream in = p.server().getInputStream();
            out.write(0xAB);
            out.write(new byte[] {9, 8, 7, 6}, 1, 2);
            out.write(new byte[0]);
            assertEquals(0xAB, in.read());
            byte[] two = new byte[2];
            assertEquals(2, in.readNBytes(two, 0, 2));
            assertArrayEquals(new byte[] {8, 7}, two);
            assertEquals(0, in.read(new byte[4], 0, 0), "zero-length read returns at once");
            // available(): 0 while nothing is readable, then at least 1 (a lower bound).
            assertEquals(0, in.available());
            out.write(new byte[100]);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (in.available() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(1, in.available());
            assertEquals(100, in.readNBytes(100).length);
            assertEquals(0, in.available());
            p.client().close();
            assertEquals(-1, in.read(), "end of stream after the peer closed");
            assertEquals(-1, in.read(new byte[10]));
        }
    }

    @Test
    void readTimesOutAndTheSocketStaysUsable() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            assertEquals(0, p.server().getSoTimeout());
            p.server().setSoTimeout(100);
            assertEquals(100, p.server().getSoTimeout());
            InputStream in = p.server().getInputStream();
            long t0 = System.nanoTime();
            UdtTimeoutException e = assertThrows(UdtTimeoutException.class, in::read);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals(UdtException.ETIMEOUT, e.getErrorCode());
            assertTrue(ms >= 90 && ms < 3000, "waited " + ms + " ms");
            p.client().getOutputStream().write(42);
            assertEquals(42, in.read());
            p.server().setSoTimeout(0);
            assertEquals(0, p.server().getSoTimeout());
            assertEquals(-1, p.server().getOption(UdtOption.UDT_RCVTIMEO));
            assertThrows(IllegalArgumentException.class, () -> p.server().setSoTimeout(-5));
        }
    }

    @Test
    void largeTransferIsIdenticalByteForByte() throws Exception {
        final int total = 64 << 20;
        byte[] data = new byte[total];
        new Random(16).nextBytes(data);
        byte[] sent = MessageDigest.getInstance("SHA-256").digest(data);
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
                try (OutputStream out = p.client().getOutputStream()) {
                    // Odd-sized writes cross packet and chunk boundaries at varying places.
                    int at = 0;
                    int step = 1;
                    while (at < total) {
                        int n = Math.min(step, total - at);
                        out.write(data, at, n);
                        at += n;
                        step = step * 7 % 1_000_003 + 1;
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            byte[] got = new byte[total];
            InputStream in = p.server().getInputStream();
            int at = 0;
            while (at < total) {
                int n = in.read(got, at, Math.min(total - at, 3 << 20));
                assertTrue(n > 0, "end of stream after " + at + " bytes");
                at += n;
            }
            writer.get(60, TimeUnit.SECONDS);
            assertEquals(total, at);
            assertEquals(-1, in.read(new byte[16]), "nothing beyond what was sent");
            assertArrayEquals(sent, MessageDigest.getInstance("SHA-256").digest(got));
            assertArrayEquals(data, got);
        }
    }

    @Test
    void bothDirectionsAtOnce() throws Exception {
        final long total = 8 << 20;
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            CompletableFuture<Void> clientWrites = CompletableFuture.runAsync(() -> {
                try {
                    TestSupport.writePattern(p.client().getOutputStream(), total, 65_536);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            CompletableFuture<Void> clientReads = CompletableFuture.runAsync(() -> {
                try {
                    TestSupport.readVerified(p.client().getInputStream(), total);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            CompletableFuture<Void> serverReads = CompletableFuture.runAsync(() -> {
                try {
                    TestSupport.readVerified(p.server().getInputStream(), total);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            TestSupport.writePattern(p.server().getOutputStream(), total, 100_000);
            CompletableFuture.allOf(clientWrites, clientReads, serverReads).get(30, TimeUnit.SECONDS);
        }
    }
}
