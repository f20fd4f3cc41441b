package net.udt;

import java.io.IOException;
import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A socket's id in the native handle table, closed exactly once: by {@link #close()}, or by
 * a {@link Cleaner} once its owner is unreachable (a socket the application forgot to close
 * must not keep its UDP port and I/O thread for the life of the process).
 */
final class Handle {
    /** Our own cleaner thread: a closing socket may linger, which must not stall others. */
    private static final Cleaner CLEANER = Cleaner.create();

    final long id;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Cleaner.Cleanable cleanable;

    Handle(Object owner, long id) {
        this.id = id;
        this.cleanable = CLEANER.register(owner, new Release(id));
    }

    boolean isClosed() {
        return closed.get();
    }

    /** Closes the native socket; calls after the first do nothing. */
    void close() throws IOException {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            Native.close(id);
        } finally {
            // The id is gone from the table now: the cleaner's close finds nothing to do.
            cleanable.clean();
        }
    }

    /** The cleaner's action; holds the id only, never the owner. */
    private record Release(long id) implements Runnable {
        @Override
        public void run() {
            try {
                Native.close(id);
            } catch (Exception e) {
                // Nobody is left to tell: the owner is gone.
            }
        }
    }
}
