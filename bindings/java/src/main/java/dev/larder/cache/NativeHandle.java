package dev.larder.cache;

/**
 * The life cycle every object over a native handle shares: calls publish their use of the handle
 * through {@link Scratch} ({@link #enter}), and {@link #close()} marks the object closed, waits for
 * the calls in flight on other threads, then frees the handle ({@link #release}).
 */
abstract class NativeHandle implements AutoCloseable {
    /** The native handle; 0 once closed. */
    private volatile long handle;

    NativeHandle(long handle) {
        this.handle = handle;
    }

    /** Frees the handle; called once, with no call in flight. */
    abstract void release(long handle);

    /** What the exception thrown after {@link #close()} says. */
    abstract String closedMessage();

    /** Publishes this thread's use of the handle and returns it; see {@link Scratch}. */
    final long enter(Scratch s) {
        long h = handle;
        if (h != 0) {
            s.enter(h);
            if (handle == h) {
                return h;
            }
            s.exit();
        }
        throw new IllegalStateException(closedMessage());
    }

    /**
     * Whether {@link #close()} has been called.
     *
     * @return true once closed
     */
    public final boolean isClosed() {
        return handle == 0;
    }

    @Override
    public void close() {
        long h;
        synchronized (this) {
            h = handle;
            if (h == 0) {
                return;
            }
            handle = 0;
        }
        Scratch.awaitQuiescence(h);
        release(h);
    }
}
