package dev.larder.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Builder round trip of every type, type mismatches, absent keys, limits and builder rules. */
class RoundTripTest {
    static final String BIG = "ü".repeat(50_000); // 100,000 bytes: past the scratch buffer
    static final byte[] BIG_BYTES = new byte[70_000];
    static final byte[] LONGEST_KEY = new byte[LarderCache.KEY_LEN_MAX];

    @TempDir
    static Path dir;
    static LarderCache cache;
    static BuildStats stats;

    @BeforeAll
    static void build() {
        Arrays.fill(BIG_BYTES, (byte) 7);
        Arrays.fill(LONGEST_KEY, (byte) 'k');
        Path path = dir.resolve("types.lcache");
        try (LarderCacheBuilder b = LarderCacheBuilder.create(path)) {
            b.name("types");
            b.putBytes("bytes", new byte[] {0, -1, 127});
            b.putBytes("empty_bytes", new byte[0]);
            b.putString("str", "héllo 🌍");
            b.putString("empty_str", "");
            b.putString("big_str", BIG);
            b.putBytes("big_bytes", BIG_BYTES);
            b.putLong("i64", Long.MIN_VALUE);
            b.putDouble("f64", -0.5);
            b.putDouble("nan", Double.NaN);
            b.putBoolean("t", true);
            b.putBoolean("f", false);
            b.putFloatArray("f32", new float[] {1f, Float.MAX_VALUE, -0f});
            b.putFloatArray("empty_f32", new float[0]);
            b.putDoubleArray("f64s", new double[] {1e-300, 2, 3});
            b.putStringList("strs", List.of("a", "", "ß", "🌍"));
            b.putStringList("empty_strs", List.of());
            b.putLong(new byte[] {(byte) 0xff, 0, 1}, 42);
            b.putString(LONGEST_KEY, "longest key");
            b.putLong("ключ 🔑", 8);
            b.putString("dup", "first");
            b.putString("dup", "second");
            stats = b.finish();
        }
        cache = LarderCache.open(path);
    }

    @AfterAll
    static void close() {
        cache.close();
    }

    @Test
    void statsCountKeysAndDuplicates() {
        assertEquals(20, stats.keyCount());
        assertEquals(1, stats.duplicateKeys());
        assertEquals(20, cache.size());
        assertEquals(cache.info().fileBytes(), stats.fileBytes());
        assertEquals("types", cache.info().name());
    }

    @Test
    void everyTypeRoundTrips() {
        assertArrayEquals(new byte[] {0, -1, 127}, cache.getBytes("bytes"));
        assertArrayEquals(new byte[0], cache.getBytes("empty_bytes"));
        assertEquals("héllo 🌍", cache.getString("str"));
        assertEquals("héllo 🌍", cache.getString("str".getBytes(StandardCharsets.UTF_8)));
        assertArrayEquals("héllo 🌍".getBytes(StandardCharsets.UTF_8), cache.getBytes("str"),
                "getBytes reads strings as their UTF-8");
        assertEquals("", cache.getString("empty_str"));
        assertEquals(BIG, cache.getString("big_str"));
        assertArrayEquals(BIG_BYTES, cache.getBytes("big_bytes"));
        assertEquals(Long.MIN_VALUE, cache.getLong("i64").getAsLong());
        assertEquals(Long.MIN_VALUE, cache.getLong("i64", 0));
        assertEquals(-0.5, cache.getDouble("f64").getAsDouble());
        assertEquals(-0.5, cache.getDouble("f64", 0));
        assertTrue(Double.isNaN(cache.getDouble("nan", 0)));
        assertTrue(cache.getBoolean("t").orElseThrow());
        assertTrue(cache.getBoolean("t", false));
        assertFalse(cache.getBoolean("f", true));
        assertArrayEquals(new float[] {1f, Float.MAX_VALUE, -0f}, cache.getFloatArray("f32"));
        assertArrayEquals(new float[0], cache.getFloatArray("empty_f32"));
        assertArrayEquals(new double[] {1e-300, 2, 3}, cache.getDoubleArray("f64s"));
        assertEquals(List.of("a", "", "ß", "🌍"), cache.getStringList("strs"));
        assertEquals(List.of(), cache.getStringList("empty_strs"));
        assertEquals(42, cache.getLong(new byte[] {(byte) 0xff, 0, 1}, 0));
        assertEquals("longest key", cache.getString(LONGEST_KEY));
        assertEquals("second", cache.getString("dup"), "the last insert wins");
    }

