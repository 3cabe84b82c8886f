package dev.nupa.device;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/**
 * An ivshmem-doorbell device inside a Linux guest, driven through VFIO (the kernel's docs/driver-api/vfio.rst):
 * BAR2 is the shared memory (the host's fabric file, handed to QEMU by an ivshmem server), BAR0 holds the
 * registers (IVPosition: this device's peer ID; Doorbell: write {@code peer << 16 | vector} to interrupt a peer),
 * and MSI-X vector 0 arrives on an eventfd that a sleeper waits on. The device must be bound to vfio-pci and sit in
 * an IOMMU group (a guest with an IOMMU: QEMU's q35 with intel-iommu, the kernel booted with intel_iommu=on).
 */
final class VfioDevice implements AutoCloseable {
    // include/uapi/linux/vfio.h: _IO(VFIO_TYPE ';', VFIO_BASE 100 + n)
    private static final long VFIO_GET_API_VERSION = 0x3B64;
    private static final long VFIO_CHECK_EXTENSION = 0x3B65;
    private static final long VFIO_SET_IOMMU = 0x3B66;
    private static final long VFIO_GROUP_GET_STATUS = 0x3B67;
    private static final long VFIO_GROUP_SET_CONTAINER = 0x3B68;
    private static final long VFIO_GROUP_GET_DEVICE_FD = 0x3B6A;
    private static final long VFIO_DEVICE_GET_REGION_INFO = 0x3B6C;
    private static final long VFIO_DEVICE_SET_IRQS = 0x3B6E;
    private static final int VFIO_API_VERSION = 0;
    private static final long VFIO_TYPE1_IOMMU = 1;
    private static final int VFIO_GROUP_FLAGS_VIABLE = 1;
    private static final int VFIO_REGION_INFO_FLAG_MMAP = 1 << 2;
    private static final int VFIO_IRQ_SET_DATA_EVENTFD = 1 << 2;
    private static final int VFIO_IRQ_SET_ACTION_TRIGGER = 1 << 5;
    private static final int VFIO_PCI_MSIX_IRQ_INDEX = 2;
    private static final int BAR0 = 0;
    private static final int BAR2 = 2;
    private static final int VFIO_PCI_CONFIG_REGION_INDEX = 7;
    private static final long PCI_COMMAND = 4;
    private static final short PCI_COMMAND_MASTER = 0x4;
    // The ivshmem device's registers in BAR0 (QEMU's docs/specs/ivshmem-spec.txt).
    private static final long IV_POSITION = 8;
    private static final long DOORBELL = 12;

    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final int PROT_RW = 3;
    private static final int MAP_SHARED = 1;
    private static final int EFD_CLOEXEC = 0x80000;
    private static final int EFD_NONBLOCK = 0x800;
    private static final short POLLIN = 1;

    private static final StructLayout ERRNO = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO_VALUE = ERRNO.varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle IOCTL_PTR;
    private static final MethodHandle IOCTL_LONG;
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle PREAD;
    private static final MethodHandle PWRITE;
    private static final MethodHandle EVENTFD;
    private static final MethodHandle READ;
    private static final MethodHandle WRITE;
    private static final MethodHandle PPOLL;

