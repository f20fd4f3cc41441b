package net.udt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Constructors, bind, connect, accept, addresses, state and close of both socket classes. */
class LifecycleTest {
    @Test
    void connectAcceptAndAddresses() throws Exception {
        try (UdtServerSocket l = new UdtServerSocket()) {
            assertEquals(UdtSocketType.STREAM, l.getType());
            assertNull(l.getLocalSocketAddress(), "not bound yet");
            l.bind(TestSupport.loopback());
            InetSocketAddress at = l.getLocalSocketAddress();
            assertEquals(InetAddress.getByName("127.0.0.1"), at.getAddress());
            assertNotEquals(0, at.getPort());
            assertTrue(l.toString().contains(String.valueOf(at.getPort())));

            try (UdtSocket c = new UdtSocket()) {
                assertEquals(UdtSocketType.STREAM, c.getType());
                assertFalse(c.isConnected());
                assertNull(c.getLocalSocketAddress());
                assertNull(c.getRemoteSocketAddress());
                c.connect(at);
                assertTrue(c.isConnected());
                assertEquals(at, c.getRemoteSocketAddress());
                try (UdtSocket s = l.accept()) {
                    assertTrue(s.isConnected());
                    assertEquals(c.getLocalSocketAddress().getPort(), s.getRemoteSocketAddress().getPort());
                    assertEquals(at.getPort(), s.getLocalSocketAddress().getPort());
                    assertTrue(s.toString().startsWith("UdtSocket[STREAM"));
                }
            }
        }
    }

    @Test
    void closeIsIdempotentAndReported() throws Exception {
        UdtSocket c = new UdtSocket();
        assertFalse(c.isClosed());
        c.close();
        assertTrue(c.isClosed());
        c.close();
        assertFalse(c.isConnected());
        assertNull(c.getLocalSocketAddress());
        UdtServerSocket l = new UdtServerSocket();
        l.bind(null);
        assertEquals(InetAddress.getByName("0.0.0.0"), l.getLocalSocketAddress().getAddress());
        l.close();
        l.close();
        assertTrue(l.isClosed());
        assertNull(l.getLocalSocketAddress());
    }

    @Test
    void clientMayBindBeforeConnecting() throws Exception {
        try (UdtServerSocket l = TestSupport.server(UdtSocketType.STREAM);
                UdtSocket c = new UdtSocket()) {
            c.bind(TestSupport.loopback());
            int port = c.getLocalSocketAddress().getPort();
            c.connect(l.getLocalSocketAddress(), 5000);
            assertEquals(port, c.getLocalSocketAddress().getPort());
            try (UdtSocket s = l.accept()) {
                assertEquals(port, s.getRemoteSocketAddress().getPort());
            }
        }
    }

    @Test
    void bindNullPicksAnEphemeralPort() throws Exception {
        try (UdtSocket c = new UdtSocket()) {
            c.bind(null);
            assertNotEquals(0, c.getLocalSocketAddress().getPort());
        }
    }

    @Test
    void bindWithABacklogQueuesConnectionsUntilAccepted() throws Exception {
        try (UdtServerSocket l = new UdtServerSocket(UdtSocketType.STREAM)) {
            l.bind(TestSupport.loopback(), 3);
            UdtSocket[] clients = new UdtSocket[3];
            for (int i = 0; i < clients.length; i++) {
                clients[i] = new UdtSocket();
                clients[i].connect(l.getLocalSocketAddress(), 5000);
            }
            l.setSoTimeout(5000);
            for (UdtSocket c : clients) {
                try (UdtSocket s = l.accept()) {
                    assertTrue(s.isConnected());
                }
                c.close();
            }
        }
    }

    @Test
    void acceptTimesOutWithSoTimeout() throws Exception {
        try (UdtServerSocket l = TestSupport.server(UdtSocketType.STREAM)) {
            assertEquals(0, l.getSoTimeout());
            l.setSoTimeout(150);
            assertEquals(150, l.getSoTimeout());
            long t0 = System.nanoTime();
            UdtTimeoutException e = assertThrows(UdtTimeoutException.class, l::accept);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals(UdtException.ETIMEOUT, e.getErrorCode());
            assertTrue(ms >= 140 && ms < 3000, "waited " + ms + " ms");
            assertThrows(IllegalArgumentException.class, () -> l.setSoTimeout(-1));
        }
    }

