package dev.larder.cache;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;

/**
 * An open larder cache file: an immutable, memory-mapped, typed key-value file built by
 * {@link LarderCacheBuilder} (or {@code larder cache build}, or any other binding).
 *
 * <pre>{@code
 * try (LarderCache cache = LarderCache.open(Path.of("features.lcache"))) {
 *     String name = cache.getString("user:42:name");                 // null if absent
 *     double score = cache.getDouble("user:42:score").orElse(0.0);   // OptionalDouble
 *     DoubleBuffer weights = cache.getDoubleBuffer("model:weights"); // zero-copy
 * }
 * }</pre>
 *
 * <h2>Keys</h2>
 * Keys are arbitrary bytes of at most {@value #KEY_LEN_MAX} bytes. Every method takes a
 * {@code byte[]} key, or a {@code String} key, which is looked up as its UTF-8 bytes. Longer
 * keys are never present.
 *
 * <h2>Absent keys and types</h2>
 * Getters that return objects return {@code null} for an absent key. Getters of primitives
 * return {@link OptionalLong}, {@link OptionalDouble} or {@code Optional<Boolean>}, and have
 * overloads taking a default value that allocate nothing. A getter called on a key that holds
 * another type throws {@link TypeMismatchException}; {@link #getBytes} also reads strings (as
 * their UTF-8 bytes). {@link #get} returns any value as an object, {@link #typeOf} its type.
 *
 * <h2>Errors</h2>
 * {@link #open} validates the header in O(1) and throws {@link CorruptCacheException} or
 * {@link UnsupportedVersionException}; a lookup that reaches a corrupt record throws
 * {@link CorruptCacheException}; {@link #verify} checks every checksum. A corrupt or hostile
 * file never crashes the JVM. All exceptions are unchecked ({@link LarderCacheException}).
 *
 * <h2>Threads and closing</h2>
 * A {@code LarderCache} may be shared by any number of threads; lookups take no lock and
 * threads share no written memory. {@link #close()} unmaps the file: it waits for lookups in
 * flight on other threads to finish, and every later call throws
 * {@link IllegalStateException}. Buffers returned by {@link #getDoubleBuffer} and
 * {@link #getFloatBuffer} point into the mapping and must not be used after {@code close}
 * (reading one then crashes the JVM, as with any unmapped memory); copy what must outlive
 * the cache, or use {@link #getDoubleArray}.
 *
 * <p>A cache taken from a {@link SwappingCache} shares the swapper's mapping: it keeps reading
 * the file it was taken on after the swapper moves to a newer one, and its {@code close}
 * releases its hold on that file (unmapped once nothing holds it).
 *
 * <h2>Cost</h2>
 * A lookup is one JNI call that makes no call back into the JVM: the key travels through a
 * per-thread direct buffer, and fixed-size values come back through it. An ASCII
 * {@code String} key is copied into that buffer char by char; other strings are encoded with
 * {@link String#getBytes}, which allocates. Pre-encoded {@code byte[]} keys are cheapest.
 * String and byte values are copied out of the mapping (a Java string cannot point at foreign
 * memory), so {@link #getString} allocates the string it returns.
 */
public final class LarderCache extends NativeHandle {
    /** The longest key a cache file can hold, in bytes. */
    public static final int KEY_LEN_MAX = 65536;

    private final Path path;

    private LarderCache(Path path, long handle) {
        super(handle);
        this.path = path;
    }

    /**
     * Opens and memory-maps a cache file, validating its header (O(1) in the file size).
     *
     * @param path the file
     * @return the open cache; close it to unmap the file
     * @throws CorruptCacheException if the file is not a cache file, is truncated, or its
     *     header is corrupt
     * @throws UnsupportedVersionException if the file's format version is newer than this
     *     library
     * @throws LarderCacheException if the file cannot be opened or mapped
     */
    public static LarderCache open(Path path) {
        Objects.requireNonNull(path, "path");
        return new LarderCache(path, NativeLib.open(path.toString()));
    }

    /** Wraps a cache handle from {@link NativeLib#swapperCurrent}; the cache owns it. */
    static LarderCache fromHandle(Path path, long handle) {
        return new LarderCache(path, handle);
    }

