package dev.nupa.device;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Pins the calling thread to one CPU (sched_setaffinity), so two busy-polling sides of a fabric (perf
 * tools, benchmarks) do not share a core.
 */
public final class Affinity {
    private Affinity() {
    }

    /** Returns false (and changes nothing) if the CPU does not exist or the call fails. */
    public static boolean pin(int cpu) {
        if (cpu < 0 || cpu >= Runtime.getRuntime().availableProcessors() || cpu >= 1024) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            Linker linker = Linker.nativeLinker();
            MethodHandle set = linker.downcallHandle(linker.defaultLookup().find("sched_setaffinity").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                            ValueLayout.ADDRESS));
            MemorySegment mask = arena.allocate(128, 8);
            mask.set(ValueLayout.JAVA_LONG, (cpu / 64) * 8L, 1L << (cpu % 64));
            return (int) set.invokeExact(0, 128L, mask) == 0;
        } catch (Throwable t) {
            return false;
        }
    }
}