    @Test
    void stringKeysAreUtf8() {
        assertEquals(8, cache.getLong("ключ 🔑", 0), "non-ASCII String key");
        assertEquals(8, cache.getLong("ключ 🔑".getBytes(StandardCharsets.UTF_8), 0));
        assertTrue(cache.contains("ключ 🔑"));
        assertFalse(cache.contains("ключ"));
        String longest = new String(LONGEST_KEY, StandardCharsets.US_ASCII);
        assertEquals("longest key", cache.getString(longest), "ASCII key of the maximum length");
        assertNull(cache.getString(longest + "k"), "one char too long");
        assertNull(cache.getString("é".repeat(LarderCache.KEY_LEN_MAX / 2 + 1)),
                "short in chars, too long in UTF-8");
    }

    @Test
    void getReturnsTypedObjects() {
        assertArrayEquals(new byte[] {0, -1, 127}, (byte[]) cache.get("bytes"));
        assertEquals("héllo 🌍", cache.get("str"));
        assertEquals(BIG, cache.get("big_str"));
        assertEquals(Long.MIN_VALUE, cache.get("i64"));
        assertEquals(-0.5, cache.get("f64"));
        assertEquals(Boolean.TRUE, cache.get("t"));
        assertEquals(Boolean.FALSE, cache.get("f"));
        assertArrayEquals(new float[] {1f, Float.MAX_VALUE, -0f}, (float[]) cache.get("f32"));
        assertArrayEquals(new double[] {1e-300, 2, 3}, (double[]) cache.get("f64s"));
        assertEquals(List.of("a", "", "ß", "🌍"), cache.get("strs"));
        assertNull(cache.get("absent"));
        assertEquals(ValueType.F32_LIST, cache.typeOf("f32"));
        assertEquals(ValueType.STR, cache.typeOf("str"));
        assertNull(cache.typeOf("absent"));
    }

    @Test
    void buffersAreReadOnlyViewsOfTheMapping() {
        DoubleBuffer d = cache.getDoubleBuffer("f64s");
        assertTrue(d.isReadOnly());
        assertTrue(d.isDirect());
        assertEquals(ByteOrder.LITTLE_ENDIAN, d.order());
        assertEquals(3, d.remaining());
        assertEquals(1e-300, d.get(0));
        assertEquals(3.0, d.get(2));
        assertThrows(ReadOnlyBufferException.class, () -> d.put(0, 1.0));
        FloatBuffer f = cache.getFloatBuffer("f32");
        assertTrue(f.isReadOnly());
        assertEquals(Float.MAX_VALUE, f.get(1));
        assertEquals(0, cache.getFloatBuffer("empty_f32").remaining());
        assertNull(cache.getDoubleBuffer("absent"));
    }

    @Test
    void absentKeysGiveNullEmptyOrDefault() {
        String k = "absent";
        assertFalse(cache.contains(k));
        assertTrue(cache.contains("str"));
        assertNull(cache.getString(k));
        assertNull(cache.getBytes(k));
        assertFalse(cache.getLong(k).isPresent());
        assertEquals(-1, cache.getLong(k, -1));
        assertFalse(cache.getDouble(k).isPresent());
        assertEquals(2.5, cache.getDouble(k, 2.5));
        assertFalse(cache.getBoolean(k).isPresent());
        assertTrue(cache.getBoolean(k, true));
        assertNull(cache.getFloatArray(k));
        assertNull(cache.getDoubleArray(k));
        assertNull(cache.getFloatBuffer(k));
        assertNull(cache.getStringList(k));
        byte[] tooLong = new byte[LarderCache.KEY_LEN_MAX + 1];
        assertNull(cache.getString(tooLong));
        assertFalse(cache.contains(tooLong));
        assertEquals(3, cache.getLong(tooLong, 3));
    }

