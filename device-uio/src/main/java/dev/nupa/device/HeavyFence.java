package dev.nupa.device;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The heavy side of an asymmetric fence between processes: membarrier(2)'s
 * {@code MEMBARRIER_CMD_GLOBAL_EXPEDITED} makes every running thread of every process that registered for it pass a
 * full memory barrier before the call returns. A hot path that would need a store-load fence on every pass (a
 * Dekker handshake's frequent side) can then do without one, as long as the rare side calls {@link #run} between
 * its store and its load (the scheme of liburcu's and Folly's asymmetric barriers). Each process registers once,
 * when this class loads; {@link #available} says whether that worked (Linux 4.16 or later, and a seccomp policy
 * that lets membarrier through).
 */
public final class HeavyFence {
    private static final int CMD_QUERY = 0;
    private static final int CMD_GLOBAL = 1;
    private static final int CMD_GLOBAL_EXPEDITED = 1 << 1;
    private static final int CMD_REGISTER_GLOBAL_EXPEDITED = 1 << 2;
    private static final MethodHandle SYSCALL;
    private static final long NUMBER;
    private static final boolean AVAILABLE;

    static {
        MethodHandle h = null;
        long number = -1;
        boolean ok = false;
        try {
            Linker linker = Linker.nativeLinker();
            MemorySegment syscall = linker.defaultLookup().find("syscall").orElseThrow();
            h = linker.downcallHandle(syscall, FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), Linker.Option.firstVariadicArg(1));
            number = Syscalls.of(System.getProperty("os.arch")).membarrier();
            long commands = (long) h.invokeExact(number, (long) CMD_QUERY, 0L);
            int need = CMD_GLOBAL_EXPEDITED | CMD_REGISTER_GLOBAL_EXPEDITED;
            ok = commands >= 0 && (commands & need) == need && (long) h.invokeExact(number, (long) CMD_REGISTER_GLOBAL_EXPEDITED, 0L) == 0;
        } catch (Throwable t) {
            ok = false; // no libc syscall(), an unknown architecture: the callers use full fences instead
        }
        SYSCALL = h;
        NUMBER = number;
        AVAILABLE = ok;
    }

    private HeavyFence() {
    }

    /** Whether this process registered, so that another process's {@link #run} covers its threads. */
    public static boolean available() {
        return AVAILABLE;
    }

    /**
     * Makes every thread of every registered process pass a full barrier (microseconds: an interrupt to the CPUs
     * running them); if the expedited command fails, the global one (every thread of the system, after an RCU
     * grace period: milliseconds). Returns false only if neither ran; the caller must then not rely on it.
     */
    public static boolean run() {
        if (!AVAILABLE) {
            return false;
        }
        try {
            return (long) SYSCALL.invokeExact(NUMBER, (long) CMD_GLOBAL_EXPEDITED, 0L) == 0
                    || (long) SYSCALL.invokeExact(NUMBER, (long) CMD_GLOBAL, 0L) == 0;
        } catch (Throwable t) {
            return false;
        }
    }
}