    /**
     * The path the cache was opened from.
     *
     * @return the path given to {@link #open}, or for a cache from {@link SwappingCache#current},
     *     the swapper's {@link SwappingCache#path}
     */
    public Path path() {
        return path;
    }

    @Override
    String closedMessage() {
        return "cache is closed: " + path;
    }

    @Override
    void release(long handle) {
        NativeLib.close(handle);
    }

    private static <T> T checked(T key) {
        return Objects.requireNonNull(key, "key");
    }

    /**
     * Number of keys.
     *
     * @return the key count
     */
    public long size() {
        Scratch s = Scratch.get(0);
        long h = enter(s);
        try {
            return NativeLib.size(h);
        } finally {
            s.exit();
        }
    }

    /**
     * Whether a key is present.
     *
     * @param key the key's bytes
     * @return true if present
     */
    public boolean contains(byte[] key) {
        return contains(Scratch.withKey(checked(key)));
    }

    /**
     * Whether a key is present.
     *
     * @param key the key, looked up as UTF-8
     * @return true if present
     */
    public boolean contains(String key) {
        return contains(Scratch.withKey(checked(key)));
    }

    private boolean contains(Scratch s) {
        if (s == null) {
            return false;
        }
        long h = enter(s);
        try {
            return NativeLib.contains(h, s.address, s.keyLen) != 0;
        } finally {
            s.exit();
        }
    }

    /**
     * The type stored for a key.
     *
     * @param key the key's bytes
     * @return the type, or null if the key is absent
     */
    public ValueType typeOf(byte[] key) {
        return typeOf(Scratch.withKey(checked(key)));
    }

    /**
     * The type stored for a key.
     *
     * @param key the key, looked up as UTF-8
     * @return the type, or null if the key is absent
     */
    public ValueType typeOf(String key) {
        return typeOf(Scratch.withKey(checked(key)));
    }

    private ValueType typeOf(Scratch s) {
        if (s == null) {
            return null;
        }
        long h = enter(s);
        try {
            int tag = NativeLib.valueType(h, s.address, s.keyLen);
            return tag < 0 ? null : ValueType.fromTag(tag);
        } finally {
            s.exit();
        }
    }

    /**
     * A {@link ValueType#STR} value.
     *
     * @param key the key's bytes
     * @return the string, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     * @throws CorruptCacheException if the record is corrupt
     */
    public String getString(byte[] key) {
        return string(bytesOf(Scratch.withKey(checked(key)), ValueType.STR));
    }

    /**
     * A {@link ValueType#STR} value.
     *
     * @param key the key, looked up as UTF-8
     * @return the string, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     * @throws CorruptCacheException if the record is corrupt
     */
    public String getString(String key) {
        return string(bytesOf(Scratch.withKey(checked(key)), ValueType.STR));
    }

    private static String string(byte[] utf8) {
        // The native side has validated the UTF-8.
        return utf8 == null ? null : new String(utf8, StandardCharsets.UTF_8);
    }

    /**
     * A {@link ValueType#BYTES} value, or a {@link ValueType#STR} value's UTF-8 bytes.
     *
     * @param key the key's bytes
     * @return a copy of the bytes, or null if the key is absent
     * @throws TypeMismatchException if the key holds neither bytes nor a string
     * @throws CorruptCacheException if the record is corrupt
     */
    public byte[] getBytes(byte[] key) {
        return bytesOf(Scratch.withKey(checked(key)), ValueType.BYTES);
    }

    /**
     * A {@link ValueType#BYTES} value, or a {@link ValueType#STR} value's UTF-8 bytes.
     *
     * @param key the key, looked up as UTF-8
     * @return a copy of the bytes, or null if the key is absent
     * @throws TypeMismatchException if the key holds neither bytes nor a string
     * @throws CorruptCacheException if the record is corrupt
     */
    public byte[] getBytes(String key) {
        return bytesOf(Scratch.withKey(checked(key)), ValueType.BYTES);
    }

    private byte[] bytesOf(Scratch s, ValueType type) {
        if (s == null) {
            return null;
        }
        long h = enter(s);
        try {
            int len = type == ValueType.STR
                    ? NativeLib.getString(h, s.address, s.keyLen, s.capacity)
                    : NativeLib.getBytes(h, s.address, s.keyLen, s.capacity);
            if (len < 0) {
                return null;
            }
            if (len <= s.capacity) {
                return s.bytes(len);
            }
            // Too long for the scratch buffer, which still holds the key.
            return NativeLib.getLargeBytes(h, s.address, s.keyLen, type.tag());
        } finally {
            s.exit();
        }
    }

