/**
 * UDT (UDP-based Data Transfer) sockets for Java, with the feel of {@link java.net.Socket}.
 *
 * <p>{@link net.udt.UdtServerSocket} listens and accepts, {@link net.udt.UdtSocket} connects
 * and carries a byte stream ({@link net.udt.UdtSocket#getInputStream()},
 * {@link net.udt.UdtSocket#getOutputStream()}), whole messages
 * ({@link net.udt.UdtSocket#sendMessage}) or files ({@link net.udt.UdtSocket#sendFile}).
 * {@link net.udt.UdtOption} names UDT4's socket options and {@link net.udt.PerfStats} its
 * performance counters. Errors are {@link net.udt.UdtException}s carrying UDT4's error
 * code; timeouts are {@link java.net.SocketTimeoutException}s
 * ({@link net.udt.UdtTimeoutException}).
 *
 * <p>The protocol runs in a native library (Rust, wire-compatible with UDT4 4.11) that the
 * jar carries and loads by itself; see {@code README.md} for the supported platforms.
 * Every class is safe for use by several threads: one may read while another writes, and
 * closing a socket from any thread wakes the calls blocked on it.
 */
package net.udt;
