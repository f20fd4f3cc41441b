package net.udt;

import java.io.IOException;

/**
 * The JNI entry points of the native library ({@code bindings/java/native}), one per
 * {@code udt::BsdSocket} operation. A socket is named by an opaque id into the library's
 * handle table; a closed socket's id fails with {@link UdtException#EINVSOCK}. Failures are
 * thrown as {@link UdtException} / {@link UdtTimeoutException} (hence {@code throws
 * IOException}: without it Java would not let callers catch them). Package-private: the public
 * classes check arguments before calling here (the library checks them again).
 */
final class Native {
    static {
        NativeLoader.load();
    }

    private Native() {}

    /** Cannot fail (only a panic, thrown undeclared as UdtException -1): constructors stay unchecked. */
    static native long create(boolean message, boolean ipv6);

    static native void bind(long id, byte[] addr, int port) throws IOException;

    static native void listen(long id, int backlog) throws IOException;

    static native long accept(long id, int timeoutMs) throws IOException;

    static native void connect(long id, byte[] addr, int port, int timeoutMs) throws IOException;

    static native void close(long id) throws IOException;

    static native byte[] localAddress(long id) throws IOException;

    static native byte[] peerAddress(long id) throws IOException;

    /** Cannot fail: a dead id is state 9 ({@code NONEXIST}). */
    static native int status(long id);

    static native int send(long id, byte[] buf, int off, int len) throws IOException;

    static native int recv(long id, byte[] buf, int off, int len) throws IOException;

    static native int sendMessage(long id, byte[] buf, int off, int len, int ttlMs, boolean inOrder) throws IOException;

    static native int receiveMessage(long id, byte[] buf, int off, int len) throws IOException;

    static native long sendFile(long id, String path, long offset, long size) throws IOException;

    static native long receiveFile(long id, String path, long offset, long size) throws IOException;

    static native void setInt(long id, int opt, int value) throws IOException;

    static native void setLong(long id, int opt, long value) throws IOException;

    static native void setBool(long id, int opt, boolean value) throws IOException;

    static native void setLinger(long id, int seconds) throws IOException;

    static native void setCc(long id, String name) throws IOException;

    static native int getInt(long id, int opt) throws IOException;

    static native long getLong(long id, int opt) throws IOException;

    static native boolean getBool(long id, int opt) throws IOException;

    static native int getLinger(long id) throws IOException;

    static native String getCc(long id) throws IOException;

    static native void perfmon(long id, boolean clear, long[] longs, double[] reals) throws IOException;
}
