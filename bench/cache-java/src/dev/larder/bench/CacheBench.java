package dev.larder.bench;

import dev.larder.cache.BuildStats;
import dev.larder.cache.LarderCache;
import dev.larder.cache.LarderCacheBuilder;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;

/**
 * AxonCache's benchmark for the Java binding: insert N keys {@code key_<i>} -> {@code val_<i>},
 * then look every key up in shuffled order; R runs; mean and standard deviation of ns per
 * insert and per lookup; larder cache file against {@code java.util.HashMap<String, String>}.
 *
 * <p>Usage: {@code java ... dev.larder.bench.CacheBench [--keys N] [--runs R] [--warmup W]
 * [--dir DIR]}
 *
 * <p>Method (the Rust benchmark's, {@code bench/cache-rust}, where it applies):
 * <ul>
 *   <li>Keys and values (String, and the keys' UTF-8 bytes) are generated before timing. The
 *       lookup order is a fixed-seed shuffle (the Rust benchmark's xorshift), the same for every
 *       store. Every lookup reads the value: its length and last character go into a checked
 *       sum.
 *   <li>A plain timed loop, not JMH. Warm-up: W untimed runs of every store (build and lookup
 *       pass over all N keys) before the timed runs, so that the JIT has compiled the loops
 *       (C2) before any timing. Runs are interleaved (run 1 of every store, then run 2, ...),
 *       and {@code System.gc()} runs untimed before each store's run.
 *   <li>Times are thread CPU time ({@code ThreadMXBean.getCurrentThreadCpuTime}; the machine is
 *       shared), with wall time in the last columns. "insert" is the whole build divided by N:
 *       for larder that includes {@code finish} (index, header, fsync, rename).
 *   <li>Stores: HashMap built with {@code new HashMap<>()} and {@code put(key, value)};
 *       larder with {@code putString} and read with {@code getString}, once with pre-encoded
 *       {@code byte[]} keys and once with the same String keys as the HashMap (each lookup then
 *       also encodes the key to UTF-8).
 *   <li>The HashMap holds key objects built separately from the lookup keys (equal strings,
 *       distinct objects), as a map loaded from a file holds them, and as the Rust benchmark's
 *       maps hold clones of the lookup keys: {@code equals} then compares bytes. A second
 *       HashMap row looks up with the very instances it holds ({@code equals} succeeds on
 *       identity); the ratio column is against the first HashMap row.
 * </ul>
 */
public final class CacheBench {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private CacheBench() {}

    /** One run of one store: ns per key from thread CPU time, and from wall time. */
    record Run(double insertNs, double insertWallNs, double lookupNs, double lookupWallNs,
            double buildMs, long fileBytes) {}

    /** A store under test. */
    interface Store {
        String name();

        /** Builds the store from all pairs (timed by the caller); returns file bytes or 0. */
        long build(Data data) throws Exception;

        /** Looks every key up in order; returns the checked sum. */
        long lookupAll(Data data);

        /** Frees what build made. */
        void drop() throws Exception;
    }

    /** The data set, built before any timing. */
    static final class Data {
        /** The keys looked up. */
        final String[] keys;
        /** Equal to {@link #keys} but separate objects: what a map holds after loading. */
        final String[] storedKeys;
        final byte[][] keyBytes;
        final String[] values;
        final int[] order;
        final Path dir;
        final long expected;
        final long rawBytes;

        Data(int n, Path dir) {
            this.dir = dir;
            keys = new String[n];
            storedKeys = new String[n];
            keyBytes = new byte[n][];
            values = new String[n];
            long expected = 0;
            long raw = 0;
            for (int i = 0; i < n; i++) {
                keys[i] = "key_" + i;
                storedKeys[i] = "key_" + i;
                keyBytes[i] = keys[i].getBytes(StandardCharsets.UTF_8);
                values[i] = "val_" + i;
                expected += use(values[i]);
                raw += keys[i].length() + values[i].length();
            }
            this.expected = expected;
            this.rawBytes = raw;
            order = shuffled(n);
        }
    }

