package dev.larder.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.DoubleBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** SwappingCache: following a path or a pointer file to newly published cache files. */
class SwappingCacheTest {
    @TempDir
    Path dir;

    /** A file whose every value says which generation it is. */
    static void build(Path path, long generation) {
        try (LarderCacheBuilder b = LarderCacheBuilder.create(path)) {
            b.name("gen" + generation);
            b.putLong("generation", generation);
            b.putString("label", "file " + generation);
            b.putDoubleArray("vector", new double[] {generation, generation});
            b.finish();
        }
    }

    static long generation(LarderCache c) {
        return c.getLong("generation").orElseThrow();
    }

    /** Writes a pointer file through a temporary file and a rename. */
    static void publishPointer(Path pointer, String text) throws IOException {
        Path tmp = pointer.resolveSibling(pointer.getFileName() + ".tmp");
        Files.writeString(tmp, text, StandardCharsets.UTF_8);
        Files.move(tmp, pointer, StandardCopyOption.ATOMIC_MOVE,
                StandardCopyOption.REPLACE_EXISTING);
    }

    @Test
    void renameOntoWatchedPathSwapsOnRefresh() throws IOException {
        Path live = dir.resolve("live.lcache");
        build(live, 1);
        SwappingCache sw = SwappingCache.watchPath(live);
        assertEquals(live, sw.path());
        assertFalse(sw.isPointer());
        LarderCache before = sw.current();
        DoubleBuffer vectorBefore = before.getDoubleBuffer("vector"); // a view of file 1
        assertEquals(1, generation(before));
        assertFalse(sw.refresh());

        Path next = dir.resolve("next.lcache");
        build(next, 2);
        Files.move(next, live, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        assertTrue(sw.refresh());
        assertFalse(sw.refresh());

        // Old lookups finish on the old mapping; new ones use the new file.
        assertEquals(1, generation(before));
        assertEquals("file 1", before.getString("label"));
        assertEquals(1.0, vectorBefore.get(1));
        LarderCache after = sw.current();
        assertNotSame(before, after);
        assertEquals(2, generation(after));
        assertEquals("gen2", after.info().name());
        assertEquals(3, after.size());
        assertEquals(live, after.path());

        // Caches outlive their swapper; closing one leaves the others readable.
        sw.close();
        sw.close();
        assertTrue(sw.isClosed());
        assertThrows(IllegalStateException.class, sw::refresh);
        assertThrows(IllegalStateException.class, sw::current);
        assertEquals(2, generation(after));
        assertEquals(1, generation(before));
        before.close();
        assertEquals(2, generation(after));
        after.close();
    }

    @Test
    void currentHandlesOfOneFileAreIndependent() {
        Path live = dir.resolve("live.lcache");
        build(live, 1);
        try (SwappingCache sw = SwappingCache.watchPath(live)) {
            LarderCache a = sw.current();
            LarderCache b = sw.current();
            a.close();
            assertThrows(IllegalStateException.class, () -> a.getLong("generation"));
            assertEquals(1, generation(b));
            b.close();
            try (LarderCache c = sw.current()) {
                assertEquals(1, generation(c));
            }
        }
    }

    @Test
    void pointerFile() throws IOException {
        build(dir.resolve("v1.lcache"), 1);
        build(dir.resolve("v2.lcache"), 2);
        Files.write(dir.resolve("junk.lcache"), "not a cache file ".repeat(64).getBytes());
        Path pointer = dir.resolve("CURRENT");
        publishPointer(pointer, "v1.lcache\n"); // relative to the pointer's directory
        try (SwappingCache sw = SwappingCache.watchPointer(pointer);
                LarderCache held = sw.current()) {
            assertTrue(sw.isPointer());
            assertFalse(sw.refresh());
            publishPointer(pointer, dir.resolve("v2.lcache").toString()); // absolute works too
            assertTrue(sw.refresh());
            try (LarderCache now = sw.current()) {
                assertEquals(2, generation(now));
            }
            assertEquals(1, generation(held));

            // A bad pointer throws, and the current file stays in service.
            publishPointer(pointer, "junk.lcache");
            assertThrows(CorruptCacheException.class, sw::refresh);
            publishPointer(pointer, "missing.lcache");
            LarderCacheException missing = assertThrows(LarderCacheException.class, sw::refresh);
            assertEquals(LarderCacheException.class, missing.getClass());
            publishPointer(pointer, "  \n");
            LarderCacheException empty = assertThrows(LarderCacheException.class, sw::refresh);
            assertTrue(empty.getMessage().contains("empty"), empty.getMessage());
            try (LarderCache now = sw.current()) {
                assertEquals(2, generation(now));
            }

            publishPointer(pointer, "v1.lcache");
            assertTrue(sw.refresh());
            try (LarderCache now = sw.current()) {
                assertEquals(1, generation(now));
            }
        }
    }

    @Test
    void openErrors() throws IOException {
        assertThrows(LarderCacheException.class,
                () -> SwappingCache.watchPath(dir.resolve("missing.lcache")));
        assertThrows(LarderCacheException.class,
                () -> SwappingCache.watchPointer(dir.resolve("NO-POINTER")));
        Files.write(dir.resolve("junk.lcache"), "not a cache file ".repeat(64).getBytes());
        publishPointer(dir.resolve("BAD"), "junk.lcache");
        assertThrows(CorruptCacheException.class,
                () -> SwappingCache.watchPointer(dir.resolve("BAD")));
        assertThrows(CorruptCacheException.class,
                () -> SwappingCache.watchPath(dir.resolve("junk.lcache")));
        assertThrows(NullPointerException.class, () -> SwappingCache.watchPath(null));
    }

    /** Readers take a cache per batch while the files are replaced: each batch sees one file. */
    @Test
    void readersSeeWholeFilesWhileSwapping() throws Exception {
        Path live = dir.resolve("live.lcache");
        build(live, 0);
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicBoolean stop = new AtomicBoolean();
        try (SwappingCache sw = SwappingCache.watchPath(live)) {
            List<Future<Long>> readers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                readers.add(pool.submit(() -> {
                    long last = 0;
                    long batches = 0;
                    while (!stop.get()) {
                        try (LarderCache c = sw.current()) {
                            long g = generation(c);
                            assertEquals("file " + g, c.getString("label"));
                            assertEquals(g, c.getDoubleArray("vector")[1]);
                            assertTrue(g >= last);
                            last = g;
                            batches++;
                        }
                    }
                    return batches;
                }));
            }
            for (long g = 1; g <= 5; g++) {
                build(live, g); // the builder renames onto live
                assertTrue(sw.refresh());
            }
            stop.set(true);
            for (Future<Long> r : readers) {
                assertTrue(r.get() > 0);
            }
            try (LarderCache c = sw.current()) {
                assertEquals(5, generation(c));
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