    /** Each typed getter, applied to a key that holds another type. */
    static Stream<Function<String, Object>> getters() {
        return Stream.of(cache::getString, cache::getBytes, cache::getLong, cache::getDouble,
                cache::getBoolean, cache::getFloatArray, cache::getDoubleArray,
                cache::getFloatBuffer, cache::getDoubleBuffer, cache::getStringList);
    }

    @Test
    void everyGetterRefusesEveryOtherType() {
        List<String> keys = List.of("bytes", "str", "i64", "f64", "t", "f32", "f64s", "strs");
        List<ValueType> types = List.of(ValueType.BYTES, ValueType.STR, ValueType.I64,
                ValueType.F64, ValueType.BOOL, ValueType.F32_LIST, ValueType.F64_LIST,
                ValueType.STR_LIST);
        List<Function<String, Object>> getters = getters().toList();
        // Getter i reads type i (getBytes reads STR too; getFloatBuffer, getDoubleBuffer and
        // getStringList are the eighth, ninth and tenth getters).
        ValueType[] reads = {ValueType.STR, ValueType.BYTES, ValueType.I64, ValueType.F64,
                ValueType.BOOL, ValueType.F32_LIST, ValueType.F64_LIST, ValueType.F32_LIST,
                ValueType.F64_LIST, ValueType.STR_LIST};
        int mismatches = 0;
        for (int g = 0; g < getters.size(); g++) {
            for (int k = 0; k < keys.size(); k++) {
                ValueType stored = types.get(k);
                boolean readable = stored == reads[g]
                        || (reads[g] == ValueType.BYTES && stored == ValueType.STR);
                Function<String, Object> getter = getters.get(g);
                String key = keys.get(k);
                if (readable) {
                    getter.apply(key);
                    continue;
                }
                TypeMismatchException e = assertThrows(TypeMismatchException.class,
                        () -> getter.apply(key), "getter " + g + " on " + key);
                assertEquals(stored, e.found());
                assertEquals(reads[g], e.expected());
                assertTrue(e.getMessage().contains("type mismatch"), e.getMessage());
                mismatches++;
            }
        }
        assertEquals(69, mismatches);
    }

    @Test
    void builderRules(@TempDir Path tmp) throws IOException {
        Path path = tmp.resolve("rules.lcache");
        LarderCacheBuilder b = LarderCacheBuilder.create(path);
        b.putLong("a", 1);
        assertThrows(IllegalStateException.class, b::dedup, "dedup after the first put");
        assertThrows(IllegalArgumentException.class,
                () -> b.putLong(new byte[LarderCache.KEY_LEN_MAX + 1], 1));
        b.close();
        assertFalse(Files.exists(path), "an unfinished build leaves no file");
        try (Stream<Path> left = Files.list(tmp)) {
            assertEquals(0, left.count(), "and no temporary file");
        }
        assertThrows(IllegalStateException.class, () -> b.putLong("b", 2));

        LarderCacheBuilder strict = LarderCacheBuilder.create(path).rejectDuplicateKeys();
        strict.putLong("a", 1).putLong("a", 2);
        assertThrows(DuplicateKeyException.class, strict::finish);
        assertThrows(IllegalStateException.class, strict::finish, "finish consumes the builder");
        assertFalse(Files.exists(path));

        LarderCacheBuilder named = LarderCacheBuilder.create(path);
        assertThrows(IllegalArgumentException.class, () -> named.name("n".repeat(257)));
        named.close();

        try (LarderCacheBuilder dedup = LarderCacheBuilder.create(path).dedup()) {
            String value = "a value long enough to share between keys";
            for (int i = 0; i < 100; i++) {
                dedup.putString("k" + i, value);
            }
            BuildStats s = dedup.finish();
            assertEquals(99, s.dedupedValues());
            assertTrue(s.dedupSavedBytes() > 98 * 30, "saved " + s.dedupSavedBytes());
        }
        try (LarderCache c = LarderCache.open(path)) {
            assertEquals("a value long enough to share between keys", c.getString("k99"));
            assertTrue(c.info().dedup());
            c.verify();
        }
    }
}
