package net.udt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The failures a caller meets: refused, timeout, closed socket, bad address, bad arguments. */
class ErrorsTest {
    /** A call that may throw. */
    interface Call {
        void run() throws Exception;
    }

    private static int code(Call c) {
        return assertThrows(UdtException.class, c::run).getErrorCode();
    }

    @Test
    void refusedByAListenerOfTheOtherType() throws Exception {
        try (UdtServerSocket l = TestSupport.server(UdtSocketType.MESSAGE); UdtSocket c = new UdtSocket()) {
            UdtException e = assertThrows(UdtException.class, () -> c.connect(l.getLocalSocketAddress(), 5000));
            assertEquals(UdtException.ECONNREJ, e.getErrorCode());
            assertTrue(e.getMessage().contains("1002"), e.getMessage());
        }
    }

    @Test
    void connectTimesOutWhenNobodyAnswers() throws Exception {
        try (DatagramSocket silent = new DatagramSocket(0, InetAddress.getByName("127.0.0.1"));
                UdtSocket c = new UdtSocket()) {
            InetSocketAddress to = new InetSocketAddress("127.0.0.1", silent.getLocalPort());
            long t0 = System.nanoTime();
            UdtTimeoutException e = assertThrows(UdtTimeoutException.class, () -> c.connect(to, 300));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals(UdtException.ETIMEOUT, e.getErrorCode());
            assertTrue(ms >= 290 && ms < 2500, "waited " + ms + " ms");
            // Without a timeout UDT gives up by itself after 3 s: ENOSERVER, still a timeout.
            SocketTimeoutException e2 = assertThrows(SocketTimeoutException.class, () -> c.connect(to));
            assertEquals(UdtException.ENOSERVER, ((UdtTimeoutException) e2).getErrorCode());
            // The socket stays bound and may connect again, as in UDT4.
            try (UdtServerSocket l = TestSupport.server(UdtSocketType.STREAM)) {
                c.connect(l.getLocalSocketAddress(), 5000);
                assertTrue(c.isConnected());
            }
        }
    }

