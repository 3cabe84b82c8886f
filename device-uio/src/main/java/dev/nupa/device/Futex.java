package dev.nupa.device;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * futex(2) on a 32-bit word of shared memory, through libc's syscall(). The plain (not PRIVATE)
 * operations are used because the word lives in a file mapping shared between processes. The call's number
 * depends on the CPU architecture ({@link Syscalls}); an unknown one fails when a node first needs a futex.
 */
final class Futex {
    private static final long FUTEX_WAIT = 0;
    private static final long FUTEX_WAKE = 1;

    private static final MethodHandle SYSCALL;
    private static final MethodHandle SYSCALL_CRITICAL;

    static {
        Linker linker = Linker.nativeLinker();
        MemorySegment syscall = linker.defaultLookup().find("syscall")
                .orElseThrow(() -> new FabricException("libc syscall() not found; the fabric needs Linux"));
        FunctionDescriptor fd = FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG);
        SYSCALL = linker.downcallHandle(syscall, fd, Linker.Option.firstVariadicArg(1));
        // A wake never blocks, so it may skip the thread-state transition.
        SYSCALL_CRITICAL = linker.downcallHandle(syscall, fd, Linker.Option.firstVariadicArg(1),
                Linker.Option.critical(false));
    }

    private final long sysFutex = Syscalls.of(System.getProperty("os.arch")).futex();
    /** A timespec owned by one waiting thread, so a wait allocates nothing. */
    private final MemorySegment timespec = Arena.ofAuto().allocate(16, 8);

    /** Sleeps while the word at {@code address} holds {@code expected}, at most {@code timeoutNs}. */
    void await(long address, int expected, long timeoutNs) {
        timespec.set(ValueLayout.JAVA_LONG, 0, timeoutNs / 1_000_000_000L);
        timespec.set(ValueLayout.JAVA_LONG, 8, timeoutNs % 1_000_000_000L);
        try {
            long ignored = (long) SYSCALL.invokeExact(sysFutex, address, FUTEX_WAIT, (long) expected,
                    timespec.address());
        } catch (Throwable t) {
            throw new FabricException("futex wait failed: " + t, t);
        }
    }

    /** Wakes up to {@code count} threads sleeping on the word at {@code address}. */
    void wake(long address, int count) {
        try {
            long ignored = (long) SYSCALL_CRITICAL.invokeExact(sysFutex, address, FUTEX_WAKE, (long) count, 0L);
        } catch (Throwable t) {
            throw new FabricException("futex wake failed: " + t, t);
        }
    }
}
