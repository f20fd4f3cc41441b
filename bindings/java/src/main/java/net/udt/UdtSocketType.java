package net.udt;

/** The two kinds of UDT socket (UDT4's {@code SOCK_STREAM} and {@code SOCK_DGRAM}). */
public enum UdtSocketType {
    /** A reliable byte stream, read and written through the socket's streams. */
    STREAM,
    /**
     * Whole messages ({@link UdtSocket#sendMessage}, {@link UdtSocket#receiveMessage}), each
     * delivered complete or not at all, optionally with a time to live and out of order.
     */
    MESSAGE
}
