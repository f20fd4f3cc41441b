package net.udt;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Objects;

/**
 * {@link UdtSocket#getOutputStream()}: {@code write} loops over UDT4 {@code send} calls
 * until every byte is in the send buffer, blocking while it is full.
 */
final class UdtOutputStream extends OutputStream {
    private final UdtSocket socket;

    UdtOutputStream(UdtSocket socket) {
        this.socket = socket;
    }

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, Objects.requireNonNull(b, "buffer is null").length);
        while (len > 0) {
            int n = socket.send(b, off, len);
            off += n;
            len -= n;
        }
    }

    /** Nothing to do: UDT sends queued bytes as soon as congestion control allows. */
    @Override
    public void flush() {}

    /** Closes the socket, as {@code java.net.Socket}'s streams do. */
    @Override
    public void close() throws IOException {
        socket.close();
    }
}
