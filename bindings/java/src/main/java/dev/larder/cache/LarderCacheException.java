package dev.larder.cache;

/**
 * The base of every error this binding raises about a cache file: an I/O failure while opening
 * or building one, and the subclasses for corrupt files, unsupported versions, type mismatches
 * and duplicate keys.
 *
 * <p>Unchecked, like {@link java.io.UncheckedIOException}: a cache lookup that fails is a
 * problem with the file, not a condition most callers can handle at each call site. Misuse of
 * the API raises the usual {@link IllegalArgumentException} (a key or name over its limit) and
 * {@link IllegalStateException} (a closed cache or builder) instead.
 */
public class LarderCacheException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An error with a message.
     *
     * @param message what went wrong
     */
    public LarderCacheException(String message) {
        super(message);
    }
}
