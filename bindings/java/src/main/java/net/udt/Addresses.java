package net.udt;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.Objects;

/** Conversions of socket addresses to and from the native layer's raw form. */
final class Addresses {
    private Addresses() {}

    /**
     * The address to pass down: it must be resolved, since the native layer does no name
     * lookups (a bad address is {@link UdtException#EINVPARAM}, as in UDT4).
     */
    static InetSocketAddress check(InetSocketAddress a, String what) throws UdtException {
        Objects.requireNonNull(a, what + " is null");
        if (a.isUnresolved()) {
            throw new UdtException(UdtException.EINVPARAM, "unresolved address " + a.getHostString());
        }
        return a;
    }

    /** The wildcard address of the socket's family, any port: what {@code bind(null)} binds. */
    static InetSocketAddress wildcard(boolean ipv6) {
        return new InetSocketAddress(ipv6 ? "::" : "0.0.0.0", 0);
    }

    /** Address bytes followed by the big-endian port, as the native layer returns them. */
    static InetSocketAddress decode(byte[] raw) {
        if (raw == null || (raw.length != 6 && raw.length != 18)) {
            return null;
        }
        int n = raw.length - 2;
        int port = ((raw[n] & 0xff) << 8) | (raw[n + 1] & 0xff);
        try {
            return new InetSocketAddress(InetAddress.getByAddress(Arrays.copyOf(raw, n)), port);
        } catch (UnknownHostException e) {
            return null; // Unreachable: 4 or 16 bytes are always a valid address.
        }
    }

    /** True for an IPv6 address. */
    static boolean isV6(InetSocketAddress a) {
        return a.getAddress() instanceof Inet6Address;
    }

    /**
     * The raw bytes of {@code a}'s IP address for a socket of the given family: an IPv6
     * socket reaches IPv4 peers through IPv4-mapped addresses ({@code ::ffff:a.b.c.d}), which
     * Java represents as plain IPv4 addresses.
     */
    static byte[] raw(InetSocketAddress a, boolean ipv6) {
        byte[] b = a.getAddress().getAddress();
        if (ipv6 && b.length == 4) {
            byte[] mapped = new byte[16];
            mapped[10] = (byte) 0xff;
            mapped[11] = (byte) 0xff;
            System.arraycopy(b, 0, mapped, 12, 4);
            return mapped;
        }
        return b;
    }
}
