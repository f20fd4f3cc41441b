package net.udt;

/**
 * UDT4's socket options ({@code UDTOpt} in 4.11's {@code udt.h}), numbered as UDT4 numbers
 * them, for {@link UdtSocket#setOption} and {@link UdtSocket#getOption} (and the same on
 * {@link UdtServerSocket}, whose accepted sockets inherit its options).
 *
 * <p>Each option takes values of one Java type, {@link #valueType()}: {@code Integer},
 * {@code Boolean}, {@code Long} or {@code String}. When an option may change, and which error
 * a misuse gets, follows 4.11: {@link UdtException#EBOUNDSOCK} for options that must be set
 * before binding, {@link UdtException#ECONNSOCK} for ones set too late after connecting,
 * {@link UdtException#EINVPARAM} for a bad value or a value of the wrong type,
 * {@link UdtException#EINVOP} for read-only options and the two 4.11 never implemented.
 */
public enum UdtOption {
    /** Maximum segment size, bytes including IP and UDP headers (76…65535; before bind). */
    UDT_MSS(0, Kind.INT),
    /** Sends block (default true); false makes a full send fail with {@code EASYNCSND}. */
    UDT_SNDSYN(1, Kind.BOOL),
    /** Receives, accept and connect block (default true). */
    UDT_RCVSYN(2, Kind.BOOL),
    /** Congestion control, by algorithm name ({@code "udt"}, {@code "udt4"}, …; before connecting). */
    UDT_CC(3, Kind.CC),
    /** Flight flag size: the largest flow window, packets (before connecting). */
    UDT_FC(4, Kind.INT),
    /** Send buffer, bytes (before bind). */
    UDT_SNDBUF(5, Kind.INT),
    /** Receive buffer, bytes (before bind). */
    UDT_RCVBUF(6, Kind.INT),
    /**
     * How long {@code close()} keeps delivering queued data, whole seconds; a negative value
     * turns lingering off (close abandons unsent data). As {@code java.net}'s
     * {@code SO_LINGER}, read back as -1 when off.
     */
    UDT_LINGER(7, Kind.LINGER),
    /** Kernel send buffer of the UDP socket, bytes (before bind). */
    UDP_SNDBUF(8, Kind.INT),
    /** Kernel receive buffer of the UDP socket, bytes (before bind). */
    UDP_RCVBUF(9, Kind.INT),
    /** Declared by 4.11 but not implemented there: refused with {@code EINVOP}, as 4.11 does. */
    UDT_MAXMSG(10, Kind.INT),
    /** Declared by 4.11 but not implemented there: refused with {@code EINVOP}, as 4.11 does. */
    UDT_MSGTTL(11, Kind.INT),
    /** Connect in rendezvous mode (before connecting; the socket must be bound first). */
    UDT_RENDEZVOUS(12, Kind.BOOL),
    /** Send timeout, milliseconds; -1 waits forever (the default). */
    UDT_SNDTIMEO(13, Kind.INT),
    /** Receive timeout, milliseconds; -1 waits forever (see also {@link UdtSocket#setSoTimeout}). */
    UDT_RCVTIMEO(14, Kind.INT),
    /** Share a UDP port with this process's other UDT sockets (default true; before bind). */
    UDT_REUSEADDR(15, Kind.BOOL),
    /** Largest sending rate, bytes per second; -1 is unlimited. */
    UDT_MAXBW(16, Kind.LONG),
    /** Read only: UDT4's socket state ({@code UDTSTATUS}: 1 INIT … 5 CONNECTED … 8 CLOSED). */
    UDT_STATE(17, Kind.INT),
    /** Read only: readiness as UDT4's epoll bits (1 IN, 4 OUT, 8 ERR). */
    UDT_EVENT(18, Kind.INT),
    /** Read only: packets in the send buffer. */
    UDT_SNDDATA(19, Kind.INT),
    /** Read only: bytes waiting in the receive buffer. */
    UDT_RCVDATA(20, Kind.INT);

    /** How the value crosses to the native layer (which typed entry point). */
    enum Kind {
        INT(Integer.class),
        BOOL(Boolean.class),
        LONG(Long.class),
        LINGER(Integer.class),
        CC(String.class);

        final Class<?> type;

        Kind(Class<?> type) {
            this.type = type;
        }
    }

    private final int number;
    private final Kind kind;

    UdtOption(int number, Kind kind) {
        this.number = number;
        this.kind = kind;
    }

    /**
     * UDT4's number of this option.
     *
     * @return the {@code UDTOpt} value
     */
    public int udt4Number() {
        return number;
    }

    /**
     * The Java type of this option's values.
     *
     * @return {@code Integer.class}, {@code Boolean.class}, {@code Long.class} or
     *     {@code String.class}
     */
    public Class<?> valueType() {
        return kind.type;
    }

    /**
     * Whether the option can only be read.
     *
     * @return true for {@link #UDT_STATE}, {@link #UDT_EVENT}, {@link #UDT_SNDDATA},
     *     {@link #UDT_RCVDATA}
     */
    public boolean isReadOnly() {
        return number >= UDT_STATE.number;
    }

    Kind kind() {
        return kind;
    }
}
