package net.udt;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.ref.Reference;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.file.Path;
import java.util.Objects;

/**
 * A UDT socket that connects to a {@link UdtServerSocket} (or any UDT4 listener), in the
 * manner of {@link java.net.Socket}: {@link #connect}, then {@link #getInputStream()} /
 * {@link #getOutputStream()} for a {@link UdtSocketType#STREAM stream} socket, or
 * {@link #sendMessage} / {@link #receiveMessage} for a {@link UdtSocketType#MESSAGE message}
 * socket; {@link #sendFile} / {@link #receiveFile} move files on stream sockets.
 *
 * <p>Thread safety: every method may be called from any thread, and blocking calls hold no
 * lock, so one thread may read while another writes, and threads using other sockets are
 * never held up. {@link #close()} from any thread makes calls blocked on this socket fail
 * with {@link UdtException#EINVSOCK}. A blocked call is not woken by
 * {@link Thread#interrupt()}: close the socket, or use {@link #setSoTimeout}.
 *
 * <p>Errors are {@link UdtException}s with UDT4's code; timeouts are
 * {@link UdtTimeoutException}s ({@link java.net.SocketTimeoutException}). A socket that is
 * never closed is closed once it becomes unreachable, but close it yourself
 * (try-with-resources): that is when queued data gets its chance to be delivered.
 */
public final class UdtSocket implements AutoCloseable {
    private final Handle handle;
    private final UdtSocketType type;
    private final boolean ipv6;
    private final InputStream in;
    private final OutputStream out;

    /** A new IPv4 stream socket, not yet connected. */
    public UdtSocket() {
        this(UdtSocketType.STREAM, StandardProtocolFamily.INET);
    }

    /**
     * A new IPv4 socket of {@code type}.
     *
     * @param type stream or message
     */
    public UdtSocket(UdtSocketType type) {
        this(type, StandardProtocolFamily.INET);
    }

    /**
     * A new socket of {@code type} and IP version {@code family}. An IPv6 socket also reaches
     * IPv4 peers (through IPv4-mapped addresses).
     *
     * @param type stream or message
     * @param family {@link StandardProtocolFamily#INET} or {@link StandardProtocolFamily#INET6}
     */
    public UdtSocket(UdtSocketType type, StandardProtocolFamily family) {
        Objects.requireNonNull(type, "type is null");
        Objects.requireNonNull(family, "family is null");
        if (family == StandardProtocolFamily.UNIX) {
            throw new IllegalArgumentException("UDT runs over UDP: INET or INET6 only");
        }
        this.type = type;
        this.ipv6 = family == StandardProtocolFamily.INET6;
        this.handle = new Handle(this, Native.create(type == UdtSocketType.MESSAGE, ipv6));
        this.in = new UdtInputStream(this);
        this.out = new UdtOutputStream(this);
    }

    /** An accepted connection, already in the handle table as {@code id}. */
    UdtSocket(long id, UdtSocketType type, boolean ipv6) {
        this.type = type;
        this.ipv6 = ipv6;
        this.handle = new Handle(this, id);
        this.in = new UdtInputStream(this);
        this.out = new UdtOutputStream(this);
    }

    /**
     * The socket's type.
     *
     * @return stream or message
     */
    public UdtSocketType getType() {
        return type;
    }

