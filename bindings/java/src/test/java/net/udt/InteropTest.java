package net.udt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Against other implementations: the `udt` tool (`udt perf`, system property {@code udt.cli})
 * and UDT4 4.11 (`interop/target/udt4-peer`, property {@code udt4.peer}). Both verify every
 * byte they receive (byte i is i mod 251) and print a JSON report. Skipped when a binary is
 * not given (test.sh builds and passes both).
 */
class InteropTest {
    private static final long BYTES = 32L << 20;

    private static Path binary(String property) {
        String p = System.getProperty(property, "");
        assumeTrue(!p.isEmpty() && !p.startsWith("${") && Files.isExecutable(Path.of(p)),
                property + " not set to an executable");
        return Path.of(p);
    }

    /** A UDP port free right now on loopback, for a peer that needs it on its command line. */
    private static int freePort() throws IOException {
        try (DatagramSocket d = new DatagramSocket(0, InetAddress.getByName("127.0.0.1"))) {
            return d.getLocalPort();
        }
    }

    /** A peer process with a time limit; its stdout is collected. */
    private static final class Peer implements AutoCloseable {
        final Process process;
        final Path out;

        Peer(List<String> cmd) throws IOException {
            out = Files.createTempFile("udt-peer", ".out");
            process = new ProcessBuilder(cmd)
                    .redirectOutput(out.toFile())
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
        }

        /** Waits for the exit; returns stdout. Fails on a non-zero exit or the time limit. */
        String finish() throws Exception {
            assertTrue(process.waitFor(60, TimeUnit.SECONDS), "peer did not exit in time");
            String text = Files.readString(out, StandardCharsets.UTF_8);
            assertEquals(0, process.exitValue(), "peer exit status; output: " + text);
            return text;
        }

        @Override
        public void close() throws IOException {
            process.destroyForcibly();
            Files.deleteIfExists(out);
        }
    }

