package dev.larder.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One cache shared by many threads; closing it under them; using it after close. */
class ConcurrencyTest {
    static final int KEYS = 20_000;

    @TempDir
    static Path dir;
    static Path path;

    @BeforeAll
    static void build() {
        path = dir.resolve("shared.lcache");
        try (LarderCacheBuilder b = LarderCacheBuilder.create(path)) {
            for (int i = 0; i < KEYS; i++) {
                b.putString("key_" + i, "val_" + i);
                b.putLong("n_" + i, i);
            }
            b.finish();
        }
    }

    @Test
    void concurrentReadersSeeEveryValue() throws Exception {
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (LarderCache cache = LarderCache.open(path)) {
            List<Future<Long>> results = new ArrayList<>();
            CountDownLatch start = new CountDownLatch(1);
            for (int t = 0; t < threads; t++) {
                long seed = t;
                results.add(pool.submit(() -> {
                    start.await();
                    SplittableRandom random = new SplittableRandom(seed);
                    long checked = 0;
                    for (int n = 0; n < 50_000; n++) {
                        int i = random.nextInt(KEYS);
                        byte[] key = ("key_" + i).getBytes(StandardCharsets.UTF_8);
                        assertEquals("val_" + i, cache.getString(key));
                        assertEquals(i, cache.getLong("n_" + i, -1));
                        assertFalse(cache.contains("missing_" + i));
                        checked++;
                    }
                    return checked;
                }));
            }
            start.countDown();
            long total = 0;
            for (Future<Long> f : results) {
                total += f.get(2, TimeUnit.MINUTES);
            }
            assertEquals(threads * 50_000L, total);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void closeWaitsForReadersAndStopsThem() throws Exception {
        int threads = 4;
        LarderCache cache = LarderCache.open(path);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong lookups = new AtomicLong();
        List<Future<Throwable>> results = new ArrayList<>();
        CountDownLatch running = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
            long seed = t;
            results.add(pool.submit(() -> {
                SplittableRandom random = new SplittableRandom(seed);
                running.countDown();
                try {
                    while (!stop.get()) {
                        int i = random.nextInt(KEYS);
                        // A lookup either completes with the right value or sees the close.
                        assertEquals("val_" + i, cache.getString("key_" + i));
                        lookups.incrementAndGet();
                    }
                    return null;
                } catch (IllegalStateException expected) {
                    return expected;
                }
            }));
        }
        running.await();
        while (lookups.get() < 10_000) {
            Thread.onSpinWait();
        }
        cache.close();
        for (Future<Throwable> f : results) {
            Throwable t = f.get(1, TimeUnit.MINUTES);
            assertTrue(t instanceof IllegalStateException, "each reader saw the close");
            assertTrue(t.getMessage().contains("closed"), t.getMessage());
        }
        stop.set(true);
        pool.shutdownNow();
    }

    @Test
    void everyCallAfterCloseThrows() {
        LarderCache cache = LarderCache.open(path);
        assertEquals("val_1", cache.getString("key_1"));
        cache.close();
        assertTrue(cache.isClosed());
        cache.close(); // closing twice is allowed
        List<Runnable> calls = List.of(cache::size, cache::info, cache::verify,
                () -> cache.contains("key_1"), () -> cache.typeOf("key_1"),
                () -> cache.getString("key_1"), () -> cache.getBytes("key_1"),
                () -> cache.getLong("n_1"), () -> cache.getLong("n_1", 0),
                () -> cache.getDouble("n_1"), () -> cache.getBoolean("n_1"),
                () -> cache.getFloatArray("n_1"), () -> cache.getDoubleArray("n_1"),
                () -> cache.getFloatBuffer("n_1"), () -> cache.getDoubleBuffer("n_1"),
                () -> cache.getStringList("n_1"), () -> cache.get("n_1"));
        for (Runnable call : calls) {
            IllegalStateException e = assertThrows(IllegalStateException.class, call::run);
            assertTrue(e.getMessage().startsWith("cache is closed"), e.getMessage());
        }
    }
}
