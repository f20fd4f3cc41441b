package net.udt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Many threads with many sockets at once; a blocked call never holds up other sockets. */
class ConcurrencyTest {
    @Test
    void manyThreadsManySockets() throws Exception {
        final int threads = 16;
        final int socketsPerThread = 4;
        final long bytes = 1 << 20;
        ExecutorService pool = Executors.newCachedThreadPool();
        try (UdtServerSocket l = TestSupport.server(UdtSocketType.STREAM)) {
            l.setSoTimeout(20_000);
            // Server side: one thread per accepted connection, reading and verifying it.
            List<Future<Long>> served = new ArrayList<>();
            Future<?> acceptor = pool.submit(() -> {
                for (int i = 0; i < threads * socketsPerThread; i++) {
                    UdtSocket s = l.accept();
                    served.add(pool.submit(() -> {
                        try (s) {
                            TestSupport.readVerified(s.getInputStream(), bytes);
                            s.getOutputStream().write(1); // acknowledge
                            return bytes;
                        }
                    }));
                }
                return null;
            });
            // Client side: each thread opens its sockets, writes on each in turn, then closes.
            List<Future<Integer>> clients = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                clients.add(pool.submit(() -> {
                    List<UdtSocket> mine = new ArrayList<>();
                    for (int i = 0; i < socketsPerThread; i++) {
                        UdtSocket c = new UdtSocket();
                        c.connect(l.getLocalSocketAddress(), 10_000);
                        mine.add(c);
                    }
                    for (UdtSocket c : mine) {
                        TestSupport.writePattern(c.getOutputStream(), bytes, 50_000);
                    }
                    for (UdtSocket c : mine) {
                        assertEquals(1, c.getInputStream().read());
                        c.close();
                    }
                    return mine.size();
                }));
            }
            int opened = 0;
            for (Future<Integer> f : clients) {
                opened += f.get(60, TimeUnit.SECONDS);
            }
            acceptor.get(60, TimeUnit.SECONDS);
            long total = 0;
            for (Future<Long> f : served) {
                total += f.get(60, TimeUnit.SECONDS);
            }
            assertEquals(threads * socketsPerThread, opened);
            assertEquals(threads * socketsPerThread * bytes, total);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aBlockedReadDoesNotHoldUpOtherSockets() throws Exception {
        TestSupport.Pair idle = TestSupport.pair(UdtSocketType.STREAM);
        try (TestSupport.Pair busy = TestSupport.pair(UdtSocketType.STREAM)) {
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                // Two threads block on the idle pair, forever unless closed.
                Future<Integer> blockedRead = pool.submit(() -> idle.server().getInputStream().read());
                Future<Integer> blockedMsg = pool.submit(() -> idle.client().getInputStream().read());
                Thread.sleep(100);
                long t0 = System.nanoTime();
                Future<?> reader = pool.submit(() -> {
                    TestSupport.readVerified(busy.server().getInputStream(), 16 << 20);
                    return null;
                });
                TestSupport.writePattern(busy.client().getOutputStream(), 16 << 20, 1 << 16);
                reader.get(30, TimeUnit.SECONDS);
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertTrue(ms < 20_000, "16 MB took " + ms + " ms beside blocked calls");
                assertTrue(!blockedRead.isDone() && !blockedMsg.isDone(), "still blocked");
                idle.close();
                try {
                    blockedRead.get(5, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException expected) {
                    assertTrue(expected.getCause() instanceof UdtException);
                }
            } finally {
                pool.shutdownNow();
            }
        } finally {
            idle.close();
        }
    }
}
