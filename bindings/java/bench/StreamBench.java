import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.Arrays;
import net.udt.UdtServerSocket;
import net.udt.UdtSocket;

/**
 * Stream throughput through the Java binding, in the shape of `udt perf`: `server PORT`
 * receives one connection and checks every byte (byte i is i mod 251, as `udt perf` sends
 * it); `client HOST:PORT BYTES` sends. Either side works against `udt perf`. Writes are 1 MiB
 * and reads 8 MiB, as `udt perf` does.
 */
public class StreamBench {
    static byte[] table(int len) {
        byte[] t = new byte[len + 251];
        for (int i = 0; i < t.length; i++) {
            t[i] = (byte) (i % 251);
        }
        return t;
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 2 && args[0].equals("server")) {
            server(Integer.parseInt(args[1]));
        } else if (args.length >= 3 && args[0].equals("client")) {
            int colon = args[1].lastIndexOf(':');
            client(new InetSocketAddress(args[1].substring(0, colon), Integer.parseInt(args[1].substring(colon + 1))),
                    Long.parseLong(args[2]));
        } else {
            System.err.println("usage: StreamBench server PORT | client HOST:PORT BYTES");
            System.exit(64);
        }
    }

    static void server(int port) throws Exception {
        final int check = 1 << 20;
        byte[] t = table(check);
        byte[] buf = new byte[8 << 20];
        try (UdtServerSocket l = new UdtServerSocket()) {
            l.bind(new InetSocketAddress("127.0.0.1", port));
            System.out.println("{\"event\":\"listening\",\"port\":" + l.getLocalSocketAddress().getPort() + "}");
            try (UdtSocket s = l.accept()) {
                long t0 = System.nanoTime();
                InputStream in = s.getInputStream();
                long got = 0;
                long bad = 0;
                int n;
                while ((n = in.read(buf)) > 0) {
                    for (int at = 0; at < n; at += check) {
                        int len = Math.min(check, n - at);
                        int from = (int) ((got + at) % 251);
                        if (Arrays.mismatch(buf, at, at + len, t, from, from + len) >= 0) {
                            for (int i = 0; i < len; i++) {
                                bad += buf[at + i] != t[from + i] ? 1 : 0;
                            }
                        }
                    }
                    got += n;
                }
                double sec = (System.nanoTime() - t0) / 1e9;
                System.out.printf("{\"role\":\"server\",\"bytes\":%d,\"seconds\":%.3f,\"mbps\":%.1f,\"verified\":%b}%n",
                        got, sec, got * 8 / sec / 1e6, bad == 0);
                if (bad != 0) {
                    System.exit(1);
                }
            }
        }
    }

    static void client(InetSocketAddress to, long bytes) throws Exception {
        final int chunk = 1 << 20;
        byte[] t = table(chunk);
        long t0 = System.nanoTime();
        try (UdtSocket c = new UdtSocket()) {
            c.connect(to, 5000);
            OutputStream out = c.getOutputStream();
            long off = 0;
            while (off < bytes) {
                int n = (int) Math.min(chunk, bytes - off);
                out.write(t, (int) (off % 251), n);
                off += n;
            }
        }
        double sec = (System.nanoTime() - t0) / 1e9;
        System.out.printf("{\"role\":\"client\",\"bytes\":%d,\"seconds\":%.3f,\"mbps\":%.1f}%n",
                bytes, sec, bytes * 8 / sec / 1e6);
    }
}