    /**
     * Looks up a fixed-size value into the scratch buffer (little-endian at offset 0).
     *
     * @return false if absent (or the key is too long to be present)
     */
    private boolean fixed(Scratch s, ValueType type) {
        if (s == null) {
            return false;
        }
        long h = enter(s);
        try {
            int status;
            switch (type) {
                case I64:
                    status = NativeLib.getLong(h, s.address, s.keyLen);
                    break;
                case F64:
                    status = NativeLib.getDouble(h, s.address, s.keyLen);
                    break;
                default:
                    status = NativeLib.getBoolean(h, s.address, s.keyLen);
                    break;
            }
            return status >= 0;
        } finally {
            s.exit();
        }
    }

    private OptionalLong optionalLong(Scratch s) {
        return fixed(s, ValueType.I64) ? OptionalLong.of(s.buffer.getLong(0))
                : OptionalLong.empty();
    }

    private long longOr(Scratch s, long defaultValue) {
        return fixed(s, ValueType.I64) ? s.buffer.getLong(0) : defaultValue;
    }

    private OptionalDouble optionalDouble(Scratch s) {
        return fixed(s, ValueType.F64) ? OptionalDouble.of(s.buffer.getDouble(0))
                : OptionalDouble.empty();
    }

    private double doubleOr(Scratch s, double defaultValue) {
        return fixed(s, ValueType.F64) ? s.buffer.getDouble(0) : defaultValue;
    }

    private Optional<Boolean> optionalBoolean(Scratch s) {
        return fixed(s, ValueType.BOOL) ? Optional.of(s.buffer.get(0) != 0) : Optional.empty();
    }

    private boolean booleanOr(Scratch s, boolean defaultValue) {
        return fixed(s, ValueType.BOOL) ? s.buffer.get(0) != 0 : defaultValue;
    }

    /**
     * An {@link ValueType#I64} value.
     *
     * @param key the key's bytes
     * @return the value, or empty if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public OptionalLong getLong(byte[] key) {
        return optionalLong(Scratch.withKey(checked(key)));
    }

    /**
     * An {@link ValueType#I64} value.
     *
     * @param key the key, looked up as UTF-8
     * @return the value, or empty if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public OptionalLong getLong(String key) {
        return optionalLong(Scratch.withKey(checked(key)));
    }

    /**
     * An {@link ValueType#I64} value, without allocating.
     *
     * @param key the key's bytes
     * @param defaultValue returned if the key is absent
     * @return the value, or {@code defaultValue}
     * @throws TypeMismatchException if the key holds another type
     */
    public long getLong(byte[] key, long defaultValue) {
        return longOr(Scratch.withKey(checked(key)), defaultValue);
    }

    /**
     * An {@link ValueType#I64} value, without allocating (for ASCII keys).
     *
     * @param key the key, looked up as UTF-8
     * @param defaultValue returned if the key is absent
     * @return the value, or {@code defaultValue}
     * @throws TypeMismatchException if the key holds another type
     */
    public long getLong(String key, long defaultValue) {
        return longOr(Scratch.withKey(checked(key)), defaultValue);
    }

    /**
     * An {@link ValueType#F64} value.
     *
     * @param key the key's bytes
     * @return the value, or empty if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public OptionalDouble getDouble(byte[] key) {
        return optionalDouble(Scratch.withKey(checked(key)));
    }

    /**
     * An {@link ValueType#F64} value.
     *
     * @param key the key, looked up as UTF-8
     * @return the value, or empty if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public OptionalDouble getDouble(String key) {
        return optionalDouble(Scratch.withKey(checked(key)));
    }

    /**
     * An {@link ValueType#F64} value, without allocating.
     *
     * @param key the key's bytes
     * @param defaultValue returned if the key is absent
     * @return the value, or {@code defaultValue}
     * @throws TypeMismatchException if the key holds another type
     */
    public double getDouble(byte[] key, double defaultValue) {
        return doubleOr(Scratch.withKey(checked(key)), defaultValue);
    }