    static {
        Linker linker = Linker.nativeLinker();
        var libc = linker.defaultLookup();
        var errno = Linker.Option.captureCallState("errno");
        ValueLayout I = ValueLayout.JAVA_INT;
        ValueLayout J = ValueLayout.JAVA_LONG;
        ValueLayout P = ValueLayout.ADDRESS;
        OPEN = linker.downcallHandle(libc.find("open").orElseThrow(), FunctionDescriptor.of(I, P, I), errno);
        CLOSE = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(I, I));
        IOCTL_PTR = linker.downcallHandle(libc.find("ioctl").orElseThrow(), FunctionDescriptor.of(I, I, J, P), errno,
                Linker.Option.firstVariadicArg(2));
        IOCTL_LONG = linker.downcallHandle(libc.find("ioctl").orElseThrow(), FunctionDescriptor.of(I, I, J, J), errno,
                Linker.Option.firstVariadicArg(2));
        MMAP = linker.downcallHandle(libc.find("mmap").orElseThrow(), FunctionDescriptor.of(P, P, J, I, I, I, J), errno);
        MUNMAP = linker.downcallHandle(libc.find("munmap").orElseThrow(), FunctionDescriptor.of(I, P, J));
        PREAD = linker.downcallHandle(libc.find("pread").orElseThrow(), FunctionDescriptor.of(J, I, P, J, J), errno);
        PWRITE = linker.downcallHandle(libc.find("pwrite").orElseThrow(), FunctionDescriptor.of(J, I, P, J, J), errno);
        EVENTFD = linker.downcallHandle(libc.find("eventfd").orElseThrow(), FunctionDescriptor.of(I, I, I), errno);
        READ = linker.downcallHandle(libc.find("read").orElseThrow(), FunctionDescriptor.of(J, I, P, J));
        WRITE = linker.downcallHandle(libc.find("write").orElseThrow(), FunctionDescriptor.of(J, I, P, J));
        PPOLL = linker.downcallHandle(libc.find("ppoll").orElseThrow(), FunctionDescriptor.of(I, P, J, P, P));
    }

    private final String bdf;
    /** Owns the mapping of BAR2 and the scratch below: closing it unmaps, and a late access fails instead of faulting. */
    private final Arena arena;
    private final int container;
    private final int group;
    private final int device;
    private final int irqFd; // MSI-X vector 0: a peer's ring
    private final int selfFd; // a wake from this node's own threads, apart so that only peers' rings count as interrupts
    private final long bar0Offset;
    private final MemorySegment bar2;
    private final int peerId;
    // Scratch for the sleeper (one thread) and for rings (any thread of the node: one at a time, see ring).
    private final MemorySegment pollFds;
    private final MemorySegment timespec;
    private final MemorySegment drain;
    private final MemorySegment value;
    private final MemorySegment one;
    private final MemorySegment ringErr;
    private int claimedBy = -1; // the node whose sleeps this device's interrupts end

    private VfioDevice(String bdf, Arena arena, int[] fds, long bar0Offset, MemorySegment bar2, int peerId) {
        this.bdf = bdf;
        this.arena = arena;
        this.container = fds[0];
        this.group = fds[1];
        this.device = fds[2];
        this.irqFd = fds[3];
        this.selfFd = fds[4];
        this.bar0Offset = bar0Offset;
        this.bar2 = bar2;
        this.peerId = peerId;
        pollFds = arena.allocate(16, 8);
        timespec = arena.allocate(16, 8);
        drain = arena.allocate(8, 8);
        value = arena.allocate(8, 8);
        one = arena.allocate(8, 8);
        ringErr = arena.allocate(ERRNO);
        pollFds.set(ValueLayout.JAVA_INT, 0, irqFd);
        pollFds.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
        pollFds.set(ValueLayout.JAVA_INT, 8, selfFd);
        pollFds.set(ValueLayout.JAVA_SHORT, 12, POLLIN);
        one.set(ValueLayout.JAVA_LONG, 0, 1L);
    }

    /** Opens the ivshmem-doorbell device at {@code dir} ({@code /sys/bus/pci/devices/BDF}), bound to vfio-pci. */
    static VfioDevice open(Path dir) {
        String bdf = dir.getFileName().toString();
        if (!Files.isDirectory(dir)) {
            throw new FabricException("no PCI device " + bdf + " (lspci -D -d 1af4:1110 lists ivshmem devices)");
        }
        Path driver = dir.resolve("driver");
        String bound;
        try {
            bound = Files.isSymbolicLink(driver) ? Files.readSymbolicLink(driver).getFileName().toString() : "no driver";
        } catch (IOException e) {
            throw new FabricException("cannot read " + driver + ": " + e.getMessage(), e);
        }
        if (!bound.equals("vfio-pci")) {
            throw new FabricException("PCI device " + bdf + " has " + bound + ", not vfio-pci: bind it (echo vfio-pci > " + dir
                    + "/driver_override; echo " + bdf + " > /sys/bus/pci/drivers_probe), or use --device pci:" + bdf
                    + " (polled, no interrupts)");
        }
        Path groupLink = dir.resolve("iommu_group");
        String groupNumber;
        try {
            groupNumber = Files.readSymbolicLink(groupLink).getFileName().toString();
        } catch (IOException e) {
            throw new FabricException("PCI device " + bdf + " is in no IOMMU group: VFIO needs an IOMMU (QEMU: -machine q35 -device"
                    + " intel-iommu, and intel_iommu=on on the guest's kernel command line)", e);
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment err = a.allocate(ERRNO);
            int container = -1;
            int group = -1;
            int device = -1;
            int efd = -1;
            int selfFd = -1;
            Arena arena = null;
            MemorySegment mapped = null;
            try {
                container = check(open(a, err, "/dev/vfio/vfio"), err, "open /dev/vfio/vfio (is the vfio module loaded?)");
                if ((int) IOCTL_LONG.invokeExact(err, container, VFIO_GET_API_VERSION, 0L) != VFIO_API_VERSION) {
                    throw new FabricException("this kernel's VFIO API is not version " + VFIO_API_VERSION);
                }
                if ((int) IOCTL_LONG.invokeExact(err, container, VFIO_CHECK_EXTENSION, VFIO_TYPE1_IOMMU) != 1) {
                    throw new FabricException("VFIO has no type 1 IOMMU here: load vfio_iommu_type1, and boot with an IOMMU");
                }
                group = check(open(a, err, "/dev/vfio/" + groupNumber), err, "open /dev/vfio/" + groupNumber);
                MemorySegment status = a.allocate(8, 4);
                status.set(ValueLayout.JAVA_INT, 0, 8);
                check((int) IOCTL_PTR.invokeExact(err, group, VFIO_GROUP_GET_STATUS, status), err, "VFIO_GROUP_GET_STATUS");
                if ((status.get(ValueLayout.JAVA_INT, 4) & VFIO_GROUP_FLAGS_VIABLE) == 0) {
                    throw new FabricException("IOMMU group " + groupNumber + " of " + bdf + " is not viable: bind every device in it to"
                            + " vfio-pci");
                }
                MemorySegment fd = a.allocate(4, 4);
                fd.set(ValueLayout.JAVA_INT, 0, container);
                check((int) IOCTL_PTR.invokeExact(err, group, VFIO_GROUP_SET_CONTAINER, fd), err, "VFIO_GROUP_SET_CONTAINER");
                check((int) IOCTL_LONG.invokeExact(err, container, VFIO_SET_IOMMU, VFIO_TYPE1_IOMMU), err,
                        "VFIO_SET_IOMMU (without interrupt remapping: vfio_iommu_type1 allow_unsafe_interrupts=1)");
                device = check((int) IOCTL_PTR.invokeExact(err, group, VFIO_GROUP_GET_DEVICE_FD, a.allocateFrom(bdf)), err,
                        "VFIO_GROUP_GET_DEVICE_FD " + bdf);
                long[] bar0 = region(a, err, device, BAR0);
                long[] bar2Info = region(a, err, device, BAR2);
                if ((bar2Info[2] & VFIO_REGION_INFO_FLAG_MMAP) == 0 || bar2Info[0] == 0) {
                    throw new FabricException("BAR2 of " + bdf + " cannot be mapped: is it an ivshmem-doorbell device"
                            + " (vendor 1af4, device 1110) with shared memory?");
                }
                MemorySegment at = (MemorySegment) MMAP.invokeExact(err, MemorySegment.NULL, bar2Info[0], PROT_RW, MAP_SHARED, device,
                        bar2Info[1]);
                if (at.address() == -1L) {
                    check(-1, err, "mmap of BAR2");
                }
                mapped = at.reinterpret(bar2Info[0]);
                efd = check((int) EVENTFD.invokeExact(err, 0, EFD_CLOEXEC | EFD_NONBLOCK), err, "eventfd");
                selfFd = check((int) EVENTFD.invokeExact(err, 0, EFD_CLOEXEC | EFD_NONBLOCK), err, "eventfd");
                MemorySegment irqs = a.allocate(24, 4);
                irqs.set(ValueLayout.JAVA_INT, 0, 24);
                irqs.set(ValueLayout.JAVA_INT, 4, VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER);
                irqs.set(ValueLayout.JAVA_INT, 8, VFIO_PCI_MSIX_IRQ_INDEX);
                irqs.set(ValueLayout.JAVA_INT, 12, 0);
                irqs.set(ValueLayout.JAVA_INT, 16, 1);
                irqs.set(ValueLayout.JAVA_INT, 20, efd);
                check((int) IOCTL_PTR.invokeExact(err, device, VFIO_DEVICE_SET_IRQS, irqs), err,
                        "VFIO_DEVICE_SET_IRQS (MSI-X vector 0 to an eventfd; is the device ivshmem-doorbell with vectors=1 or more?)");
                // An MSI-X message is a write by the device: with bus mastering off (vfio-pci leaves it so), it goes nowhere.
                long config = region(a, err, device, VFIO_PCI_CONFIG_REGION_INDEX)[1];
                MemorySegment command = a.allocate(2, 2);
                if ((long) PREAD.invokeExact(err, device, command, 2L, config + PCI_COMMAND) != 2) {
                    check(-1, err, "reading the PCI command register of " + bdf);
                }
                command.set(ValueLayout.JAVA_SHORT, 0, (short) (command.get(ValueLayout.JAVA_SHORT, 0) | PCI_COMMAND_MASTER));
                if ((long) PWRITE.invokeExact(err, device, command, 2L, config + PCI_COMMAND) != 2) {
                    check(-1, err, "enabling bus mastering on " + bdf);
                }
                int peer = readRegister(a, err, device, bar0[1] + IV_POSITION, bdf);
                arena = Arena.ofShared();
                MemorySegment bar2 = mapped.reinterpret(arena, VfioDevice::unmap); // unmapped when the arena closes
                mapped = null;
                return new VfioDevice(bdf, arena, new int[] {container, group, device, efd, selfFd}, bar0[1], bar2, peer);
            } catch (Throwable t) {
                if (arena != null) {
                    arena.close();
                }
                if (mapped != null) {
                    unmap(mapped);
                }
                for (int f : new int[] {selfFd, efd, device, group, container}) {
                    closeFd(f);
                }
                if (t instanceof FabricException e) {
                    throw e;
                }
                throw new FabricException("VFIO on " + bdf + " failed: " + t, t);
            }
        }
    }

    /** The region's size, offset in the device file and flags. */
    private static long[] region(Arena a, MemorySegment err, int device, int index) throws Throwable {
        MemorySegment info = a.allocate(32, 8);
        info.set(ValueLayout.JAVA_INT, 0, 32);
        info.set(ValueLayout.JAVA_INT, 8, index);
        check((int) IOCTL_PTR.invokeExact(err, device, VFIO_DEVICE_GET_REGION_INFO, info), err, "VFIO_DEVICE_GET_REGION_INFO " + index);
        return new long[] {info.get(ValueLayout.JAVA_LONG, 16), info.get(ValueLayout.JAVA_LONG, 24), info.get(ValueLayout.JAVA_INT, 4)};
    }

    private static int open(Arena a, MemorySegment err, String path) throws Throwable {
        return (int) OPEN.invokeExact(err, a.allocateFrom(path), O_RDWR | O_CLOEXEC);
    }

    private static int check(int rc, MemorySegment err, String what) {
        if (rc < 0) {
            int e = (int) ERRNO_VALUE.get(err, 0L);
            throw new FabricException(what + " failed: errno " + e + (e == 1 || e == 13 ? " (permission: run as root)" : e == 2
                    ? " (no such file)" : e == 16 ? " (busy: the device is open already, in this process or another; VFIO opens it once)" : e == 22 ? " (invalid argument)" : ""));
        }
        return rc;
    }

    /** The shared memory: the host's fabric file as this guest sees it. */
    MemorySegment bar2() {
        return bar2;
    }

    /** This device's ID among the ivshmem server's peers: what another peer writes to interrupt it. */
    int peerId() {
        return peerId;
    }

    String bdf() {
        return bdf;
    }

    /** Interrupts peer {@code peer} on its vector 0 (the Doorbell register); rings of a node's threads are serialized. */
    synchronized void ring(int peer) {
        value.set(ValueLayout.JAVA_INT, 0, (peer & 0xFFFF) << 16);
        try {
            long n = (long) PWRITE.invokeExact(ringErr, device, value, 4L, bar0Offset + DOORBELL);
            if (n != 4) {
                check(-1, ringErr, "the ivshmem doorbell write on " + bdf);
            }
        } catch (FabricException e) {
            throw e;
        } catch (Throwable t) {
            throw new FabricException("the ivshmem doorbell write on " + bdf + " failed: " + t, t);
        }
    }

    /** Wakes this device's own sleeper from another of the node's threads (an eventfd of its own, in this kernel). */
    void wakeSelf() {
        try {
            long n = (long) WRITE.invokeExact(selfFd, one, 8L);
        } catch (Throwable t) {
            throw new FabricException("eventfd write failed: " + t, t);
        }
    }

    /**
     * Sleeps until a peer's interrupt, a {@link #wakeSelf}, or {@code timeoutNs}; true if a peer's interrupt came. One
     * thread sleeps at a time (the node's consumer).
     */
    boolean await(long timeoutNs) {
        timespec.set(ValueLayout.JAVA_LONG, 0, timeoutNs / 1_000_000_000L);
        timespec.set(ValueLayout.JAVA_LONG, 8, timeoutNs % 1_000_000_000L);
        pollFds.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
        pollFds.set(ValueLayout.JAVA_SHORT, 14, (short) 0);
        try {
            int n = (int) PPOLL.invokeExact(pollFds, 2L, timespec, MemorySegment.NULL);
            if (n <= 0) {
                return false;
            }
            boolean interrupted = (pollFds.get(ValueLayout.JAVA_SHORT, 6) & POLLIN) != 0;
            if (interrupted) {
                long ignored = (long) READ.invokeExact(irqFd, drain, 8L); // the counter back to 0 (non-blocking)
            }
            if ((pollFds.get(ValueLayout.JAVA_SHORT, 14) & POLLIN) != 0) {
                long ignored = (long) READ.invokeExact(selfFd, drain, 8L);
            }
            return interrupted;
        } catch (Throwable t) {
            throw new FabricException("waiting on the MSI-X eventfd of " + bdf + " failed: " + t, t);
        }
    }

    /**
     * Takes the device for one node: its interrupts wake one sleeper, so a second node on the same device would steal
     * the first one's wakes.
     */
    synchronized void claim(int address) {
        if (claimedBy >= 0) {
            throw new FabricException("ivshmem-doorbell device " + bdf + " serves node " + claimedBy + " of this process already, so node "
                    + address + " cannot have it: one node a device (run one event loop, or attach further nodes through --device pci:"
                    + bdf + ")");
        }
        claimedBy = address;
    }

    synchronized void release() {
        claimedBy = -1;
    }

    private static int readRegister(Arena a, MemorySegment err, int device, long at, String bdf) throws Throwable {
        MemorySegment v = a.allocate(4, 4);
        if ((long) PREAD.invokeExact(err, device, v, 4L, at) != 4) {
            check(-1, err, "reading BAR0 of " + bdf);
        }
        return v.get(ValueLayout.JAVA_INT, 0);
    }

    private static void unmap(MemorySegment m) {
        try {
            int ignored = (int) MUNMAP.invokeExact(m, m.byteSize());
        } catch (Throwable t) {
            // closing: nothing left to do
        }
    }

    private static void closeFd(int fd) {
        if (fd >= 0) {
            try {
                int ignored = (int) CLOSE.invokeExact(fd);
            } catch (Throwable t) {
                // closing: nothing left to do
            }
        }
    }

    /** Unmaps BAR2 (a thread still in a call that uses this device's memory is waited for) and closes the files. */
    @Override
    public void close() {
        for (int i = 0; ; i++) {
            try {
                arena.close();
                break;
            } catch (IllegalStateException e) { // a sleeper's ppoll or a ring holds the scratch for a moment
                if (i == 1000) {
                    throw new FabricException("the memory of " + bdf + " is still in use; it stays mapped", e);
                }
                LockSupport.parkNanos(1_000_000L);
            }
        }
        for (int f : new int[] {selfFd, irqFd, device, group, container}) {
            closeFd(f);
        }
    }
}
