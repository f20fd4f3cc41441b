package net.udt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/** Every UDT4 option: numbers, value types, set and read back, and 4.11's rules on misuse. */
class OptionsTest {
    private static int code(Executable e) {
        return assertThrows(UdtException.class, e::run).getErrorCode();
    }

    /** A call that may throw. */
    interface Executable {
        void run() throws Exception;
    }

    @Test
    void numbersFollowUdt4() {
        UdtOption[] all = UdtOption.values();
        assertEquals(21, all.length);
        for (int i = 0; i < all.length; i++) {
            assertEquals(i, all[i].udt4Number(), all[i].name());
        }
        assertEquals(7, UdtOption.UDT_LINGER.udt4Number());
        assertEquals(16, UdtOption.UDT_MAXBW.udt4Number());
        EnumSet<UdtOption> readOnly = EnumSet.of(UdtOption.UDT_STATE, UdtOption.UDT_EVENT,
                UdtOption.UDT_SNDDATA, UdtOption.UDT_RCVDATA);
        for (UdtOption o : all) {
            assertEquals(readOnly.contains(o), o.isReadOnly(), o.name());
        }
    }

    @Test
    void everyReadableOptionHasItsDeclaredType() throws Exception {
        try (UdtSocket s = new UdtSocket(); TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            for (UdtSocket sock : new UdtSocket[] {s, p.client()}) {
                for (UdtOption o : UdtOption.values()) {
                    if (o == UdtOption.UDT_MAXMSG || o == UdtOption.UDT_MSGTTL) {
                        assertEquals(UdtException.EINVOP, code(() -> sock.getOption(o)), o.name());
                        continue;
                    }
                    Object v = sock.getOption(o);
                    assertTrue(o.valueType().isInstance(v), o + " gave " + v.getClass());
                }
            }
            assertEquals(1, s.getOption(UdtOption.UDT_STATE), "INIT");
            assertEquals(5, p.client().getOption(UdtOption.UDT_STATE), "CONNECTED");
            assertEquals(true, s.getOption(UdtOption.UDT_SNDSYN));
            assertEquals(true, s.getOption(UdtOption.UDT_REUSEADDR));
            assertEquals(-1L, s.getOption(UdtOption.UDT_MAXBW));
            assertEquals("udt", s.getOption(UdtOption.UDT_CC));
        }
    }

    @Test
    void settableOptionsReadBackWhatWasSet() throws Exception {
        try (UdtSocket s = new UdtSocket()) {
            s.setOption(UdtOption.UDT_MSS, 1400);
            assertEquals(1400, s.getOption(UdtOption.UDT_MSS));
            s.setOption(UdtOption.UDT_SNDSYN, false);
            assertEquals(false, s.getOption(UdtOption.UDT_SNDSYN));
            s.setOption(UdtOption.UDT_RCVSYN, false);
            assertEquals(false, s.getOption(UdtOption.UDT_RCVSYN));
            s.setOption(UdtOption.UDT_CC, "udt4");
            assertEquals("udt4", s.getOption(UdtOption.UDT_CC));
            s.setOption(UdtOption.UDT_FC, 10_000);
            assertEquals(10_000, s.getOption(UdtOption.UDT_FC));
            s.setOption(UdtOption.UDT_SNDBUF, 4_000_000);
            s.setOption(UdtOption.UDT_RCVBUF, 4_000_000);
            // Buffers are kept in whole packets: what reads back is within one packet.
            assertTrue(Math.abs((Integer) s.getOption(UdtOption.UDT_SNDBUF) - 4_000_000) < 1400);
            assertTrue(Math.abs((Integer) s.getOption(UdtOption.UDT_RCVBUF) - 4_000_000) < 1400);
            s.setOption(UdtOption.UDT_LINGER, 3);
            assertEquals(3, s.getOption(UdtOption.UDT_LINGER));
            s.setOption(UdtOption.UDT_LINGER, -1);
            assertEquals(-1, s.getOption(UdtOption.UDT_LINGER), "off");
            s.setOption(UdtOption.UDP_SNDBUF, 1 << 20);
            assertEquals(1 << 20, s.getOption(UdtOption.UDP_SNDBUF));
            s.setOption(UdtOption.UDP_RCVBUF, 2 << 20);
            assertEquals(2 << 20, s.getOption(UdtOption.UDP_RCVBUF));
            s.setOption(UdtOption.UDT_RENDEZVOUS, true);
            assertEquals(true, s.getOption(UdtOption.UDT_RENDEZVOUS));
            s.setOption(UdtOption.UDT_SNDTIMEO, 250);
            assertEquals(250, s.getOption(UdtOption.UDT_SNDTIMEO));
            s.setOption(UdtOption.UDT_RCVTIMEO, 300);
            assertEquals(300, s.getOption(UdtOption.UDT_RCVTIMEO));
            assertEquals(300, s.getSoTimeout());
            s.setOption(UdtOption.UDT_REUSEADDR, false);
            assertEquals(false, s.getOption(UdtOption.UDT_REUSEADDR));
            s.setOption(UdtOption.UDT_MAXBW, 10_000_000L);
            assertEquals(10_000_000L, s.getOption(UdtOption.UDT_MAXBW));
            s.setOption(UdtOption.UDT_MAXBW, 5_000_000); // an Integer is widened
            assertEquals(5_000_000L, s.getOption(UdtOption.UDT_MAXBW));
        }
    }