    /** What every store does with a value: read its length and last character. */
    static long use(String v) {
        return v.length() + (v.charAt(v.length() - 1) == '\uffff' ? 1 : 0);
    }

    /** The Rust benchmark's fixed-seed Fisher-Yates shuffle (xorshift64*). */
    static int[] shuffled(int n) {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        long s = 0x9E3779B97F4A7C15L;
        for (int i = n - 1; i >= 1; i--) {
            s ^= s >>> 12;
            s ^= s << 25;
            s ^= s >>> 27;
            int j = (int) Long.remainderUnsigned(s * 0x2545F4914F6CDD1DL, i + 1L);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        return order;
    }

    static final class JavaHashMap implements Store {
        private final boolean sameInstances;
        private HashMap<String, String> map;

        /**
         * A HashMap holding {@code storedKeys}; or, with {@code sameInstances}, holding the very
         * String objects that are looked up, so that {@code equals} succeeds on identity and
         * never reads the stored key's bytes.
         */
        JavaHashMap(boolean sameInstances) {
            this.sameInstances = sameInstances;
        }

        @Override
        public String name() {
            return sameInstances ? "java.util.HashMap<String,String> (same key instances)"
                    : "java.util.HashMap<String,String>";
        }

        @Override
        public long build(Data d) {
            map = new HashMap<>();
            String[] keys = sameInstances ? d.keys : d.storedKeys;
            for (int i = 0; i < keys.length; i++) {
                map.put(keys[i], d.values[i]);
            }
            return 0;
        }

        @Override
        public long lookupAll(Data d) {
            HashMap<String, String> m = map;
            String[] keys = d.keys;
            long total = 0;
            for (int i : d.order) {
                String v = m.get(keys[i]);
                total += v == null ? 0 : use(v);
            }
            return total;
        }

        @Override
        public void drop() {
            map = null;
        }
    }

    static final class Larder implements Store {
        private final boolean byteKeys;
        private LarderCache cache;
        private Path path;

        Larder(boolean byteKeys) {
            this.byteKeys = byteKeys;
        }

        @Override
        public String name() {
            return byteKeys ? "larder cache file (byte[] keys)" : "larder cache file (String keys)";
        }

        @Override
        public long build(Data d) {
            path = d.dir.resolve(byteKeys ? "bench-bytes.lcache" : "bench-strings.lcache");
            BuildStats stats;
            try (LarderCacheBuilder b = LarderCacheBuilder.create(path).name("bench")) {
                if (byteKeys) {
                    for (int i = 0; i < d.keys.length; i++) {
                        b.putString(d.keyBytes[i], d.values[i]);
                    }
                } else {
                    for (int i = 0; i < d.keys.length; i++) {
                        b.putString(d.keys[i], d.values[i]);
                    }
                }
                stats = b.finish();
            }
            cache = LarderCache.open(path);
            return stats.fileBytes();
        }

        @Override
        public long lookupAll(Data d) {
            LarderCache c = cache;
            long total = 0;
            if (byteKeys) {
                byte[][] keys = d.keyBytes;
                for (int i : d.order) {
                    String v = c.getString(keys[i]);
                    total += v == null ? 0 : use(v);
                }
            } else {
                String[] keys = d.keys;
                for (int i : d.order) {
                    String v = c.getString(keys[i]);
                    total += v == null ? 0 : use(v);
                }
            }
            return total;
        }

        @Override
        public void drop() throws Exception {
            cache.close();
            cache = null;
            Files.deleteIfExists(path);
        }
    }

    static Run runStore(Store store, Data d) throws Exception {
        double n = d.keys.length;
        System.gc();
        long wall = System.nanoTime();
        long cpu = THREADS.getCurrentThreadCpuTime();
        long fileBytes = store.build(d);
        long buildCpu = THREADS.getCurrentThreadCpuTime() - cpu;
        long buildWall = System.nanoTime() - wall;
        wall = System.nanoTime();
        cpu = THREADS.getCurrentThreadCpuTime();
        long total = store.lookupAll(d);
        long lookupCpu = THREADS.getCurrentThreadCpuTime() - cpu;
        long lookupWall = System.nanoTime() - wall;
        if (total != d.expected) {
            throw new AssertionError(store.name() + " returned wrong values: " + total + " != "
                    + d.expected);
        }
        store.drop();
        return new Run(buildCpu / n, buildWall / n, lookupCpu / n, lookupWall / n,
                buildWall / 1e6, fileBytes);
    }

    static double[] meanSd(List<Run> runs, java.util.function.ToDoubleFunction<Run> f) {
        double mean = runs.stream().mapToDouble(f).average().orElse(0);
        double var = runs.stream().mapToDouble(r -> Math.pow(f.applyAsDouble(r) - mean, 2)).sum()
                / Math.max(1, runs.size() - 1);
        return new double[] {mean, Math.sqrt(var)};
    }

    static String pm(double[] ms) {
        return String.format(Locale.ROOT, "%.1f ± %.1f", ms[0], ms[1]);
    }

    public static void main(String[] args) throws Exception {
        int keys = 1_000_000;
        int runs = 3;
        int warmup = 1;
        Path dir = Path.of(System.getProperty("java.io.tmpdir"), "larder-cache-bench-java");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--keys" -> keys = Integer.parseInt(args[++i]);
                case "--runs" -> runs = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--dir" -> dir = Path.of(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Files.createDirectories(dir);
        Data data = new Data(keys, dir);
        List<Store> stores = List.of(new Larder(true), new Larder(false),
                new JavaHashMap(false), new JavaHashMap(true));
        for (int w = 0; w < warmup; w++) {
            for (Store s : stores) {
                System.err.printf(Locale.ROOT, "warm-up %d: %s ...%n", w + 1, s.name());
                runStore(s, data);
            }
        }
        List<List<Run>> results = new ArrayList<>();
        for (int s = 0; s < stores.size(); s++) {
            results.add(new ArrayList<>());
        }
        for (int r = 0; r < runs; r++) {
            for (int s = 0; s < stores.size(); s++) {
                Run run = runStore(stores.get(s), data);
                results.get(s).add(run);
                System.err.printf(Locale.ROOT, "run %d: %s: insert %.1f ns cpu (%.1f wall), "
                        + "lookup %.1f ns cpu (%.1f wall)%n", r + 1, stores.get(s).name(),
                        run.insertNs(), run.insertWallNs(), run.lookupNs(), run.lookupWallNs());
            }
        }
        double hashMapLookup = meanSd(results.get(2), Run::lookupNs)[0];
        System.out.printf(Locale.ROOT, "%d keys, %d runs after %d warm-up run(s); raw key+value "
                + "bytes %d; %s %s, %s%n%n", keys, runs, warmup, data.rawBytes,
                System.getProperty("java.vm.name"), System.getProperty("java.version"),
                System.getProperty("os.arch"));
        System.out.println("| store | lookup ns (mean ± sd) | insert ns (mean ± sd) | "
                + "build ms (wall) | file bytes | file / raw | lookup / HashMap | "
                + "lookup wall ns | insert wall ns |");
        System.out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (int s = 0; s < stores.size(); s++) {
            List<Run> rs = results.get(s);
            double[] lookup = meanSd(rs, Run::lookupNs);
            long file = rs.get(rs.size() - 1).fileBytes();
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %.0f | %s | %s | %.2fx | %s | %s |%n",
                    stores.get(s).name(), pm(lookup), pm(meanSd(rs, Run::insertNs)),
                    meanSd(rs, Run::buildMs)[0], file == 0 ? "in memory" : Long.toString(file),
                    file == 0 ? "-" : String.format(Locale.ROOT, "%.2f",
                            (double) file / data.rawBytes),
                    lookup[0] / hashMapLookup, pm(meanSd(rs, Run::lookupWallNs)),
                    pm(meanSd(rs, Run::insertWallNs)));
        }
    }
}