    @Test
    void serverSocketMessageModeConstructors() throws Exception {
        try (UdtServerSocket a = new UdtServerSocket(true);
                UdtServerSocket b = new UdtServerSocket(false);
                UdtServerSocket c = new UdtServerSocket(UdtSocketType.MESSAGE, StandardProtocolFamily.INET6)) {
            assertEquals(UdtSocketType.MESSAGE, a.getType());
            assertEquals(UdtSocketType.STREAM, b.getType());
            assertEquals(UdtSocketType.MESSAGE, c.getType());
        }
        assertThrows(IllegalArgumentException.class,
                () -> new UdtServerSocket(UdtSocketType.STREAM, StandardProtocolFamily.UNIX));
        assertThrows(IllegalArgumentException.class,
                () -> new UdtSocket(UdtSocketType.STREAM, StandardProtocolFamily.UNIX));
        assertThrows(NullPointerException.class, () -> new UdtSocket(null));
    }

    @Test
    void ipv6SocketsConnectOverLoopbackAndReachIpv4Peers() throws Exception {
        try (UdtServerSocket l = new UdtServerSocket(UdtSocketType.STREAM, StandardProtocolFamily.INET6)) {
            l.bind(new InetSocketAddress("::1", 0));
            try (UdtSocket c = new UdtSocket(UdtSocketType.STREAM, StandardProtocolFamily.INET6)) {
                c.connect(l.getLocalSocketAddress(), 5000);
                try (UdtSocket s = l.accept()) {
                    assertEquals(InetAddress.getByName("::1"), s.getRemoteSocketAddress().getAddress());
                    c.getOutputStream().write(7);
                    assertEquals(7, s.getInputStream().read());
                }
            }
        }
        // An IPv6 wildcard listener takes an IPv4 client through a mapped address.
        try (UdtServerSocket l = new UdtServerSocket(UdtSocketType.STREAM, StandardProtocolFamily.INET6)) {
            l.bind(null);
            int port = l.getLocalSocketAddress().getPort();
            try (UdtSocket c = new UdtSocket(UdtSocketType.STREAM, StandardProtocolFamily.INET6)) {
                c.connect(new InetSocketAddress("127.0.0.1", port), 5000);
                try (UdtSocket s = l.accept()) {
                    assertNotNull(s.getRemoteSocketAddress());
                }
            }
        }
    }

    @Test
    void streamsAreStableAndCloseTheSocket() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            assertSame(p.client().getInputStream(), p.client().getInputStream());
            assertSame(p.client().getOutputStream(), p.client().getOutputStream());
            p.client().getOutputStream().flush();
            p.client().getOutputStream().close();
            assertTrue(p.client().isClosed());
            UdtException e = assertThrows(UdtException.class, () -> p.client().getInputStream());
            assertEquals(UdtException.EINVSOCK, e.getErrorCode());
            assertThrows(UdtException.class, () -> p.client().getOutputStream());
            p.server().getInputStream().close();
            assertTrue(p.server().isClosed());
        }
    }

    @Test
    void rendezvousConnectsTwoBoundSockets() throws Exception {
        try (UdtSocket a = new UdtSocket(); UdtSocket b = new UdtSocket()) {
            for (UdtSocket s : new UdtSocket[] {a, b}) {
                s.setOption(UdtOption.UDT_RENDEZVOUS, true);
                s.bind(TestSupport.loopback());
            }
            CompletableFuture<Void> other = CompletableFuture.runAsync(() -> {
                try {
                    b.connect(a.getLocalSocketAddress(), 5000);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            a.connect(b.getLocalSocketAddress(), 5000);
            other.get(10, TimeUnit.SECONDS);
            a.getOutputStream().write(new byte[] {1, 2, 3});
            byte[] got = new byte[3];
            assertEquals(3, b.getInputStream().readNBytes(got, 0, 3));
            assertEquals(3, got[2]);
        }
    }
}