    @Test
    void misuseGetsUdt4Codes() throws Exception {
        try (UdtSocket s = new UdtSocket()) {
            assertEquals(UdtException.EINVPARAM, code(() -> s.setOption(UdtOption.UDT_MSS, "big")));
            assertEquals(UdtException.EINVPARAM, code(() -> s.setOption(UdtOption.UDT_MSS, 5L)));
            assertEquals(UdtException.EINVPARAM, code(() -> s.setOption(UdtOption.UDT_MSS, null)));
            assertEquals(UdtException.EINVPARAM, code(() -> s.setOption(UdtOption.UDT_MSS, 10)));
            assertEquals(UdtException.EINVPARAM, code(() -> s.setOption(UdtOption.UDT_SNDBUF, 0)));
            assertEquals(UdtException.EINVPARAM, code(() -> s.setOption(UdtOption.UDT_CC, "no-such-cc")));
            assertEquals(UdtException.EINVPARAM, code(() -> s.setOption(UdtOption.UDT_SNDSYN, 1)));
            assertEquals(UdtException.EINVOP, code(() -> s.setOption(UdtOption.UDT_STATE, 5)));
            assertEquals(UdtException.EINVOP, code(() -> s.setOption(UdtOption.UDT_MAXMSG, 5)));
            assertThrows(NullPointerException.class, () -> s.setOption(null, 1));
            assertThrows(NullPointerException.class, () -> s.getOption(null));
            s.bind(TestSupport.loopback());
            assertEquals(UdtException.EBOUNDSOCK, code(() -> s.setOption(UdtOption.UDT_MSS, 1000)));
            assertEquals(UdtException.EBOUNDSOCK, code(() -> s.setOption(UdtOption.UDT_RCVBUF, 1 << 20)));
        }
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            assertEquals(UdtException.ECONNSOCK, code(() -> p.client().setOption(UdtOption.UDT_FC, 100)));
            // Live options still change on a connected socket.
            p.client().setOption(UdtOption.UDT_MAXBW, 1_000_000L);
            assertEquals(1_000_000L, p.client().getOption(UdtOption.UDT_MAXBW));
        }
        UdtSocket closed = new UdtSocket();
        closed.close();
        assertEquals(UdtException.EINVSOCK, code(() -> closed.setOption(UdtOption.UDT_MSS, 1000)));
        assertEquals(UdtException.EINVSOCK, code(() -> closed.getOption(UdtOption.UDT_MSS)));
    }

    @Test
    void serverSocketOptionsAreInheritedByAcceptedSockets() throws Exception {
        try (UdtServerSocket l = new UdtServerSocket()) {
            l.setOption(UdtOption.UDT_SNDTIMEO, 1234);
            assertEquals(1234, l.getOption(UdtOption.UDT_SNDTIMEO));
            l.bind(TestSupport.loopback());
            assertEquals(3, l.getOption(UdtOption.UDT_STATE), "LISTENING");
            try (UdtSocket c = new UdtSocket()) {
                c.connect(l.getLocalSocketAddress());
                try (UdtSocket s = l.accept()) {
                    assertEquals(1234, s.getOption(UdtOption.UDT_SNDTIMEO));
                    assertFalse((Integer) s.getOption(UdtOption.UDT_SNDTIMEO) < 0);
                }
            }
        }
    }

    @Test
    void nonBlockingReceiveFailsAtOnceWithEasyncrcv() throws Exception {
        try (TestSupport.Pair p = TestSupport.pair(UdtSocketType.STREAM)) {
            p.server().setOption(UdtOption.UDT_RCVSYN, false);
            assertEquals(UdtException.EASYNCRCV, code(() -> p.server().getInputStream().read()));
            p.client().getOutputStream().write(1);
            p.server().setOption(UdtOption.UDT_RCVSYN, true);
            assertEquals(1, p.server().getInputStream().read());
        }
    }
}