    @Test
    void everyCallOnAClosedSocketFailsWithEinvsock() throws Exception {
        TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM);
        UdtSocket c = p.client();
        var in = c.getInputStream();
        var out = c.getOutputStream();
        c.close();
        p.server().close();
        InetSocketAddress any = new InetSocketAddress("127.0.0.1", 9);
        assertEquals(UdtException.EINVSOCK, code(() -> in.read()));
        assertEquals(UdtException.EINVSOCK, code(() -> in.available()));
        assertEquals(UdtException.EINVSOCK, code(() -> out.write(1)));
        assertEquals(UdtException.EINVSOCK, code(() -> c.connect(any)));
        assertEquals(UdtException.EINVSOCK, code(() -> c.bind(null)));
        assertEquals(UdtException.EINVSOCK, code(() -> c.sendMessage(new byte[1])));
        assertEquals(UdtException.EINVSOCK, code(() -> c.receiveMessage(new byte[1])));
        assertEquals(UdtException.EINVSOCK, code(() -> c.perfmon(false)));
        assertEquals(UdtException.EINVSOCK, code(() -> c.setSoTimeout(5)));
        assertEquals(UdtException.EINVSOCK, code(() -> c.getSoTimeout()));
        assertEquals(UdtException.EINVSOCK, code(() -> c.sendFile(java.nio.file.Path.of("/dev/null"), 0, 0)));
        UdtServerSocket l = new UdtServerSocket();
        l.close();
        assertEquals(UdtException.EINVSOCK, code(() -> l.bind(null)));
        assertEquals(UdtException.EINVSOCK, code(l::accept));
    }

    @Test
    void closeFromAnotherThreadWakesBlockedCalls() throws Exception {
        TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM);
        CompletableFuture<Integer> reader = CompletableFuture.supplyAsync(() -> {
            try {
                return p.server().getInputStream().read();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        UdtServerSocket l = TestSupport.server(UdtSocketType.STREAM);
        CompletableFuture<UdtSocket> acceptor = CompletableFuture.supplyAsync(() -> {
            try {
                return l.accept();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        Thread.sleep(200);
        p.server().close();
        l.close();
        for (CompletableFuture<?> f : new CompletableFuture<?>[] {reader, acceptor}) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(5, TimeUnit.SECONDS));
            UdtException cause = (UdtException) e.getCause().getCause();
            assertEquals(UdtException.EINVSOCK, cause.getErrorCode());
        }
        p.client().close();
    }

    @Test
    void badAddressesAreRefused() throws Exception {
        try (UdtSocket c = new UdtSocket()) {
            InetSocketAddress unresolved = InetSocketAddress.createUnresolved("no.such.host.invalid", 9000);
            assertEquals(UdtException.EINVPARAM, code(() -> c.connect(unresolved)));
            assertEquals(UdtException.EINVPARAM, code(() -> c.bind(unresolved)));
            // An IPv6 address on an IPv4 socket.
            assertEquals(UdtException.EINVPARAM, code(() -> c.connect(new InetSocketAddress("::1", 9000), 500)));
            assertEquals(UdtException.EINVPARAM, code(() -> c.connect(new InetSocketAddress("127.0.0.1", 0))));
            assertThrows(NullPointerException.class, () -> c.connect(null));
            assertThrows(IllegalArgumentException.class, () -> c.connect(new InetSocketAddress("127.0.0.1", 9), -1));
        }
        try (UdtServerSocket l = new UdtServerSocket()) {
            assertEquals(UdtException.EINVPARAM, code(() -> l.bind(new InetSocketAddress("::1", 0))));
        }
    }

    @Test
    void lifecycleMisuseGetsUdt4Codes() throws Exception {
        try (UdtServerSocket l = new UdtServerSocket(); UdtSocket c = new UdtSocket()) {
            assertEquals(UdtException.ENOLISTEN, code(l::accept));
            l.setSoTimeout(100);
            assertEquals(UdtException.ENOLISTEN, code(l::accept), "also with a timeout");
            l.setSoTimeout(0);
            assertEquals(UdtException.ENOCONN, code(() -> c.getOutputStream().write(1)));
            assertEquals(UdtException.ENOCONN, code(() -> c.getInputStream().read()));
            l.bind(TestSupport.loopback());
            assertEquals(UdtException.EBOUNDSOCK, code(() -> l.bind(TestSupport.loopback())));
            c.connect(l.getLocalSocketAddress());
            assertEquals(UdtException.ECONNSOCK, code(() -> c.connect(l.getLocalSocketAddress())));
            l.accept().close();
        }
        // A port in use by a socket that does not share it.
        try (UdtServerSocket a = new UdtServerSocket(); UdtServerSocket b = new UdtServerSocket()) {
            a.setOption(UdtOption.UDT_REUSEADDR, false);
            a.bind(TestSupport.loopback());
            b.setOption(UdtOption.UDT_REUSEADDR, false);
            assertEquals(UdtException.ESOCKFAIL, code(() -> b.bind(a.getLocalSocketAddress())));
        }
        // Two listeners on one shared port.
        try (UdtServerSocket a = TestSupport.server(UdtSocketType.STREAM); UdtServerSocket b = new UdtServerSocket()) {
            assertEquals(UdtException.EDUPLISTEN, code(() -> b.bind(a.getLocalSocketAddress())));
        }
    }

    @Test
    void badArrayRangesThrowIndexOutOfBounds() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.MESSAGE); TestSupport.Pair s = TestSupport.pair(UdtSocketType.STREAM)) {
            byte[] b = new byte[10];
            assertThrows(IndexOutOfBoundsException.class, () -> p.client().sendMessage(b, 5, 6, -1, true));
            assertThrows(IndexOutOfBoundsException.class, () -> p.client().sendMessage(b, -1, 2, -1, true));
            assertThrows(IndexOutOfBoundsException.class, () -> p.server().receiveMessage(b, 8, 3));
            assertThrows(NullPointerException.class, () -> p.server().receiveMessage(null));
            assertThrows(NullPointerException.class, () -> p.client().sendMessage(null));
            assertThrows(IndexOutOfBoundsException.class, () -> s.client().getOutputStream().write(b, 3, 8));
            assertThrows(IndexOutOfBoundsException.class, () -> s.server().getInputStream().read(b, 11, 0));
            assertThrows(IndexOutOfBoundsException.class, () -> s.server().getInputStream().read(b, 0, -1));
            assertThrows(NullPointerException.class, () -> s.client().getOutputStream().write(null, 0, 1));
        }
    }

    @Test
    void exceptionsCarryTheirCodes() {
        UdtException e = new UdtException(UdtException.ECONNLOST, "lost");
        assertEquals(2001, e.getErrorCode());
        assertTrue(e instanceof IOException);
        assertTrue(e.getMessage().startsWith("lost"));
        UdtTimeoutException t = new UdtTimeoutException(UdtException.ETIMEOUT, "slow");
        assertEquals(6003, t.getErrorCode());
        assertTrue(t instanceof SocketTimeoutException);
    }
}
