package dev.larder.cache;

import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.List;

/**
 * The native methods (the Rust crate in {@code bindings/java/native}) and the loading of their
 * library.
 *
 * <p>The library is loaded with {@link System#load} from, in order: the system property
 * {@value #PATH_PROPERTY} (the library file, or a directory holding it); the directory of the
 * binding's jar (or classes directory); {@code native/} in that directory and in its parent
 * (where {@code test.sh} puts it: {@code target/native/}); else {@link System#loadLibrary} on
 * {@code java.library.path}.
 *
 * <p>Lookups pass the key in the calling thread's {@link Scratch} buffer (its address, the key's
 * length, the buffer's capacity) so that a successful lookup makes no JNI call back into the
 * JVM; see {@code native/src/reader.rs} for the protocol. A negative return means "absent".
 * Errors arrive as pending exceptions.
 */
final class NativeLib {
    /** The system property naming the native library file or its directory. */
    static final String PATH_PROPERTY = "larder.native.path";

    /** The library's base name; the file is {@code liblarder_cache_jni.so} on Linux. */
    static final String LIBRARY_NAME = "larder_cache_jni";

    static {
        load();
    }

    private NativeLib() {}

    private static void load() {
        String fileName = System.mapLibraryName(LIBRARY_NAME);
        String configured = System.getProperty(PATH_PROPERTY);
        if (configured != null && !configured.isBlank()) {
            Path path = Path.of(configured);
            if (Files.isDirectory(path)) {
                path = path.resolve(fileName);
            }
            System.load(path.toAbsolutePath().toString());
            return;
        }
        List<Path> tried = new ArrayList<>();
        for (Path dir : searchDirectories()) {
            Path candidate = dir.resolve(fileName);
            tried.add(candidate);
            if (Files.isRegularFile(candidate)) {
                System.load(candidate.toAbsolutePath().toString());
                return;
            }
        }
        try {
            System.loadLibrary(LIBRARY_NAME);
        } catch (UnsatisfiedLinkError e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot find " + fileName
                    + ": set -D" + PATH_PROPERTY + "=PATH (looked in " + tried
                    + " and java.library.path)");
            error.initCause(e);
            throw error;
        }
    }

    /** The jar's (or classes directory's) directory, its native/ and its parent's native/. */
    private static List<Path> searchDirectories() {
        List<Path> dirs = new ArrayList<>();
        CodeSource source = NativeLib.class.getProtectionDomain().getCodeSource();
        if (source == null || source.getLocation() == null) {
            return dirs;
        }
        Path location;
        try {
            location = Path.of(source.getLocation().toURI());
        } catch (URISyntaxException | IllegalArgumentException e) {
            return dirs;
        }
        Path dir = Files.isDirectory(location) ? location : location.getParent();
        if (dir == null) {
            return dirs;
        }
        dirs.add(dir);
        dirs.add(dir.resolve("native"));
        if (dir.getParent() != null) {
            dirs.add(dir.getParent().resolve("native"));
        }
        return dirs;
    }

    // Reader.

    static native long open(String path);

    static native void close(long handle);

    static native long size(long handle);

    static native String name(long handle);

    static native long[] info(long handle);

    static native void verify(long handle);

    static native long scratchAddress(ByteBuffer buffer);

    static native int contains(long handle, long scratch, int keyLen);

    static native int valueType(long handle, long scratch, int keyLen);

    static native int getString(long handle, long scratch, int keyLen, int capacity);

    static native int getBytes(long handle, long scratch, int keyLen, int capacity);

    static native byte[] getLargeBytes(long handle, long scratch, int keyLen, int tag);

    static native int getLong(long handle, long scratch, int keyLen);

    static native int getDouble(long handle, long scratch, int keyLen);

    static native int getBoolean(long handle, long scratch, int keyLen);

    static native float[] getFloatArray(long handle, long scratch, int keyLen);

    static native double[] getDoubleArray(long handle, long scratch, int keyLen);

    static native ByteBuffer getFloatBuffer(long handle, long scratch, int keyLen);

    static native ByteBuffer getDoubleBuffer(long handle, long scratch, int keyLen);

    static native String[] getStringList(long handle, long scratch, int keyLen);

    static native Object get(long handle, long scratch, int keyLen);

    // Swapping.

    static native long watchPath(String path);

    static native long watchPointer(String pointerPath);

    static native boolean swapperRefresh(long handle);

    /** A new cache handle on the swapper's current file, to free with {@link #close}. */
    static native long swapperCurrent(long handle);

    static native void swapperClose(long handle);

    /** Panics in Rust: checks the panic boundary (tests only). */
    static native void panicForTest(String message);

    // Builder.

    static native long builderNew(String path);

    static native void builderName(long handle, String name);

    static native void builderDedup(long handle);

    static native void builderRejectDuplicates(long handle);

    static native long builderCreatedUnixMs(long handle, long ms);

    static native void putBytes(long handle, long scratch, int keyLen, int valueLen);

    static native void putString(long handle, long scratch, int keyLen, int valueLen);

    static native void putLong(long handle, long scratch, int keyLen, long value);

    static native void putDouble(long handle, long scratch, int keyLen, double value);

    static native void putBoolean(long handle, long scratch, int keyLen, boolean value);

    static native void putFloatArray(long handle, long scratch, int keyLen, float[] values);

    static native void putDoubleArray(long handle, long scratch, int keyLen, double[] values);

    static native void putStringList(long handle, long scratch, int keyLen, byte[] text,
            int[] ends);

    static native long[] builderFinish(long handle);

    static native void builderAbort(long handle);
}
