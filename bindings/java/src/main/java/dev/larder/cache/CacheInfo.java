package dev.larder.cache;

/**
 * Facts about an open cache file, read from its header by {@link LarderCache#info()}.
 *
 * @param name the user-given name
 * @param formatVersion the file's format version
 * @param createdUnixMs build time, milliseconds since the Unix epoch
 * @param keyCount number of keys
 * @param valueCount number of stored values (fewer than keys when dedup merged some)
 * @param dedup whether the builder deduplicated values
 * @param fileBytes total file size
 * @param dataBytes size of the record section
 * @param indexBytes size of the hash index
 * @param bucketCount number of 64-byte index buckets
 * @param offsetWidthBytes bytes per record offset in the index (4, or 8 past 4 GiB of records)
 * @param displacedKeys keys stored past their home bucket (their lookups read a second line)
 * @param probeMax farthest any key sits from its home bucket, in buckets
 * @param rawKeyBytes sum of key lengths
 * @param rawValueBytes sum of value payload lengths before dedup
 * @param dedupSavedBytes bytes dedup saved
 */
public record CacheInfo(
        String name,
        int formatVersion,
        long createdUnixMs,
        long keyCount,
        long valueCount,
        boolean dedup,
        long fileBytes,
        long dataBytes,
        long indexBytes,
        long bucketCount,
        int offsetWidthBytes,
        long displacedKeys,
        long probeMax,
        long rawKeyBytes,
        long rawValueBytes,
        long dedupSavedBytes) {

    /** Reads the numbers in the order the native {@code info} writes them. */
    static CacheInfo fromNative(String name, long[] n) {
        return new CacheInfo(name, (int) n[0], n[1], n[2], n[3], n[4] != 0, n[5], n[6], n[7], n[8],
                (int) n[9], n[10], n[11], n[12], n[13], n[14]);
    }
}
