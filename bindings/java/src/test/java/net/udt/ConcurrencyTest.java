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

    @Test
    void closeRacingWithCallsOnTheSameSocketIsClean() throws Exception {
        for (int round = 0; round < 20; round++) {
            TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM);
            ExecutorService pool = Executors.newFixedThreadPool(6);
            try {
                List<Future<?>> users = new ArrayList<>();
                for (int t = 0; t < 5; t++) {
                    final int which = t;
                    users.add(pool.submit(() -> {
                        // Each call either works or fails with EINVSOCK once the close won.
                        for (int i = 0; i < 200; i++) {
                            try {
                                switch (which) {
                                    case 0 -> p.client().getOutputStream().write(new byte[1000]);
                                    case 1 -> p.client().getOption(UdtOption.UDT_SNDDATA);
                                    case 2 -> p.client().perfmon(false);
                                    case 3 -> p.client().setOption(UdtOption.UDT_MAXBW, 1L << 30);
                                    default -> p.client().getLocalSocketAddress();
                                }
                            } catch (UdtException e) {
                                assertEquals(UdtException.EINVSOCK, e.getErrorCode(), e.getMessage());
                                return null;
                            }
                        }
                        return null;
                    }));
                }
                Thread.sleep(round % 5);
                p.client().close();
                for (Future<?> f : users) {
                    f.get(20, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
                p.server().close();
            }
        }
    }

    @Test
    void aForgottenSocketIsClosedByTheCleaner() throws Exception {
        // A socket bound without port sharing, then dropped: once collected, its port is free.
        int port;
        {
            UdtSocket s = new UdtSocket();
            s.setOption(UdtOption.UDT_REUSEADDR, false);
            s.bind(TestSupport.loopback());
            port = s.getLocalSocketAddress().getPort();
        }
        java.net.InetSocketAddress at = new java.net.InetSocketAddress("127.0.0.1", port);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            System.gc();
            try (UdtSocket again = new UdtSocket()) {
                again.setOption(UdtOption.UDT_REUSEADDR, false);
                again.bind(at);
                return; // the port was released
            } catch (UdtException e) {
                assertEquals(UdtException.ESOCKFAIL, e.getErrorCode());
                assertTrue(System.nanoTime() < deadline, "the forgotten socket was never closed");
                Thread.sleep(50);
            }
        }
    }
}