    /**
     * Waits until {@code peer} has bound UDP {@code port}, watching {@code /proc/net/udp} (and
     * {@code udp6}) rather than probing with a bind, which could take the port from the peer.
     */
    private static void awaitBound(Peer peer, int port) throws Exception {
        String hexPort = String.format(":%04X ", port);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            for (String table : new String[] {"/proc/net/udp", "/proc/net/udp6"}) {
                Path p = Path.of(table);
                if (Files.exists(p)) {
                    for (String line : Files.readAllLines(p)) {
                        String[] cols = line.trim().split("\\s+");
                        if (cols.length > 1 && (cols[1] + " ").endsWith(hexPort)) {
                            return;
                        }
                    }
                }
            }
            if (!peer.process.isAlive()) {
                throw new AssertionError("peer exited (" + peer.process.exitValue() + ") before binding port "
                        + port + ": " + Files.readString(peer.out));
            }
            Thread.sleep(10);
        }
        throw new AssertionError("peer never bound port " + port);
    }

    private static void assertVerified(String report, long bytes) {
        String compact = report.replace(" ", "");
        assertTrue(compact.contains("\"verified\":true"), report);
        assertTrue(compact.contains("\"bytes\":" + bytes), report);
    }

    /** Our stream client sends to a server; the server verifies. */
    private static void streamToServer(List<String> serverCmd, int port) throws Exception {
        try (Peer server = new Peer(serverCmd)) {
            awaitBound(server, port);
            try (UdtSocket c = new UdtSocket()) {
                c.connect(new InetSocketAddress("127.0.0.1", port), 5000);
                TestSupport.writePattern(c.getOutputStream(), BYTES, 1 << 16);
            }
            assertVerified(server.finish(), BYTES);
        }
    }

    /** A client sends to our stream server; we verify. */
    private static void streamFromClient(Path bin, List<String> extra) throws Exception {
        try (UdtServerSocket l = TestSupport.server(UdtSocketType.STREAM)) {
            l.setSoTimeout(10_000);
            List<String> cmd = new ArrayList<>(List.of(bin.toString()));
            cmd.addAll(extra);
            cmd.add("127.0.0.1:" + l.getLocalSocketAddress().getPort());
            cmd.addAll(List.of("--bytes", String.valueOf(BYTES)));
            try (Peer client = new Peer(cmd); UdtSocket s = l.accept()) {
                assertEquals(BYTES, TestSupport.readVerified(s.getInputStream()));
                client.finish();
            }
        }
    }

    @Test
    void streamToUdtPerfServer() throws Exception {
        Path udt = binary("udt.cli");
        int port = freePort();
        streamToServer(List.of(udt.toString(), "perf", "server", "--port", String.valueOf(port),
                "--bind", "127.0.0.1", "--once", "--json", "--interval", "0"), port);
    }

    @Test
    void streamFromUdtPerfClient() throws Exception {
        streamFromClient(binary("udt.cli"), List.of("perf", "client", "--json", "--interval", "0"));
    }

    @Test
    void streamToUdt4Server() throws Exception {
        Path peer = binary("udt4.peer");
        int port = freePort();
        streamToServer(List.of(peer.toString(), "server", "--port", String.valueOf(port), "--bind",
                "127.0.0.1", "--once", "--bytes", String.valueOf(BYTES), "--timeout", "50"), port);
    }

    @Test
    void streamFromUdt4Client() throws Exception {
        streamFromClient(binary("udt4.peer"), List.of("client", "--timeout", "50"));
    }

    /** Message k's size with the peer's --vary-sizes: 1 + (k·2654435761 mod max). */
    private static int varied(long k, int max) {
        return (int) (1 + (k * 2654435761L % max));
    }

    @Test
    void messagesToUdt4ServerKeepTheirBoundaries() throws Exception {
        Path peer = binary("udt4.peer");
        int port = freePort();
        final int max = 20_000;
        final long total = 8L << 20;
        try (Peer server = new Peer(List.of(peer.toString(), "server", "--port", String.valueOf(port),
                "--bind", "127.0.0.1", "--once", "--mode", "message", "--bytes", String.valueOf(total),
                "--msg-size", String.valueOf(max), "--vary-sizes", "--inorder", "--timeout", "50"))) {
            awaitBound(server, port);
            try (UdtSocket c = new UdtSocket(UdtSocketType.MESSAGE)) {
                c.connect(new InetSocketAddress("127.0.0.1", port), 5000);
                long at = 0;
                for (long k = 0; at < total; k++) {
                    int n = (int) Math.min(varied(k, max), total - at);
                    byte[] m = TestSupport.patternBytes(at, n);
                    c.sendMessage(m, 0, n, -1, true);
                    at += n;
                }
            }
            String report = server.finish();
            assertVerified(report, total);
        }
    }

    @Test
    void messagesFromUdt4ClientKeepTheirBoundaries() throws Exception {
        Path peer = binary("udt4.peer");
        final int max = 20_000;
        final long total = 8L << 20;
        try (UdtServerSocket l = new UdtServerSocket(true)) {
            l.bind(TestSupport.loopback());
            l.setSoTimeout(10_000);
            try (Peer client = new Peer(List.of(peer.toString(), "client",
                    "127.0.0.1:" + l.getLocalSocketAddress().getPort(), "--mode", "message",
                    "--bytes", String.valueOf(total), "--msg-size", String.valueOf(max), "--vary-sizes",
                    "--inorder", "--timeout", "50"));
                    UdtSocket s = l.accept()) {
                byte[] buf = new byte[max];
                long at = 0;
                for (long k = 0; at < total; k++) {
                    int want = (int) Math.min(varied(k, max), total - at);
                    int n = s.receiveMessage(buf);
                    assertEquals(want, n, "message " + k);
                    assertArrayEquals(TestSupport.patternBytes(at, n), Arrays.copyOf(buf, n), "message " + k);
                    at += n;
                }
                assertEquals(total, at);
                client.finish();
            }
        }
    }
}
