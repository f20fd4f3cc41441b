package net.udt;

import java.net.SocketTimeoutException;

/**
 * A blocking UDT call ran out of time: a receive or accept past {@link UdtSocket#setSoTimeout},
 * a connect past its timeout, a send past {@link UdtOption#UDT_SNDTIMEO}. It is a
 * {@link SocketTimeoutException}, as {@code java.net} code expects, and carries UDT4's code:
 * {@link UdtException#ETIMEOUT} (6003), or {@link UdtException#ENOSERVER} (1001) when no
 * server answered the handshake. The socket stays usable after a receive timeout.
 */
public class UdtTimeoutException extends SocketTimeoutException {
    private static final long serialVersionUID = 1L;

    /** UDT4's error code. */
    private final int errorCode;

    /**
     * A timeout with UDT4 error code {@code errorCode}.
     *
     * @param errorCode UDT4's code, 6003 or 1001
     * @param message what timed out
     */
    public UdtTimeoutException(int errorCode, String message) {
        super(message + " (UDT error " + errorCode + ")");
        this.errorCode = errorCode;
    }

    /**
     * UDT4's error code of this timeout.
     *
     * @return {@link UdtException#ETIMEOUT} or {@link UdtException#ENOSERVER}
     */
    public int getErrorCode() {
        return errorCode;
    }
}
