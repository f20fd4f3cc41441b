package net.udt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Shared helpers: loopback listeners, connected pairs, the test payload. */
final class TestSupport {
    private TestSupport() {}

    /** Loopback, ephemeral port. */
    static InetSocketAddress loopback() {
        return new InetSocketAddress("127.0.0.1", 0);
    }

    /** A listener on loopback. */
    static UdtServerSocket server(UdtSocketType type) throws IOException {
        UdtServerSocket s = new UdtServerSocket(type);
        s.bind(loopback());
        return s;
    }

    /** A connected client/server pair of {@code type}; the listener is closed. */
    record Pair(UdtSocket client, UdtSocket server) implements AutoCloseable {
        @Override
        public void close() throws IOException {
            client.close();
            server.close();
        }
    }

    static Pair pair(UdtSocketType type) throws Exception {
        try (UdtServerSocket l = server(type)) {
            l.setSoTimeout(10_000);
            CompletableFuture<UdtSocket> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return l.accept();
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            UdtSocket c = new UdtSocket(type);
            c.connect(l.getLocalSocketAddress(), 5000);
            UdtSocket s = accepted.get(10, TimeUnit.SECONDS);
            assertNotNull(s);
            return new Pair(c, s);
        }
    }

    /** The payload convention of `udt perf` and the UDT4 peer: byte i is i mod 251. */
    static byte pattern(long i) {
        return (byte) (i % 251);
    }

    static byte[] patternBytes(long from, int len) {
        byte[] b = new byte[len];
        for (int i = 0; i < len; i++) {
            b[i] = pattern(from + i);
        }
        return b;
    }

    /** Reads {@code in} to its end, checking every byte against the pattern; returns the count. */
    static long readVerified(InputStream in) throws IOException {
        byte[] buf = new byte[1 << 20];
        long at = 0;
        int n;
        while ((n = in.read(buf)) >= 0) {
            for (int i = 0; i < n; i++) {
                if (buf[i] != pattern(at + i)) {
                    assertEquals(pattern(at + i), buf[i], "byte " + (at + i));
                }
            }
            at += n;
        }
        return at;
    }

    /** Reads exactly {@code total} bytes from {@code in}, checking each against the pattern. */
    static void readVerified(InputStream in, long total) throws IOException {
        byte[] buf = new byte[1 << 20];
        long at = 0;
        while (at < total) {
            int n = in.read(buf, 0, (int) Math.min(buf.length, total - at));
            if (n < 0) {
                throw new java.io.EOFException("end of stream after " + at + " of " + total + " bytes");
            }
            for (int i = 0; i < n; i++) {
                if (buf[i] != pattern(at + i)) {
                    assertEquals(pattern(at + i), buf[i], "byte " + (at + i));
                }
            }
            at += n;
        }
    }

    /** Writes {@code total} pattern bytes in {@code chunk}-sized writes. */
    static void writePattern(java.io.OutputStream out, long total, int chunk) throws IOException {
        byte[] table = patternBytes(0, chunk + 251);
        long at = 0;
        while (at < total) {
            int n = (int) Math.min(chunk, total - at);
            out.write(table, (int) (at % 251), n);
            at += n;
        }
    }
}
