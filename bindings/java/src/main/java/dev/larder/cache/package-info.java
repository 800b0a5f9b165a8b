/**
 * Java binding of larder cache files: immutable, memory-mapped, typed key-value files that are
 * built once and read by any number of processes, which share one copy in the page cache.
 *
 * <p>{@link dev.larder.cache.LarderCache} opens and reads a file;
 * {@link dev.larder.cache.LarderCacheBuilder} writes one. Both call the Rust library
 * {@code larder-cache} through JNI (the native library {@code liblarder_cache_jni}). The file
 * format is specified in {@code docs/cache-format.md}; files are interchangeable with the Rust,
 * C, Python and Go APIs and the {@code larder cache} CLI.
 *
 * <p>It is not: a mutable store (rebuild and rename instead), a network client, or a
 * pure-Java reader of the format.
 */
package dev.larder.cache;
