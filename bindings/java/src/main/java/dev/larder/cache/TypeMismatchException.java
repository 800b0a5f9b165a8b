package dev.larder.cache;

/**
 * A typed getter asked for a type other than the one stored for the key, for example
 * {@link LarderCache#getLong(String)} on a string value. The value is never reinterpreted.
 */
public class TypeMismatchException extends LarderCacheException {
    private static final long serialVersionUID = 1L;

    private final ValueType expected;
    private final ValueType found;

    /**
     * Called by the native library with the format's type tags.
     *
     * @param message the message, naming both types
     * @param expectedTag the tag of the type asked for
     * @param foundTag the tag of the type stored
     */
    TypeMismatchException(String message, int expectedTag, int foundTag) {
        super(message);
        this.expected = ValueType.fromTag(expectedTag);
        this.found = ValueType.fromTag(foundTag);
    }

    /**
     * The type the caller asked for.
     *
     * @return the expected type
     */
    public ValueType expected() {
        return expected;
    }

    /**
     * The type stored in the file.
     *
     * @return the stored type
     */
    public ValueType found() {
        return found;
    }
}