    /**
     * An {@link ValueType#F64} value, without allocating (for ASCII keys).
     *
     * @param key the key, looked up as UTF-8
     * @param defaultValue returned if the key is absent
     * @return the value, or {@code defaultValue}
     * @throws TypeMismatchException if the key holds another type
     */
    public double getDouble(String key, double defaultValue) {
        return doubleOr(Scratch.withKey(checked(key)), defaultValue);
    }

    /**
     * A {@link ValueType#BOOL} value.
     *
     * @param key the key's bytes
     * @return the value, or empty if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public Optional<Boolean> getBoolean(byte[] key) {
        return optionalBoolean(Scratch.withKey(checked(key)));
    }

    /**
     * A {@link ValueType#BOOL} value.
     *
     * @param key the key, looked up as UTF-8
     * @return the value, or empty if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public Optional<Boolean> getBoolean(String key) {
        return optionalBoolean(Scratch.withKey(checked(key)));
    }

    /**
     * A {@link ValueType#BOOL} value, without allocating.
     *
     * @param key the key's bytes
     * @param defaultValue returned if the key is absent
     * @return the value, or {@code defaultValue}
     * @throws TypeMismatchException if the key holds another type
     */
    public boolean getBoolean(byte[] key, boolean defaultValue) {
        return booleanOr(Scratch.withKey(checked(key)), defaultValue);
    }

    /**
     * A {@link ValueType#BOOL} value, without allocating (for ASCII keys).
     *
     * @param key the key, looked up as UTF-8
     * @param defaultValue returned if the key is absent
     * @return the value, or {@code defaultValue}
     * @throws TypeMismatchException if the key holds another type
     */
    public boolean getBoolean(String key, boolean defaultValue) {
        return booleanOr(Scratch.withKey(checked(key)), defaultValue);
    }

    /** The native getters that return an object and take only the key. */
    private interface ObjectLookup<T> {
        T apply(long handle, long scratch, int keyLen);
    }

    private <T> T object(Scratch s, ObjectLookup<T> lookup) {
        if (s == null) {
            return null;
        }
        long h = enter(s);
        try {
            return lookup.apply(h, s.address, s.keyLen);
        } finally {
            s.exit();
        }
    }

    /**
     * A {@link ValueType#F32_LIST} value, copied into a new array.
     *
     * @param key the key's bytes
     * @return the floats, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public float[] getFloatArray(byte[] key) {
        return object(Scratch.withKey(checked(key)), NativeLib::getFloatArray);
    }

    /**
     * A {@link ValueType#F32_LIST} value, copied into a new array.
     *
     * @param key the key, looked up as UTF-8
     * @return the floats, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public float[] getFloatArray(String key) {
        return object(Scratch.withKey(checked(key)), NativeLib::getFloatArray);
    }

    /**
     * A {@link ValueType#F64_LIST} value, copied into a new array.
     *
     * @param key the key's bytes
     * @return the doubles, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public double[] getDoubleArray(byte[] key) {
        return object(Scratch.withKey(checked(key)), NativeLib::getDoubleArray);
    }

    /**
     * A {@link ValueType#F64_LIST} value, copied into a new array.
     *
     * @param key the key, looked up as UTF-8
     * @return the doubles, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public double[] getDoubleArray(String key) {
        return object(Scratch.withKey(checked(key)), NativeLib::getDoubleArray);
    }

    private static ByteBuffer readOnly(ByteBuffer mapped) {
        // The mapping is read-only: a writable buffer over it would crash on the first put.
        return mapped.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    private FloatBuffer floatBuffer(Scratch s) {
        ByteBuffer mapped = object(s, NativeLib::getFloatBuffer);
        return mapped == null ? null : readOnly(mapped).asFloatBuffer();
    }

    private DoubleBuffer doubleBuffer(Scratch s) {
        ByteBuffer mapped = object(s, NativeLib::getDoubleBuffer);
        return mapped == null ? null : readOnly(mapped).asDoubleBuffer();
    }

    /**
     * A {@link ValueType#F32_LIST} value in place: a read-only direct buffer over the memory
     * mapping, with no copy.
     *
     * <p><b>Valid until {@link #close()}.</b> Reading the buffer after the cache is closed
     * reads unmapped memory and crashes the JVM; copy what must outlive the cache.
     *
     * @param key the key's bytes
     * @return the floats, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public FloatBuffer getFloatBuffer(byte[] key) {
        return floatBuffer(Scratch.withKey(checked(key)));
    }

    /**
     * A {@link ValueType#F32_LIST} value in place; see {@link #getFloatBuffer(byte[])}.
     *
     * @param key the key, looked up as UTF-8
     * @return the floats, or null if the key is absent; valid until {@link #close()}
     * @throws TypeMismatchException if the key holds another type
     */
    public FloatBuffer getFloatBuffer(String key) {
        return floatBuffer(Scratch.withKey(checked(key)));
    }

