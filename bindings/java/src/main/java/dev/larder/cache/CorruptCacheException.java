package dev.larder.cache;

/**
 * The file is not a cache file, is truncated, fails a checksum, or holds a structure that is
 * out of bounds or malformed. Raised by {@link LarderCache#open}, by {@link LarderCache#verify},
 * and by a lookup that reaches a corrupt record; a corrupt file never crashes the JVM or returns
 * garbage.
 */
public class CorruptCacheException extends LarderCacheException {
    private static final long serialVersionUID = 1L;

    /**
     * An error with a message.
     *
     * @param message what is wrong and at which file offset
     */
    public CorruptCacheException(String message) {
        super(message);
    }
}
