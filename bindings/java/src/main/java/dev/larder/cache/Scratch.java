package dev.larder.cache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A thread's direct buffer for passing keys to, and short values from, the native library, and
 * the thread's hazard slot that lets {@link LarderCache#close()} wait for lookups in flight.
 *
 * <p>Keys are written at offset 0; the native side reads them in place and writes fixed-size
 * values (little-endian) and byte values that fit back at offset 0. A buffer grows (is
 * replaced) when a key does not fit; values that do not fit are returned as new arrays
 * instead, so the buffer stays at most the size of the longest key.
 *
 * <p>Hazard slot: a lookup publishes the handle it is about to use in {@link #busy} (a volatile
 * write), then re-reads the cache's handle; {@code close} clears the handle, then waits until
 * no registered scratch has it in {@code busy}. Either the lookup sees the cleared handle and
 * backs off, or close sees the lookup and waits: the mapping is never freed under a lookup.
 * Each thread writes only its own slot, so readers on different threads share no cache line.
 */
final class Scratch {
    /** Initial capacity; also the size below which byte values are copied through the buffer. */
    static final int INITIAL_BYTES = 1024;

    private static final ThreadLocal<Scratch> PER_THREAD =
            ThreadLocal.withInitial(() -> new Scratch(INITIAL_BYTES));

    /** Every live thread's scratch, for close to scan. Dead threads' entries are pruned. */
    private static final ConcurrentLinkedQueue<WeakReference<Scratch>> ALL =
            new ConcurrentLinkedQueue<>();

    private static final VarHandle BUSY;

    static {
        try {
            BUSY = MethodHandles.lookup().findVarHandle(Scratch.class, "busy", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Little-endian; position and limit are never used (only absolute gets and puts). */
    final ByteBuffer buffer;
    /** The address of {@link #buffer}'s memory. */
    final long address;
    /** {@link #buffer}'s size. */
    final int capacity;
    /** The length of the key the last {@code withKey} wrote. */
    int keyLen;
    /** The cache handle this thread is using, or 0. Accessed through {@link #BUSY}. */
    @SuppressWarnings("unused")
    private volatile long busy;

    private Scratch(int capacity) {
        this.buffer = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
        this.address = NativeLib.scratchAddress(buffer);
        this.capacity = capacity;
        register(this);
    }

    private static void register(Scratch scratch) {
        for (Iterator<WeakReference<Scratch>> it = ALL.iterator(); it.hasNext(); ) {
            if (it.next().get() == null) {
                it.remove();
            }
        }
        ALL.add(new WeakReference<>(scratch));
    }

    /** This thread's scratch, at least {@code bytes} long. */
    static Scratch get(int bytes) {
        Scratch s = PER_THREAD.get();
        if (bytes > s.capacity) {
            s = new Scratch(Math.max(bytes, 2 * s.capacity));
            PER_THREAD.set(s);
        }
        return s;
    }

    /**
     * This thread's scratch holding {@code key} at offset 0 ({@link #keyLen} set), or null if
     * the key is longer than any stored key can be.
     */
    static Scratch withKey(byte[] key) {
        if (key.length > LarderCache.KEY_LEN_MAX) {
            return null;
        }
        Scratch s = get(key.length);
        s.buffer.put(0, key);
        s.keyLen = key.length;
        return s;
    }

    /**
     * This thread's scratch holding {@code key}'s UTF-8 at offset 0 ({@link #keyLen} set), or
     * null if the key is longer than any stored key can be. ASCII keys are written char by
     * char, which spares the allocation of {@link String#getBytes}.
     */
    static Scratch withKey(String key) {
        int n = key.length();
        if (n > LarderCache.KEY_LEN_MAX) {
            return null; // every char takes at least one byte
        }
        Scratch s = get(n);
        ByteBuffer b = s.buffer;
        for (int i = 0; i < n; i++) {
            char c = key.charAt(i);
            if (c >= 0x80) {
                return withKey(key.getBytes(StandardCharsets.UTF_8));
            }
            b.put(i, (byte) c);
        }
        s.keyLen = n;
        return s;
    }

    /** Copies {@code len} bytes from offset 0. */
    byte[] bytes(int len) {
        byte[] out = new byte[len];
        buffer.get(0, out);
        return out;
    }

    /** Marks this thread as using {@code handle}; a full fence orders it before the re-check. */
    void enter(long handle) {
        BUSY.setVolatile(this, handle);
    }

    /** Ends the use that {@link #enter} began. */
    void exit() {
        BUSY.setRelease(this, 0L);
    }

    /** Waits until no thread is inside a call on {@code handle}. */
    static void awaitQuiescence(long handle) {
        for (WeakReference<Scratch> ref : ALL) {
            Scratch s = ref.get();
            if (s == null) {
                continue;
            }
            while ((long) BUSY.getVolatile(s) == handle) {
                Thread.onSpinWait();
            }
        }
    }
}
