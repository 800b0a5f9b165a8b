package dev.larder.cache;

/**
 * The file was written by a newer format version (or uses feature flags) that this library
 * does not understand. Rebuild the file or upgrade larder.
 */
public class UnsupportedVersionException extends LarderCacheException {
    private static final long serialVersionUID = 1L;

    /**
     * An error with a message.
     *
     * @param message the version found and the version supported
     */
    public UnsupportedVersionException(String message) {
        super(message);
    }
}
