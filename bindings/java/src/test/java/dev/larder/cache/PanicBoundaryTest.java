package dev.larder.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A panic in the native library becomes a Java exception; the JVM and the library go on. */
class PanicBoundaryTest {
    @Test
    void panicBecomesLarderCacheException() {
        for (int i = 0; i < 3; i++) {
            LarderCacheException e = assertThrows(LarderCacheException.class,
                    () -> NativeLib.panicForTest("boom"));
            assertEquals(LarderCacheException.class, e.getClass());
            assertTrue(e.getMessage().contains("panicked: boom"), e.getMessage());
        }
        assertEquals(ValueType.STR, ValueType.fromTag(2), "still running");
    }
}
