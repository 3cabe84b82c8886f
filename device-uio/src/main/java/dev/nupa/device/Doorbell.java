package dev.nupa.device;

import java.util.concurrent.locks.LockSupport;

/**
 * How a node sleeps on its doorbell word and how a peer wakes it. Processes of one kernel share a futex on the
 * word. A fabric mapped from a PCI BAR (ivshmem in a QEMU guest, beside the host's file) spans kernels, which no
 * futex does, and futex(2) refuses device memory anyway: there a sleeper looks again every {@link #POLL_NS}, and a
 * ring is the doorbell's counter alone, or, where both ends are ivshmem-doorbell devices driven through VFIO, an
 * interrupt: the producer writes the consumer's peer ID to its device's Doorbell register, and the consumer's MSI-X
 * ends its sleep on an eventfd (it still looks every {@link #POLL_NS}, for producers that cannot interrupt it).
 */
final class Doorbell {
    /** A polled sleeper's look interval: short against a ping's milliseconds, long against a busy loop. */
    static final long POLL_NS = 200_000L;

    private final Futex futex;
    private final VfioDevice vfio;

    /** On a file: a futex. On a BAR: polled, with interrupts where {@code vfio} is not null. */
    Doorbell(boolean polled, VfioDevice vfio) {
        this.futex = polled ? null : new Futex();
        this.vfio = vfio;
    }

    boolean polled() {
        return futex == null;
    }

    /** The device whose interrupts this node sleeps on and rings peers with, or null. */
    VfioDevice vfio() {
        return vfio;
    }

    /**
     * Sleeps while the word at {@code address} holds {@code expected}, at most {@code timeoutNs} (polled: one look's
     * time); true if an interrupt ended the sleep.
     */
    boolean await(long address, int expected, long timeoutNs) {
        if (futex != null) {
            futex.await(address, expected, timeoutNs);
            return false;
        }
        if (vfio != null) {
            return vfio.await(Math.min(timeoutNs, POLL_NS));
        }
        LockSupport.parkNanos(Math.min(timeoutNs, POLL_NS));
        return false;
    }

    /** Wakes up to {@code count} sleepers on the word at {@code address}; a polled sleeper finds the counter itself. */
    void wake(long address, int count) {
        if (futex != null) {
            futex.wake(address, count);
        }
    }
}
