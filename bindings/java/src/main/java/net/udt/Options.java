package net.udt;

import java.io.IOException;

import java.util.Objects;

/**
 * {@code setOption}/{@code getOption} of both socket classes: picks the native entry point by
 * the option's value type. Which values are valid, and when, is decided natively.
 */
final class Options {
    private Options() {}

    static void set(long id, UdtOption opt, Object value) throws IOException {
        Objects.requireNonNull(opt, "option is null");
        if (value == null) {
            throw new UdtException(UdtException.EINVPARAM, opt + " value is null");
        }
        switch (opt.kind()) {
            case INT -> Native.setInt(id, opt.udt4Number(), as(opt, value, Integer.class));
            case BOOL -> Native.setBool(id, opt.udt4Number(), as(opt, value, Boolean.class));
            case LINGER -> Native.setLinger(id, as(opt, value, Integer.class));
            case CC -> Native.setCc(id, as(opt, value, String.class));
            case LONG -> {
                // An Integer is a natural way to write a rate: widen it.
                long v = value instanceof Integer i ? i.longValue() : as(opt, value, Long.class);
                Native.setLong(id, opt.udt4Number(), v);
            }
        }
    }

    static Object get(long id, UdtOption opt) throws IOException {
        Objects.requireNonNull(opt, "option is null");
        return switch (opt.kind()) {
            case INT -> Native.getInt(id, opt.udt4Number());
            case BOOL -> Native.getBool(id, opt.udt4Number());
            case LINGER -> Native.getLinger(id);
            case CC -> Native.getCc(id);
            case LONG -> Native.getLong(id, opt.udt4Number());
        };
    }

    private static <T> T as(UdtOption opt, Object value, Class<T> type) throws UdtException {
        if (!type.isInstance(value)) {
            throw new UdtException(UdtException.EINVPARAM, opt + " takes a " + type.getSimpleName()
                    + ", not a " + value.getClass().getSimpleName());
        }
        return type.cast(value);
    }
}
