package dev.larder.cache;

/**
 * What {@link LarderCacheBuilder#finish()} produced.
 *
 * @param keyCount distinct keys in the file
 * @param duplicateKeys inserts that repeated an earlier key (the last one won)
 * @param valueCount values stored (inserts minus those dedup turned into references)
 * @param dedupedValues inserts whose value was replaced by a reference to an identical one
 * @param dedupSavedBytes bytes dedup saved
 * @param rawKeyBytes sum of inserted key lengths
 * @param rawValueBytes sum of inserted value payload lengths
 * @param dataBytes size of the record section
 * @param indexBytes size of the index
 * @param fileBytes size of the finished file
 * @param buildMs wall time of the build in milliseconds
 */
public record BuildStats(
        long keyCount,
        long duplicateKeys,
        long valueCount,
        long dedupedValues,
        long dedupSavedBytes,
        long rawKeyBytes,
        long rawValueBytes,
        long dataBytes,
        long indexBytes,
        long fileBytes,
        long buildMs) {

    /** Reads the numbers in the order the native {@code builderFinish} writes them. */
    static BuildStats fromNative(long[] n) {
        return new BuildStats(n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9], n[10]);
    }
}
