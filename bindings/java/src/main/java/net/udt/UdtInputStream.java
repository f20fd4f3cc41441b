package net.udt;

import java.io.IOException;
import java.io.InputStream;
import java.util.Objects;

/**
 * {@link UdtSocket#getInputStream()}: each {@code read} is one UDT4 {@code recv} (at most
 * 4 MiB), so a large buffer moves data in few native calls.
 */
final class UdtInputStream extends InputStream {
    private final UdtSocket socket;

    UdtInputStream(UdtSocket socket) {
        this.socket = socket;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, Objects.requireNonNull(b, "buffer is null").length);
        if (len == 0) {
            return 0;
        }
        return socket.recv(b, off, len);
    }

    /**
     * 1 when a read would return without blocking (data, or the end of the stream), else 0:
     * UDT does not report an exact byte count, and 1 honours {@link InputStream#available()}'s
     * contract of a lower bound.
     */
    @Override
    public int available() throws IOException {
        return socket.available();
    }

    /** Closes the socket, as {@code java.net.Socket}'s streams do. */
    @Override
    public void close() throws IOException {
        socket.close();
    }
}
