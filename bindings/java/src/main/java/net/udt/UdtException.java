package net.udt;

import java.io.IOException;

/**
 * A UDT socket operation failed; {@link #getErrorCode()} is UDT4's error code
 * ({@code CUDTException::getErrorCode()}: major × 1000 + minor), so code written against
 * UDT4's C++ API can be carried over. Timeouts are reported by {@link UdtTimeoutException}
 * instead, which is a {@link java.net.SocketTimeoutException}.
 */
public class UdtException extends IOException {
    private static final long serialVersionUID = 1L;

    /** Unknown error, also an internal failure of the native layer ({@code EUNKNOWN}). */
    public static final int EUNKNOWN = -1;
    /** Connection setup failed, e.g. closed while connecting ({@code ECONNSETUP}). */
    public static final int ECONNSETUP = 1000;
    /** No server answered the handshake in time ({@code ENOSERVER}). */
    public static final int ENOSERVER = 1001;
    /** The peer refused the connection, e.g. a listener of the other socket type ({@code ECONNREJ}). */
    public static final int ECONNREJ = 1002;
    /** The local address is in use ({@code ESOCKFAIL}). */
    public static final int ESOCKFAIL = 1003;
    /** The handshake failed its security check ({@code ESECFAIL}). */
    public static final int ESECFAIL = 1004;
    /** The connection was lost: the peer closed it or went silent ({@code ECONNLOST}). */
    public static final int ECONNLOST = 2001;
    /** The socket is not connected ({@code ENOCONN}). */
    public static final int ENOCONN = 2002;
    /** A system call failed ({@code ERESOURCE}). */
    public static final int ERESOURCE = 3000;
    /** Reading or writing a file failed ({@code EFILE}). */
    public static final int EFILE = 4000;
    /** The operation is not valid now ({@code EINVOP}). */
    public static final int EINVOP = 5000;
    /** The socket is already bound ({@code EBOUNDSOCK}). */
    public static final int EBOUNDSOCK = 5001;
    /** The socket is already connected or listening ({@code ECONNSOCK}). */
    public static final int ECONNSOCK = 5002;
    /** A bad argument: option value, address, offset ({@code EINVPARAM}). */
    public static final int EINVPARAM = 5003;
    /** The socket is closed or does not exist ({@code EINVSOCK}). */
    public static final int EINVSOCK = 5004;
    /** The socket is not bound ({@code EUNBOUNDSOCK}). */
    public static final int EUNBOUNDSOCK = 5005;
    /** The socket is not listening ({@code ENOLISTEN}). */
    public static final int ENOLISTEN = 5006;
    /** A rendezvous socket cannot listen ({@code ERDVNOSERV}). */
    public static final int ERDVNOSERV = 5007;
    /** A rendezvous connect needs a bound socket ({@code ERDVUNBOUND}). */
    public static final int ERDVUNBOUND = 5008;
    /** A message operation on a stream socket ({@code ESTREAMILL}). */
    public static final int ESTREAMILL = 5009;
    /** A stream operation on a message socket ({@code EDGRAMILL}). */
    public static final int EDGRAMILL = 5010;
    /** Another socket already listens on this port ({@code EDUPLISTEN}). */
    public static final int EDUPLISTEN = 5011;
    /** The message is larger than the send buffer ({@code ELARGEMSG}). */
    public static final int ELARGEMSG = 5012;
    /** Non-blocking send mode and the send would have to wait ({@code EASYNCSND}). */
    public static final int EASYNCSND = 6001;
    /** Non-blocking receive mode and the call would have to wait ({@code EASYNCRCV}). */
    public static final int EASYNCRCV = 6002;
    /** A blocking call timed out ({@code ETIMEOUT}); thrown as {@link UdtTimeoutException}. */
    public static final int ETIMEOUT = 6003;
    /** The peer reported an error ({@code EPEERERR}). */
    public static final int EPEERERR = 7000;

    /** UDT4's error code. */
    private final int errorCode;

    /**
     * An exception with UDT4 error code {@code errorCode}.
     *
     * @param errorCode UDT4's code (one of the constants of this class)
     * @param message what failed
     */
    public UdtException(int errorCode, String message) {
        super(message + " (UDT error " + errorCode + ")");
        this.errorCode = errorCode;
    }

    /**
     * UDT4's error code of this failure.
     *
     * @return the code, e.g. {@link #ECONNREJ}
     */
    public int getErrorCode() {
        return errorCode;
    }
}