    /**
     * A {@link ValueType#F64_LIST} value in place: a read-only direct buffer over the memory
     * mapping, with no copy.
     *
     * <p><b>Valid until {@link #close()}.</b> Reading the buffer after the cache is closed
     * reads unmapped memory and crashes the JVM; copy what must outlive the cache.
     *
     * @param key the key's bytes
     * @return the doubles, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public DoubleBuffer getDoubleBuffer(byte[] key) {
        return doubleBuffer(Scratch.withKey(checked(key)));
    }

    /**
     * A {@link ValueType#F64_LIST} value in place; see {@link #getDoubleBuffer(byte[])}.
     *
     * @param key the key, looked up as UTF-8
     * @return the doubles, or null if the key is absent; valid until {@link #close()}
     * @throws TypeMismatchException if the key holds another type
     */
    public DoubleBuffer getDoubleBuffer(String key) {
        return doubleBuffer(Scratch.withKey(checked(key)));
    }

    private static List<String> list(String[] items) {
        return items == null ? null : List.of(items);
    }

    /**
     * A {@link ValueType#STR_LIST} value.
     *
     * @param key the key's bytes
     * @return an unmodifiable list, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public List<String> getStringList(byte[] key) {
        return list(object(Scratch.withKey(checked(key)), NativeLib::getStringList));
    }

    /**
     * A {@link ValueType#STR_LIST} value.
     *
     * @param key the key, looked up as UTF-8
     * @return an unmodifiable list, or null if the key is absent
     * @throws TypeMismatchException if the key holds another type
     */
    public List<String> getStringList(String key) {
        return list(object(Scratch.withKey(checked(key)), NativeLib::getStringList));
    }

    private Object any(Scratch s) {
        Object value = object(s, NativeLib::get);
        return value instanceof String[] ? List.of((String[]) value) : value;
    }

    /**
     * Any value, as the Java type of its {@link ValueType}: {@code byte[]}, {@link String},
     * {@link Long}, {@link Double}, {@link Boolean}, {@code float[]}, {@code double[]} or an
     * unmodifiable {@code List<String>}.
     *
     * @param key the key's bytes
     * @return the value, or null if the key is absent
     * @throws CorruptCacheException if the record is corrupt
     */
    public Object get(byte[] key) {
        return any(Scratch.withKey(checked(key)));
    }

    /**
     * Any value; see {@link #get(byte[])}.
     *
     * @param key the key, looked up as UTF-8
     * @return the value, or null if the key is absent
     * @throws CorruptCacheException if the record is corrupt
     */
    public Object get(String key) {
        return any(Scratch.withKey(checked(key)));
    }

    /**
     * Facts from the file's header.
     *
     * @return name, version, counts and sizes
     */
    public CacheInfo info() {
        Scratch s = Scratch.get(0);
        long h = enter(s);
        try {
            return CacheInfo.fromNative(NativeLib.name(h), NativeLib.info(h));
        } finally {
            s.exit();
        }
    }

    /**
     * Checks every checksum and every record: that each index entry points at a record whose
     * key a lookup finds and whose value decodes. O(file size).
     *
     * @throws CorruptCacheException describing the first problem found
     */
    public void verify() {
        Scratch s = Scratch.get(0);
        long h = enter(s);
        try {
            NativeLib.verify(h);
        } finally {
            s.exit();
        }
    }

    /**
     * Unmaps the file. Waits for lookups in flight on other threads; later calls throw
     * {@link IllegalStateException}. Buffers from {@link #getDoubleBuffer} and
     * {@link #getFloatBuffer} become invalid. Closing twice does nothing.
     */
    @Override
    public void close() {
        super.close();
    }

    @Override
    public String toString() {
        return "LarderCache[" + path + (isClosed() ? ", closed]" : "]");
    }
}
