package dev.larder.cache;

/**
 * A key was inserted twice into a {@link LarderCacheBuilder} whose policy is
 * {@link LarderCacheBuilder#rejectDuplicateKeys()}. Raised by {@link LarderCacheBuilder#finish()}.
 */
public class DuplicateKeyException extends LarderCacheException {
    private static final long serialVersionUID = 1L;

    /**
     * An error with a message.
     *
     * @param message names the key
     */
    public DuplicateKeyException(String message) {
        super(message);
    }
}
