package dev.larder.cache;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * Builds a cache file, streaming: records go to a temporary file beside the destination as
 * they are inserted, and memory holds about 16 bytes per key. {@link #finish()} writes the
 * index and header, syncs, and renames the file into place, so readers see the old file or the
 * whole new one, never a partial one. Closing a builder that was not finished removes its
 * temporary file.
 *
 * <pre>{@code
 * try (LarderCacheBuilder b = LarderCacheBuilder.create(Path.of("prices.lcache")).name("prices")) {
 *     b.putDouble("apple", 1.25);
 *     b.putString("apple:origin", "NZ");
 *     BuildStats stats = b.finish();
 * }
 * }</pre>
 *
 * <p>A key inserted twice keeps its last value ({@link BuildStats#duplicateKeys()} counts the
 * repeats) unless {@link #rejectDuplicateKeys()} was called. Keys are arbitrary bytes of at
 * most {@value LarderCache#KEY_LEN_MAX} bytes; {@code String} keys are stored as UTF-8.
 *
 * <p>Not thread-safe: use a builder from one thread at a time.
 */
public final class LarderCacheBuilder implements AutoCloseable {
    private final Path path;
    /** The native handle; 0 once finished or closed. */
    private long handle;
    private boolean inserted;
    /** The key, then a byte or string value; little-endian. */
    private ByteBuffer scratch;
    private long scratchAddress;

    private LarderCacheBuilder(Path path, long handle) {
        this.path = path;
        this.handle = handle;
        allocate(Scratch.INITIAL_BYTES);
    }

    /**
     * Starts a build that ends up at {@code path}. The file appears only when {@link #finish()}
     * succeeds.
     *
     * @param path the destination; its directory must be writable
     * @return the builder
     * @throws LarderCacheException if the temporary file cannot be created
     */
    public static LarderCacheBuilder create(Path path) {
        Objects.requireNonNull(path, "path");
        return new LarderCacheBuilder(path, NativeLib.builderNew(path.toString()));
    }

    private void allocate(int capacity) {
        scratch = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
        scratchAddress = NativeLib.scratchAddress(scratch);
    }

    private long live() {
        if (handle == 0) {
            throw new IllegalStateException("builder is finished or closed: " + path);
        }
        return handle;
    }

    /**
     * Sets the name stored in the header.
     *
     * @param name at most 256 bytes of UTF-8
     * @return this builder
     * @throws IllegalArgumentException if the name is too long
     */
    public LarderCacheBuilder name(String name) {
        NativeLib.builderName(live(), Objects.requireNonNull(name, "name"));
        return this;
    }

    /**
     * Stores repeated values once: a value equal to an earlier one (8 encoded bytes or more)
     * becomes a reference to it. {@link BuildStats#dedupSavedBytes()} reports the saving.
     *
     * @return this builder
     * @throws IllegalStateException if a value was already inserted
     */
    public LarderCacheBuilder dedup() {
        long h = live();
        if (inserted) {
            throw new IllegalStateException("dedup() must be called before the first put");
        }
        NativeLib.builderDedup(h);
        return this;
    }

    /**
     * Makes {@link #finish()} fail with {@link DuplicateKeyException} if a key was inserted
     * twice (by default the last insert wins).
     *
     * @return this builder
     */
    public LarderCacheBuilder rejectDuplicateKeys() {
        NativeLib.builderRejectDuplicates(live());
        return this;
    }

    /**
     * Overrides the creation time recorded in the header (by default the time of
     * {@link #finish()}), so that the same inserts produce the same bytes.
     *
     * @param createdUnixMs milliseconds since the Unix epoch
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public LarderCacheBuilder createdUnixMs(long createdUnixMs) {
        handle = NativeLib.builderCreatedUnixMs(live(), createdUnixMs);
        return this;
    }

    /** Writes the key (and room for {@code valueLen} more bytes) into the scratch buffer. */
    private long putKey(byte[] key, int valueLen) {
        long h = live();
        Objects.requireNonNull(key, "key");
        if (key.length > LarderCache.KEY_LEN_MAX) {
            throw new IllegalArgumentException("key of " + key.length
                    + " bytes exceeds the limit of " + LarderCache.KEY_LEN_MAX + " bytes");
        }
        long needed = (long) key.length + valueLen;
        if (needed > scratch.capacity()) {
            if (needed > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("key and value of " + needed
                        + " bytes are too large");
            }
            allocate((int) Math.max(needed, 2L * scratch.capacity()));
        }
        scratch.put(0, key);
        inserted = true;
        return h;
    }

    private static byte[] utf8(String s, String what) {
        return Objects.requireNonNull(s, what).getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Inserts a {@link ValueType#BYTES} value.
     *
     * @param key the key's bytes
     * @param value the bytes (copied)
     * @return this builder
     */
    public LarderCacheBuilder putBytes(byte[] key, byte[] value) {
        Objects.requireNonNull(value, "value");
        long h = putKey(key, value.length);
        scratch.put(key.length, value);
        NativeLib.putBytes(h, scratchAddress, key.length, value.length);
        return this;
    }

    /**
     * Inserts a {@link ValueType#BYTES} value.
     *
     * @param key the key, stored as UTF-8
     * @param value the bytes (copied)
     * @return this builder
     */
    public LarderCacheBuilder putBytes(String key, byte[] value) {
        return putBytes(utf8(key, "key"), value);
    }

    /**
     * Inserts a {@link ValueType#STR} value.
     *
     * @param key the key's bytes
     * @param value the string, stored as UTF-8 (unpaired surrogates become {@code '?'})
     * @return this builder
     */
    public LarderCacheBuilder putString(byte[] key, String value) {
        byte[] utf8 = utf8(value, "value");
        long h = putKey(key, utf8.length);
        scratch.put(key.length, utf8);
        NativeLib.putString(h, scratchAddress, key.length, utf8.length);
        return this;
    }

    /**
     * Inserts a {@link ValueType#STR} value.
     *
     * @param key the key, stored as UTF-8
     * @param value the string, stored as UTF-8
     * @return this builder
     */
    public LarderCacheBuilder putString(String key, String value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        // ASCII keys and values (the common case) go into the scratch buffer char by char,
        // sparing two getBytes allocations.
        int keyLen = key.length();
        int valueLen = value.length();
        if (keyLen <= LarderCache.KEY_LEN_MAX && (long) keyLen + valueLen <= scratch.capacity()
                && handle != 0 && ascii(key, 0) && ascii(value, keyLen)) {
            inserted = true;
            NativeLib.putString(handle, scratchAddress, keyLen, valueLen);
            return this;
        }
        return putString(utf8(key, "key"), value);
    }

    /** Writes {@code s} at {@code offset} if it is ASCII; false (and partly written) if not. */
    private boolean ascii(String s, int offset) {
        ByteBuffer b = scratch;
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x80) {
                return false;
            }
            b.put(offset + i, (byte) c);
        }
        return true;
    }

    /**
     * Inserts an {@link ValueType#I64} value.
     *
     * @param key the key's bytes
     * @param value the number
     * @return this builder
     */
    public LarderCacheBuilder putLong(byte[] key, long value) {
        long h = putKey(key, 0);
        NativeLib.putLong(h, scratchAddress, key.length, value);
        return this;
    }

    /**
     * Inserts an {@link ValueType#I64} value.
     *
     * @param key the key, stored as UTF-8
     * @param value the number
     * @return this builder
     */
    public LarderCacheBuilder putLong(String key, long value) {
        return putLong(utf8(key, "key"), value);
    }

    /**
     * Inserts an {@link ValueType#F64} value.
     *
     * @param key the key's bytes
     * @param value the number
     * @return this builder
     */
    public LarderCacheBuilder putDouble(byte[] key, double value) {
        long h = putKey(key, 0);
        NativeLib.putDouble(h, scratchAddress, key.length, value);
        return this;
    }

    /**
     * Inserts an {@link ValueType#F64} value.
     *
     * @param key the key, stored as UTF-8
     * @param value the number
     * @return this builder
     */
    public LarderCacheBuilder putDouble(String key, double value) {
        return putDouble(utf8(key, "key"), value);
    }

    /**
     * Inserts a {@link ValueType#BOOL} value.
     *
     * @param key the key's bytes
     * @param value the boolean
     * @return this builder
     */
    public LarderCacheBuilder putBoolean(byte[] key, boolean value) {
        long h = putKey(key, 0);
        NativeLib.putBoolean(h, scratchAddress, key.length, value);
        return this;
    }

    /**
     * Inserts a {@link ValueType#BOOL} value.
     *
     * @param key the key, stored as UTF-8
     * @param value the boolean
     * @return this builder
     */
    public LarderCacheBuilder putBoolean(String key, boolean value) {
        return putBoolean(utf8(key, "key"), value);
    }

    /**
     * Inserts a {@link ValueType#F32_LIST} value, read back in place by
     * {@link LarderCache#getFloatBuffer}.
     *
     * @param key the key's bytes
     * @param values the floats (copied)
     * @return this builder
     */
    public LarderCacheBuilder putFloatArray(byte[] key, float[] values) {
        Objects.requireNonNull(values, "values");
        long h = putKey(key, 0);
        NativeLib.putFloatArray(h, scratchAddress, key.length, values);
        return this;
    }

    /**
     * Inserts a {@link ValueType#F32_LIST} value.
     *
     * @param key the key, stored as UTF-8
     * @param values the floats (copied)
     * @return this builder
     */
    public LarderCacheBuilder putFloatArray(String key, float[] values) {
        return putFloatArray(utf8(key, "key"), values);
    }

    /**
     * Inserts a {@link ValueType#F64_LIST} value, read back in place by
     * {@link LarderCache#getDoubleBuffer}.
     *
     * @param key the key's bytes
     * @param values the doubles (copied)
     * @return this builder
     */
    public LarderCacheBuilder putDoubleArray(byte[] key, double[] values) {
        Objects.requireNonNull(values, "values");
        long h = putKey(key, 0);
        NativeLib.putDoubleArray(h, scratchAddress, key.length, values);
        return this;
    }

    /**
     * Inserts a {@link ValueType#F64_LIST} value.
     *
     * @param key the key, stored as UTF-8
     * @param values the doubles (copied)
     * @return this builder
     */
    public LarderCacheBuilder putDoubleArray(String key, double[] values) {
        return putDoubleArray(utf8(key, "key"), values);
    }

    /**
     * Inserts a {@link ValueType#STR_LIST} value.
     *
     * @param key the key's bytes
     * @param values the strings, stored as UTF-8; none may be null
     * @return this builder
     */
    public LarderCacheBuilder putStringList(byte[] key, List<String> values) {
        Objects.requireNonNull(values, "values");
        byte[][] items = new byte[values.size()][];
        int[] ends = new int[items.length];
        long total = 0;
        for (int i = 0; i < items.length; i++) {
            items[i] = utf8(values.get(i), "list element");
            total += items[i].length;
            if (total > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("string list of over 2 GiB");
            }
            ends[i] = (int) total;
        }
        byte[] text = new byte[(int) total];
        for (int i = 0, at = 0; i < items.length; at += items[i].length, i++) {
            System.arraycopy(items[i], 0, text, at, items[i].length);
        }
        long h = putKey(key, 0);
        NativeLib.putStringList(h, scratchAddress, key.length, text, ends);
        return this;
    }

    /**
     * Inserts a {@link ValueType#STR_LIST} value.
     *
     * @param key the key, stored as UTF-8
     * @param values the strings, stored as UTF-8; none may be null
     * @return this builder
     */
    public LarderCacheBuilder putStringList(String key, List<String> values) {
        return putStringList(utf8(key, "key"), values);
    }

    /**
     * Writes the index and header, syncs, and renames the file into place. The builder is
     * finished afterwards, also when this throws (the temporary file is then removed).
     *
     * @return what was built
     * @throws DuplicateKeyException under {@link #rejectDuplicateKeys()}, if a key repeated
     * @throws IllegalArgumentException if the name is too long
     * @throws LarderCacheException if writing, syncing or renaming fails
     */
    public BuildStats finish() {
        long h = live();
        handle = 0;
        return BuildStats.fromNative(NativeLib.builderFinish(h));
    }

    /**
     * Abandons an unfinished build and removes its temporary file; does nothing after
     * {@link #finish()}.
     */
    @Override
    public void close() {
        long h = handle;
        if (h != 0) {
            handle = 0;
            NativeLib.builderAbort(h);
        }
    }

    @Override
    public String toString() {
        return "LarderCacheBuilder[" + path + (handle == 0 ? ", done]" : "]");
    }
}
