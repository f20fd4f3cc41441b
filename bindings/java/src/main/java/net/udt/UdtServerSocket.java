package net.udt;

import java.io.IOException;
import java.lang.ref.Reference;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.util.Objects;

/**
 * A UDT listener, in the manner of {@link java.net.ServerSocket}: {@link #bind}, then
 * {@link #accept()} connections from {@link UdtSocket}s (or UDT4 clients) of the same
 * {@link UdtSocketType type}; a client of the other type is refused
 * ({@link UdtException#ECONNREJ} on its side). Options set here ({@link #setOption}) are
 * inherited by the accepted sockets.
 *
 * <p>Thread safety: any thread may call any method; {@link #close()} wakes threads blocked
 * in {@link #accept()}, which then fail with {@link UdtException#EINVSOCK}.
 */
public final class UdtServerSocket implements AutoCloseable {
    /** The backlog of {@link #bind(InetSocketAddress)}, as {@code java.net.ServerSocket}'s. */
    public static final int DEFAULT_BACKLOG = 50;

    private final Handle handle;
    private final UdtSocketType type;
    private final boolean ipv6;
    private volatile int acceptTimeoutMs;

    /** A new IPv4 listener for stream sockets. */
    public UdtServerSocket() {
        this(UdtSocketType.STREAM, StandardProtocolFamily.INET);
    }

    /**
     * A new IPv4 listener.
     *
     * @param messageMode true to accept message sockets, false for stream sockets
     */
    public UdtServerSocket(boolean messageMode) {
        this(messageMode ? UdtSocketType.MESSAGE : UdtSocketType.STREAM, StandardProtocolFamily.INET);
    }

    /**
     * A new IPv4 listener for sockets of {@code type}.
     *
     * @param type stream or message
     */
    public UdtServerSocket(UdtSocketType type) {
        this(type, StandardProtocolFamily.INET);
    }

    /**
     * A new listener for sockets of {@code type} and IP version {@code family}.
     *
     * @param type stream or message
     * @param family {@link StandardProtocolFamily#INET} or {@link StandardProtocolFamily#INET6}
     */
    public UdtServerSocket(UdtSocketType type, StandardProtocolFamily family) {
        Objects.requireNonNull(type, "type is null");
        Objects.requireNonNull(family, "family is null");
        if (family == StandardProtocolFamily.UNIX) {
            throw new IllegalArgumentException("UDT runs over UDP: INET or INET6 only");
        }
        this.type = type;
        this.ipv6 = family == StandardProtocolFamily.INET6;
        this.handle = new Handle(this, Native.create(type == UdtSocketType.MESSAGE, ipv6));
    }

    /**
     * The type of socket this listener accepts.
     *
     * @return stream or message
     */
    public UdtSocketType getType() {
        return type;
    }

    /**
     * Binds and listens with a backlog of {@link #DEFAULT_BACKLOG}.
     *
     * @param local the address; port 0 picks a free port; {@code null} binds the wildcard
     *     address and a free port
     * @throws IOException as {@link #bind(InetSocketAddress, int)}
     */
    public void bind(InetSocketAddress local) throws IOException {
        bind(local, DEFAULT_BACKLOG);
    }

    /**
     * Binds to {@code local} and listens (UDT4's {@code bind} then {@code listen}).
     *
     * @param local the address; port 0 picks a free port; {@code null} binds the wildcard
     *     address and a free port
     * @param backlog connections queued before {@link #accept()} takes them (below 1: 1)
     * @throws IOException {@link UdtException#ESOCKFAIL} if the port is in use,
     *     {@link UdtException#EDUPLISTEN} if another UDT listener has it,
     *     {@link UdtException#EBOUNDSOCK} if already bound, {@link UdtException#EINVPARAM}
     *     for an address of the other family or unresolved
     */
    public void bind(InetSocketAddress local, int backlog) throws IOException {
        InetSocketAddress a = local == null ? Addresses.wildcard(ipv6) : Addresses.check(local, "local address");
        try {
            Native.bind(handle.id, Addresses.raw(a, ipv6), a.getPort());
            Native.listen(handle.id, backlog);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Waits for the next connection and returns it, at most {@link #setSoTimeout} long.
     *
     * @return the connected socket
     * @throws IOException {@link UdtTimeoutException} on timeout,
     *     {@link UdtException#ENOLISTEN} before {@link #bind}, {@link UdtException#EINVSOCK}
     *     once closed
     */
    public UdtSocket accept() throws IOException {
        try {
            long id = Native.accept(handle.id, acceptTimeoutMs);
            return new UdtSocket(id, type, ipv6);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Sets how long {@link #accept()} waits before it throws {@link UdtTimeoutException}.
     * Unlike {@link UdtOption#UDT_RCVTIMEO}, this is not inherited by the accepted sockets
     * (as with {@code java.net.ServerSocket}).
     *
     * @param timeoutMs milliseconds; 0 waits forever
     */
    public void setSoTimeout(int timeoutMs) {
        if (timeoutMs < 0) {
            throw new IllegalArgumentException("timeout must not be negative");
        }
        acceptTimeoutMs = timeoutMs;
    }

    /**
     * The accept timeout.
     *
     * @return milliseconds; 0 means none
     */
    public int getSoTimeout() {
        return acceptTimeoutMs;
    }

    /**
     * Sets a UDT4 option on the listener; accepted sockets inherit it.
     *
     * @param option which
     * @param value a value of {@link UdtOption#valueType()}
     * @throws IOException as {@link UdtSocket#setOption}
     */
    public void setOption(UdtOption option, Object value) throws IOException {
        try {
            Options.set(handle.id, option, value);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Reads a UDT4 option of the listener.
     *
     * @param option which
     * @return its value, of {@link UdtOption#valueType()}
     * @throws IOException as {@link UdtSocket#getOption}
     */
    public Object getOption(UdtOption option) throws IOException {
        try {
            return Options.get(handle.id, option);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The address listened on, as {@link java.net.ServerSocket#getLocalSocketAddress()}.
     *
     * @return the address, or {@code null} if not bound or closed
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
     * Whether {@link #close()} was called.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return handle.isClosed();
    }

    /**
     * Stops listening: connections not yet accepted are closed and threads blocked in
     * {@link #accept()} fail. Sockets already accepted stay open. Closing again does nothing.
     *
     * @throws IOException if the native close fails
     */
    @Override
    public void close() throws IOException {
        handle.close();
    }

    @Override
    public String toString() {
        return "UdtServerSocket[" + type + ", local=" + getLocalSocketAddress() + "]";
    }
}
