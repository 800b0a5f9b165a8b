package dev.larder.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The examples in {@code bindings/java/README.md}, compiled and run; other tests check that the
 * README still shows exactly this code.
 */
class ReadmeExampleTest {
    @TempDir
    Path dir;

    @Test
    void readmeExampleRuns() throws IOException {
        // README-BEGIN
        Path file = dir.resolve("features.lcache");
        try (LarderCacheBuilder b = LarderCacheBuilder.create(file).name("features").dedup()) {
            b.putDouble("user:42:score", 0.93);
            b.putFloatArray("user:42:embedding", new float[] {0.1f, 0.2f, 0.3f});
            b.putStringList("user:42:tags", List.of("new", "mobile"));
            BuildStats stats = b.finish(); // temp file + rename: readers never see half a file
            System.out.println(stats.keyCount() + " keys, " + stats.fileBytes() + " bytes");
        }

        try (LarderCache cache = LarderCache.open(file)) { // mmap, O(1)
            double score = cache.getDouble("user:42:score").orElse(0.0);
            FloatBuffer embedding = cache.getFloatBuffer("user:42:embedding"); // zero-copy
            List<String> tags = cache.getStringList("user:42:tags");
            String name = cache.getString("user:42:name"); // null: absent
            // ...
            // README-END
            assertEquals(0.93, score);
            assertEquals(0.2f, embedding.get(1));
            assertEquals(List.of("new", "mobile"), tags);
            assertNull(name);
        }
    }

    @Test
    void swapExampleRuns() {
        // SWAP-BEGIN
        Path live = dir.resolve("prices.lcache");
        try (LarderCacheBuilder b = LarderCacheBuilder.create(live)) {
            b.putDouble("apple", 1.25).finish();
        }
        SwappingCache prices = SwappingCache.watchPath(live); // or watchPointer(pointerFile)
        LarderCache old = prices.current(); // reads this file until closed, whatever follows
        try (LarderCacheBuilder b = LarderCacheBuilder.create(live)) { // renamed onto live
            b.putDouble("apple", 1.40).finish();
        }
        boolean swapped = prices.refresh(); // true; call it from a scheduled task, say
        LarderCache now = prices.current(); // the new file
        double apple = now.getDouble("apple").orElse(0.0); // 1.40
        double before = old.getDouble("apple").orElse(0.0); // 1.25: old lookups, old file
        now.close();
        old.close();
        prices.close();
        // SWAP-END
        assertTrue(swapped);
        assertEquals(1.40, apple);
        assertEquals(1.25, before);
    }

    @Test
    void readmeShowsThisCode() throws IOException {
        String body = marked("README");
        // The marked region ends inside the second try block; the README closes it.
        int indent = body.length() - body.stripLeading().length();
        String tested = body + "\n" + " ".repeat(indent) + "}";
        assertEquals(dedent(tested), dedent(javaBlock(0)));
    }

    @Test
    void readmeShowsSwapCode() throws IOException {
        assertEquals(dedent(marked("SWAP")), dedent(javaBlock(1)));
    }

    /** The README's {@code n}th java code block. */
    private static String javaBlock(int n) throws IOException {
        String readme = Files.readString(Path.of("README.md"));
        int open = -1;
        for (int i = 0; i <= n; i++) {
            open = readme.indexOf("```java\n", open + 1);
            assertTrue(open >= 0, "README.md has java code block " + n);
        }
        int close = readme.indexOf("```", open + 8);
        return readme.substring(open + 8, close).strip();
    }

    /** The code of this file between {@code // NAME-BEGIN} and {@code // NAME-END}. */
    private static String marked(String name) throws IOException {
        String source = Files.readString(
                Path.of("src/test/java/dev/larder/cache/ReadmeExampleTest.java"));
        String beginMarker = "// " + name + "-BEGIN\n";
        int begin = source.indexOf(beginMarker) + beginMarker.length();
        int end = source.indexOf("// " + name + "-END");
        return source.substring(begin, end).stripTrailing();
    }

    /** Removes the common leading indentation, so the README may show the code unindented. */
    private static String dedent(String code) {
        List<String> lines = code.lines().toList();
        int indent = lines.stream().filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
        StringBuilder out = new StringBuilder();
        for (String line : lines) {
            out.append(line.isBlank() ? "" : line.substring(Math.min(indent, line.length())))
                    .append('\n');
        }
        return out.toString().strip();
    }
}
