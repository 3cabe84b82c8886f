package dev.nupa.tcp;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Makes the C library hand large buffers back to the system when they are freed. Buffer memory comes from
 * malloc (the JDK's native allocation). glibc serves a request of at least its mmap threshold (128 KiB) by a
 * mapping of its own, unmapped on free, but raises that threshold to the size of each such block freed
 * (malloc(3), M_MMAP_THRESHOLD: "dynamic mmap threshold"); after the first 256 KiB buffer is freed, the next
 * ones come from its heap, which keeps freed memory resident. Setting the threshold fixes it at 128 KiB, so
 * every buffer of that size or more is unmapped when the budget frees it, and the process's memory falls.
 */
final class NativeHeap {
    /** glibc's malloc.h. */
    private static final int M_MMAP_THRESHOLD = -3;
    private static final int THRESHOLD = 128 * 1024;

    private NativeHeap() {
    }

    /** Fixes glibc's mmap threshold once; does nothing where there is no mallopt (another C library). */
    static void fixMmapThreshold() {
        Holder.ensure();
    }

    private static final class Holder {
        static {
            try {
                Linker linker = Linker.nativeLinker();
                linker.defaultLookup().find("mallopt").ifPresent(f -> {
                    MethodHandle mallopt = linker.downcallHandle(f,
                            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
                    try {
                        int ignored = (int) mallopt.invokeExact(M_MMAP_THRESHOLD, THRESHOLD);
                    } catch (Throwable e) {
                        // No effect: memory is still freed, only kept resident by the C library.
                    }
                });
            } catch (RuntimeException e) {
                // Native access refused (no --enable-native-access) or no linker: as above.
            }
        }

        static void ensure() {
        }
    }
}
