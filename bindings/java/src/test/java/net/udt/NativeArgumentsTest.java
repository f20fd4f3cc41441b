package net.udt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/**
 * The native layer's own checks, reached directly (the public classes check first, so these
 * arguments never get through them): malformed input must be a clear exception, never a
 * crash of the JVM.
 */
class NativeArgumentsTest {
    /** A call that may throw. */
    interface Call {
        void run() throws Exception;
    }

    private static int code(Call c) {
        return assertThrows(UdtException.class, c::run).getErrorCode();
    }

    @Test
    void deadAndForgedIdsAreEinvsock() throws Exception {
        long id = Native.create(false, false);
        Native.close(id);
        Native.close(id); // closing a dead id is a no-op
        for (long bad : new long[] {id, 0, -1, Long.MAX_VALUE, Long.MIN_VALUE}) {
            assertEquals(UdtException.EINVSOCK, code(() -> Native.send(bad, new byte[1], 0, 1)));
            assertEquals(UdtException.EINVSOCK, code(() -> Native.recv(bad, new byte[1], 0, 1)));
            assertEquals(UdtException.EINVSOCK, code(() -> Native.listen(bad, 1)));
            assertEquals(UdtException.EINVSOCK, code(() -> Native.accept(bad, 10)));
            assertEquals(UdtException.EINVSOCK, code(() -> Native.localAddress(bad)));
            assertEquals(UdtException.EINVSOCK, code(() -> Native.peerAddress(bad)));
            assertEquals(UdtException.EINVSOCK, code(() -> Native.getInt(bad, 0)));
            assertEquals(UdtException.EINVSOCK, code(() -> Native.getCc(bad)));
            assertEquals(UdtException.EINVSOCK,
                    code(() -> Native.perfmon(bad, false, new long[PerfStats.LONGS], new double[PerfStats.REALS])));
            assertEquals(9, Native.status(bad), "NONEXIST");
        }
    }

    @Test
    void malformedArgumentsAreRefusedClearly() throws Exception {
        long id = Native.create(false, false);
        try {
            byte[] lo = {127, 0, 0, 1};
            assertThrows(NullPointerException.class, () -> Native.bind(id, null, 0));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.bind(id, new byte[5], 0)));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.bind(id, new byte[0], 0)));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.bind(id, lo, 65_536)));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.bind(id, lo, -1)));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.connect(id, lo, 0, 0)));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.connect(id, new byte[16], 9, 0)));
            assertThrows(NullPointerException.class, () -> Native.connect(id, null, 9, 0));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.setInt(id, 21, 1)));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.setInt(id, -1, 1)));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.getInt(id, Integer.MAX_VALUE)));
            // An option read through the entry point of another type.
            assertEquals(UdtException.EINVPARAM, code(() -> Native.getBool(id, UdtOption.UDT_MSS.udt4Number())));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.getInt(id, UdtOption.UDT_SNDSYN.udt4Number())));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.getLong(id, UdtOption.UDT_CC.udt4Number())));
            assertEquals(UdtException.EINVPARAM, code(() -> Native.setLong(id, UdtOption.UDT_CC.udt4Number(), 1)));
            assertThrows(NullPointerException.class, () -> Native.setCc(id, null));
            assertThrows(NullPointerException.class, () -> Native.send(id, null, 0, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> Native.send(id, new byte[4], 2, 3));
            assertThrows(IndexOutOfBoundsException.class, () -> Native.recv(id, new byte[4], -1, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> Native.recv(id, new byte[4], 0, Integer.MAX_VALUE));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> Native.sendMessage(id, new byte[4], Integer.MAX_VALUE, 1, -1, true));
            assertThrows(IndexOutOfBoundsException.class, () -> Native.receiveMessage(id, new byte[4], 4, 1));
            assertThrows(NullPointerException.class, () -> Native.sendFile(id, null, 0, 0));
            assertThrows(NullPointerException.class, () -> Native.receiveFile(id, null, 0, 0));
            assertThrows(NullPointerException.class, () -> Native.perfmon(id, false, null, new double[5]));
            assertThrows(IndexOutOfBoundsException.class, () -> Native.perfmon(id, false, new long[3], new double[5]));
            // After all that the socket still works.
            Native.bind(id, lo, 0);
            assertEquals(6, Native.localAddress(id).length);
        } finally {
            Native.close(id);
        }
    }
}
