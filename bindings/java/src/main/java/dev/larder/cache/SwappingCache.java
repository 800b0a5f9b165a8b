package dev.larder.cache;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A cache that follows a published file and moves to each newer one on {@link #refresh()},
 * without blocking readers.
 *
 * <pre>{@code
 * try (SwappingCache prices = SwappingCache.watchPath(Path.of("prices.lcache"))) {
 *     // ... a new file is built onto prices.lcache (LarderCacheBuilder renames it into place)
 *     boolean swapped = prices.refresh();              // call from a scheduled task, say
 *     try (LarderCache now = prices.current()) {       // one per request or batch
 *         double apple = now.getDouble("apple").orElse(0.0);
 *     }
 * }
 * }</pre>
 *
 * <p>Two ways to publish a new file are followed: rename it onto a watched path
 * ({@link #watchPath}; {@link LarderCacheBuilder} writes beside its destination and renames, so
 * building onto the live path is enough), or rewrite a pointer file that names the current
 * cache file ({@link #watchPointer}). Nothing runs in the background: {@link #refresh()} checks
 * once, when called.
 *
 * <p>{@link #current()} returns the current file as a {@link LarderCache} of its own that shares
 * the mapping: lookups on it, and buffers from its {@code getDoubleBuffer}/{@code
 * getFloatBuffer}, stay on that file until it is closed, whatever swaps happen meanwhile (old
 * lookups finish on the old mapping); a {@code current()} after a swap reads the new file.
 * Close each one when done.
 *
 * <p>A {@code SwappingCache} may be shared by any number of threads. Refreshes are serialised and
 * never wait for lookups, nor lookups for them. {@link #close()} waits for {@code refresh} and
 * {@code current} calls in flight; caches taken from it stay open until closed themselves.
 */
public final class SwappingCache extends NativeHandle {
    private final Path path;
    private final boolean pointer;

    private SwappingCache(Path path, boolean pointer, long handle) {
        super(handle);
        this.path = path;
        this.pointer = pointer;
    }

    /**
     * Opens the cache file at {@code path} and follows it: {@link #refresh()} swaps to whatever
     * file has since been renamed onto {@code path}.
     *
     * @param path the live cache file
     * @return the swapper; close it when done
     * @throws CorruptCacheException if the file is not a cache file or is damaged
     * @throws UnsupportedVersionException if the file's format version is newer than this
     *     library
     * @throws LarderCacheException if the file cannot be opened or mapped
     */
    public static SwappingCache watchPath(Path path) {
        Objects.requireNonNull(path, "path");
        return new SwappingCache(path, false, NativeLib.watchPath(path.toString()));
    }

    /**
     * Opens the cache file named by the pointer file at {@code pointerPath} and follows it:
     * {@link #refresh()} swaps when the pointer names another file or the named file is
     * replaced. A pointer file holds one path, relative to the pointer's directory unless
     * absolute; surrounding whitespace is ignored. Publish by writing a new pointer file beside
     * it and renaming it over the old one.
     *
     * @param pointerPath the pointer file
     * @return the swapper; close it when done
     * @throws CorruptCacheException if the named file is not a cache file or is damaged
     * @throws LarderCacheException if the pointer is missing or empty, or the named file
     *     cannot be opened
     */
    public static SwappingCache watchPointer(Path pointerPath) {
        Objects.requireNonNull(pointerPath, "pointerPath");
        return new SwappingCache(pointerPath, true, NativeLib.watchPointer(pointerPath.toString()));
    }

    /**
     * The watched path, or the pointer file.
     *
     * @return the path given to {@link #watchPath} or {@link #watchPointer}
     */
    public Path path() {
        return path;
    }

    /**
     * Whether {@link #path()} is a pointer file.
     *
     * @return true for a swapper from {@link #watchPointer}
     */
    public boolean isPointer() {
        return pointer;
    }

    @Override
    String closedMessage() {
        return "swapping cache is closed: " + path;
    }

    @Override
    void release(long handle) {
        NativeLib.swapperClose(handle);
    }

    /**
     * Checks the watched path or pointer file once and swaps if it designates a different file.
     * A new file that fails to open (missing, corrupt, a bad pointer) leaves the current one in
     * service and throws.
     *
     * @return whether it swapped
     * @throws CorruptCacheException if the new file is not a cache file or is damaged
     * @throws LarderCacheException if a file cannot be read or mapped
     * @throws IllegalStateException if the swapper is closed
     */
    public boolean refresh() {
        Scratch s = Scratch.get(0);
        long h = enter(s);
        try {
            return NativeLib.swapperRefresh(h);
        } finally {
            s.exit();
        }
    }

    /**
     * The current file, as a cache of its own that keeps reading that file until it is closed.
     * Its {@link LarderCache#path()} is this swapper's {@link #path()}.
     *
     * @return an open cache; close it when done
     * @throws IllegalStateException if the swapper is closed
     */
    public LarderCache current() {
        Scratch s = Scratch.get(0);
        long h = enter(s);
        try {
            return LarderCache.fromHandle(path, NativeLib.swapperCurrent(h));
        } finally {
            s.exit();
        }
    }

    /**
     * Releases the swapper. Waits for {@code refresh} and {@code current} calls in flight on
     * other threads; later calls throw {@link IllegalStateException}. Caches returned by
     * {@link #current()} stay open. Closing twice does nothing.
     */
    @Override
    public void close() {
        super.close();
    }

    @Override
    public String toString() {
        return "SwappingCache[" + (pointer ? "pointer " : "") + path
                + (isClosed() ? ", closed]" : "]");
    }
}
