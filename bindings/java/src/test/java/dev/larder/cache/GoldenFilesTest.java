package dev.larder.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The golden files in {@code testdata/cache/} (written by the Rust builder; see
 * {@code crates/larder-cache/tests/golden.rs}): every type read from Java, each corrupt variant
 * refused with the right exception, and the Java builder reproducing the file byte for byte.
 */
class GoldenFilesTest {
    static final Path GOLDEN = Path.of("../../testdata/cache");
    static final String LONG = "a string long enough to be deduplicated";
    static final byte[] BINARY_KEY = "binary\u0000key".getBytes(StandardCharsets.UTF_8);

    @Test
    void readsEveryTypeOfTheV1File() {
        try (LarderCache c = LarderCache.open(GOLDEN.resolve("v1-all-types.lcache"))) {
            assertEquals(13, c.size());
            assertArrayEquals(new byte[] {0, 1, 2, (byte) 0xfe, (byte) 0xff}, c.getBytes("bytes"));
            assertEquals("héllo wörld", c.getString("str"));
            assertEquals("", c.getString("empty_str"));
            assertEquals(-9_007_199_254_740_993L, c.getLong("i64").getAsLong());
            assertEquals(Math.PI, c.getDouble("f64").getAsDouble());
            assertEquals(true, c.getBoolean("bool_true").orElseThrow());
            assertEquals(false, c.getBoolean("bool_false").orElseThrow());
            assertArrayEquals(new float[] {1.5f, -2.25f, 1e-3f}, c.getFloatArray("f32_list"));
            assertArrayEquals(new double[] {0.1, 0.2, 0.3, 1e300}, c.getDoubleArray("f64_list"));
            assertEquals(List.of("alpha", "", "gamma δ"), c.getStringList("str_list"));
            assertEquals(LONG, c.getString("shared_1"));
            assertEquals(LONG, c.getString("shared_2"));
            assertEquals(7L, c.getLong(BINARY_KEY).getAsLong());
            assertFalse(c.getLong("absent").isPresent());

            FloatBuffer floats = c.getFloatBuffer("f32_list");
            assertEquals(3, floats.remaining());
            assertEquals(-2.25f, floats.get(1));
            DoubleBuffer doubles = c.getDoubleBuffer("f64_list");
            assertEquals(1e300, doubles.get(3));

            TypeMismatchException e = assertThrows(TypeMismatchException.class,
                    () -> c.getDouble("i64"));
            assertEquals(ValueType.F64, e.expected());
            assertEquals(ValueType.I64, e.found());

            CacheInfo info = c.info();
            assertEquals("golden-v1", info.name());
            assertEquals(1, info.formatVersion());
            assertEquals(1_767_225_600_000L, info.createdUnixMs());
            assertTrue(info.dedup());
            assertEquals(12, info.valueCount(), "one value shared by two keys");
            assertEquals(Files.size(GOLDEN.resolve("v1-all-types.lcache")), info.fileBytes());
            c.verify();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void truncatedFileIsCorrupt() {
        CorruptCacheException e = assertThrows(CorruptCacheException.class,
                () -> LarderCache.open(GOLDEN.resolve("v1-truncated.lcache")));
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
    }

    @Test
    void bitFlipInAValueFailsVerify() {
        // The flip is inside a value: the header is intact, so only the data checksum sees it.
        try (LarderCache c = LarderCache.open(GOLDEN.resolve("v1-bitflip.lcache"))) {
            CorruptCacheException e = assertThrows(CorruptCacheException.class, c::verify);
            assertTrue(e.getMessage().contains("data checksum"), e.getMessage());
        }
    }

    @Test
    void badHeaderChecksumIsCorrupt() {
        CorruptCacheException e = assertThrows(CorruptCacheException.class,
                () -> LarderCache.open(GOLDEN.resolve("v1-bad-header.lcache")));
        assertTrue(e.getMessage().contains("header checksum"), e.getMessage());
    }

    @Test
    void unknownVersionIsRefused() {
        UnsupportedVersionException e = assertThrows(UnsupportedVersionException.class,
                () -> LarderCache.open(GOLDEN.resolve("v2-unknown-version.lcache")));
        assertTrue(e.getMessage().contains("unsupported cache file format version 2"),
                e.getMessage());
    }

    @Test
    void notACacheFileAndMissingFile(@TempDir Path dir) throws IOException {
        Path text = dir.resolve("notes.txt");
        Files.writeString(text, "not a cache file, but long enough to hold a header? no.".repeat(20));
        assertThrows(CorruptCacheException.class, () -> LarderCache.open(text));
        LarderCacheException e = assertThrows(LarderCacheException.class,
                () -> LarderCache.open(dir.resolve("absent.lcache")));
        assertFalse(e instanceof CorruptCacheException);
        assertTrue(e.getMessage().contains("I/O"), e.getMessage());
    }

    @Test
    void javaBuilderReproducesTheGoldenBytes(@TempDir Path dir) throws IOException {
        Path path = dir.resolve("rebuilt.lcache");
        try (LarderCacheBuilder b = LarderCacheBuilder.create(path)) {
            b.name("golden-v1").dedup().createdUnixMs(1_767_225_600_000L);
            b.putBytes("bytes", new byte[] {0, 1, 2, (byte) 0xfe, (byte) 0xff});
            b.putString("str", "héllo wörld");
            b.putString("empty_str", "");
            b.putLong("i64", -9_007_199_254_740_993L);
            b.putDouble("f64", Math.PI);
            b.putBoolean("bool_true", true);
            b.putBoolean("bool_false", false);
            b.putFloatArray("f32_list", new float[] {1.5f, -2.25f, 1e-3f});
            b.putDoubleArray("f64_list", new double[] {0.1, 0.2, 0.3, 1e300});
            b.putStringList("str_list", List.of("alpha", "", "gamma δ"));
            b.putString("shared_1", LONG);
            b.putString("shared_2", LONG);
            b.putLong(BINARY_KEY, 7);
            BuildStats stats = b.finish();
            assertEquals(13, stats.keyCount());
            assertEquals(1, stats.dedupedValues());
        }
        assertArrayEquals(Files.readAllBytes(GOLDEN.resolve("v1-all-types.lcache")),
                Files.readAllBytes(path));
    }
}