    /**
     * Binds the socket to a local address before connecting (needed for rendezvous, see
     * {@link UdtOption#UDT_RENDEZVOUS}); {@code connect} otherwise binds an ephemeral port.
     *
     * @param local the address; port 0 picks a free port; {@code null} binds the wildcard
     *     address and a free port
     * @throws IOException {@link UdtException#EBOUNDSOCK} if already bound,
     *     {@link UdtException#ESOCKFAIL} if the address is in use,
     *     {@link UdtException#EINVPARAM} for an address of the other family or unresolved
     */
    public void bind(InetSocketAddress local) throws IOException {
        InetSocketAddress a = local == null ? Addresses.wildcard(ipv6) : Addresses.check(local, "local address");
        try {
            Native.bind(handle.id, Addresses.raw(a, ipv6), a.getPort());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Connects to a UDT listener, waiting for the handshake (UDT gives up after 3 s without
     * an answer).
     *
     * @param remote the listener's address
     * @throws IOException {@link UdtTimeoutException} (code {@link UdtException#ENOSERVER})
     *     when nobody answers, {@link UdtException#ECONNREJ} when the listener refuses,
     *     {@link UdtException#EINVPARAM} for a bad address
     */
    public void connect(InetSocketAddress remote) throws IOException {
        connect(remote, 0);
    }

    /**
     * Connects to a UDT listener, waiting at most {@code timeoutMs} for the handshake. After
     * a failed connect the socket stays bound to its port and may connect again (as in UDT4).
     *
     * @param remote the listener's address
     * @param timeoutMs milliseconds to wait; 0 waits until UDT itself gives up (3 s)
     * @throws IOException {@link UdtTimeoutException} on timeout, and as {@link #connect(InetSocketAddress)}
     */
    public void connect(InetSocketAddress remote, int timeoutMs) throws IOException {
        InetSocketAddress a = Addresses.check(remote, "remote address");
        if (timeoutMs < 0) {
            throw new IllegalArgumentException("timeout must not be negative");
        }
        try {
            Native.connect(handle.id, Addresses.raw(a, ipv6), a.getPort(), timeoutMs);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The stream of bytes from the peer (stream sockets). {@code read} returns -1 once the
     * peer has closed and everything was read; closing the stream closes the socket.
     *
     * @return the same stream on every call
     * @throws IOException if the socket is closed
     */
    public InputStream getInputStream() throws IOException {
        ensureOpen();
        return in;
    }

    /**
     * The stream of bytes to the peer (stream sockets). {@code write} returns once the bytes
     * are in UDT's send buffer; {@code flush} has nothing to do (UDT sends at once); closing
     * the stream closes the socket.
     *
     * @return the same stream on every call
     * @throws IOException if the socket is closed
     */
    public OutputStream getOutputStream() throws IOException {
        ensureOpen();
        return out;
    }

    /**
     * Sets how long a receive ({@code read}, {@link #receiveMessage}, {@link #receiveFile})
     * waits before it throws {@link UdtTimeoutException}; the socket stays usable.
     * ({@link UdtOption#UDT_RCVTIMEO} with {@code java.net}'s convention for 0.)
     *
     * @param timeoutMs milliseconds; 0 waits forever
     * @throws IOException if the socket is closed
     */
    public void setSoTimeout(int timeoutMs) throws IOException {
        if (timeoutMs < 0) {
            throw new IllegalArgumentException("timeout must not be negative");
        }
        setOption(UdtOption.UDT_RCVTIMEO, timeoutMs == 0 ? -1 : timeoutMs);
    }

    /**
     * The receive timeout set by {@link #setSoTimeout}.
     *
     * @return milliseconds; 0 means none
     * @throws IOException if the socket is closed
     */
    public int getSoTimeout() throws IOException {
        int t = (Integer) getOption(UdtOption.UDT_RCVTIMEO);
        return t < 0 ? 0 : t;
    }

    /**
     * Sends {@code data} as one message (message sockets): the peer receives it whole or not
     * at all. Blocks while the send buffer has no room for it.
     *
     * @param data the array holding the message
     * @param off where the message starts in {@code data}
     * @param len the message's length
     * @param ttlMs drop the message if it is not delivered within this many milliseconds;
     *     negative: never drop it (reliable)
     * @param inOrder deliver it only after every message sent before it
     * @return {@code len}
     * @throws IOException {@link UdtException#ESTREAMILL} on a stream socket,
     *     {@link UdtException#ELARGEMSG} if larger than the send buffer
     */
    public int sendMessage(byte[] data, int off, int len, int ttlMs, boolean inOrder) throws IOException {
        Objects.checkFromIndexSize(off, len, Objects.requireNonNull(data, "data is null").length);
        try {
            return Native.sendMessage(handle.id, data, off, len, ttlMs, inOrder);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Sends all of {@code data} as one reliable, in-order message.
     *
     * @param data the message
     * @return its length
     * @throws IOException as {@link #sendMessage(byte[], int, int, int, boolean)}
     */
    public int sendMessage(byte[] data) throws IOException {
        return sendMessage(data, 0, Objects.requireNonNull(data, "data is null").length, -1, true);
    }

    /**
     * Receives the next message into {@code buf} (message sockets). A message longer than
     * {@code buf} is cut and its rest discarded, as UDT4's {@code recvmsg} does.
     *
     * @param buf where to put it
     * @return the number of bytes stored
     * @throws IOException {@link UdtTimeoutException} after {@link #setSoTimeout},
     *     {@link UdtException#ECONNLOST} once the peer has closed and no message is left
     */
    public int receiveMessage(byte[] buf) throws IOException {
        return receiveMessage(buf, 0, Objects.requireNonNull(buf, "buffer is null").length);
    }

    /**
     * Receives the next message into {@code buf[off..off+len)}; see {@link #receiveMessage(byte[])}.
     *
     * @param buf the array
     * @param off where to start storing
     * @param len room available
     * @return the number of bytes stored
     * @throws IOException as {@link #receiveMessage(byte[])}
     */
    public int receiveMessage(byte[] buf, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, Objects.requireNonNull(buf, "buffer is null").length);
        try {
            return Native.receiveMessage(handle.id, buf, off, len);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Sends {@code size} bytes of the file at {@code path}, from {@code offset} (UDT4's
     * {@code sendfile}; stream sockets). The peer receives them as stream bytes, e.g. with
     * {@link #receiveFile}.
     *
     * @param path the file
     * @param offset where to start in the file
     * @param size how many bytes to send
     * @return bytes sent
     * @throws IOException {@link UdtException#EFILE} if the file cannot be read
     */
    public long sendFile(Path path, long offset, long size) throws IOException {
        Objects.requireNonNull(path, "path is null");
        try {
            return Native.sendFile(handle.id, path.toString(), offset, size);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Receives {@code size} stream bytes into the file at {@code path}, writing from
     * {@code offset} (UDT4's {@code recvfile}). The file is created if missing and not
     * truncated.
     *
     * @param path the file
     * @param offset where to start writing
     * @param size how many bytes to receive
     * @return bytes written
     * @throws IOException {@link UdtException#EFILE} if the file cannot be written,
     *     {@link UdtException#ECONNLOST} if the connection ends first
     */
    public long receiveFile(Path path, long offset, long size) throws IOException {
        Objects.requireNonNull(path, "path is null");
        try {
            return Native.receiveFile(handle.id, path.toString(), offset, size);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Sets a UDT4 option (UDT4's {@code setsockopt}).
     *
     * @param option which
     * @param value a value of {@link UdtOption#valueType()}
     * @throws IOException {@link UdtException#EINVPARAM} for a bad value or type, and the
     *     codes {@link UdtOption} lists for an option set at the wrong time
     */
    public void setOption(UdtOption option, Object value) throws IOException {
        try {
            Options.set(handle.id, option, value);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Reads a UDT4 option (UDT4's {@code getsockopt}).
     *
     * @param option which
     * @return its value, of {@link UdtOption#valueType()}
     * @throws IOException {@link UdtException#EINVOP} for the options 4.11 never implemented,
     *     {@link UdtException#EINVSOCK} if the socket is closed
     */
    public Object getOption(UdtOption option) throws IOException {
        try {
            return Options.get(handle.id, option);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The connection's performance counters (UDT4's {@code perfmon}).
     *
     * @param clear start a new interval for the non-total counters
     * @return the counters
     * @throws IOException {@link UdtException#ENOCONN} if not connected
     */
    public PerfStats perfmon(boolean clear) throws IOException {
        long[] l = new long[PerfStats.LONGS];
        double[] r = new double[PerfStats.REALS];
        try {
            Native.perfmon(handle.id, clear, l, r);
        } finally {
            Reference.reachabilityFence(this);
        }
        return PerfStats.of(l, r);
    }

    /**
     * The local address, as {@link java.net.Socket#getLocalSocketAddress()}.
     *
     * @return the address, or {@code null} if the socket is not bound or is closed
     */
    public InetSocketAddress getLocalSocketAddress() {
        try {
            return Addresses.decode(Native.localAddress(handle.id));
        } catch (IOException e) {
            return null;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The peer's address, as {@link java.net.Socket#getRemoteSocketAddress()}.
     *
     * @return the address, or {@code null} if the socket is not connected or is closed
     */
    public InetSocketAddress getRemoteSocketAddress() {
        try {
            return Addresses.decode(Native.peerAddress(handle.id));
        } catch (IOException e) {
            return null;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Whether the handshake has completed and the connection has not ended (UDT4 state
     * {@code CONNECTED}).
     *
     * @return true while connected
     */
    public boolean isConnected() {
        try {
            return Native.status(handle.id) == 5;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Whether {@link #close()} was called.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return handle.isClosed();
    }

    /**
     * Closes the socket; calls blocked on it fail with {@link UdtException#EINVSOCK}. Queued
     * data is still delivered for up to {@link UdtOption#UDT_LINGER} seconds; in blocking
     * send mode close waits for that. Closing again does nothing.
     *
     * @throws IOException if the native close fails
     */
    @Override
    public void close() throws IOException {
        handle.close();
    }

    @Override
    public String toString() {
        return "UdtSocket[" + type + ", local=" + getLocalSocketAddress() + ", remote="
                + getRemoteSocketAddress() + "]";
    }

    private void ensureOpen() throws UdtException {
        if (handle.isClosed()) {
            throw new UdtException(UdtException.EINVSOCK, "socket is closed");
        }
    }

    /** One stream receive, for {@link UdtInputStream}. */
    int recv(byte[] b, int off, int len) throws IOException {
        try {
            return Native.recv(handle.id, b, off, len);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** One stream send, for {@link UdtOutputStream}: returns how many bytes were queued. */
    int send(byte[] b, int off, int len) throws IOException {
        try {
            return Native.send(handle.id, b, off, len);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * For {@link UdtInputStream#available()}: 1 while a read would not block (UDT4's
     * {@code UDT_EPOLL_IN} in {@link UdtOption#UDT_EVENT}), else 0. Not a byte count:
     * {@code UDT_RCVDATA} is kept in whole packets and counts acknowledged data only.
     */
    int available() throws IOException {
        return ((Integer) getOption(UdtOption.UDT_EVENT) & 1) != 0 ? 1 : 0;
    }
}
