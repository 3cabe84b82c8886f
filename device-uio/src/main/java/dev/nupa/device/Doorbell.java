package dev.nupa.device;

import java.util.concurrent.locks.LockSupport;

/**
 * How a node sleeps on its doorbell word and how a peer wakes it. Processes of one kernel share a futex on the
 * word. A fabric mapped from a PCI BAR (ivshmem in a QEMU guest, beside the host's file) spans kernels, which no
 * futex does, and futex(2) refuses device memory anyway: there a sleeper looks again every {@link #POLL_NS} and a
 * ring is the doorbell's counter alone. (Interrupts across the VM boundary need ivshmem-doorbell and MSI-X.)
 */
final class Doorbell {
    /** A polled sleeper's look interval: short against a ping's milliseconds, long against a busy loop. */
    static final long POLL_NS = 200_000L;

    private final Futex futex;

    Doorbell(boolean polled) {
        this.futex = polled ? null : new Futex();
    }

    boolean polled() {
        return futex == null;
    }

    /** Sleeps while the word at {@code address} holds {@code expected}, at most {@code timeoutNs} (polled: one look's time). */
    void await(long address, int expected, long timeoutNs) {
        if (futex != null) {
            futex.await(address, expected, timeoutNs);
        } else {
            LockSupport.parkNanos(Math.min(timeoutNs, POLL_NS));
        }
    }

    /** Wakes up to {@code count} sleepers on the word at {@code address}; a polled sleeper finds the counter itself. */
    void wake(long address, int count) {
        if (futex != null) {
            Futex.wake(address, count);
        }
    }
}
