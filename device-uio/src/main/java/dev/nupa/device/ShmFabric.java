package dev.nupa.device;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The shm backend: the fabric is a file (by default under /dev/shm) that every node process maps.
 * The first node creates it, later nodes join. Creation is race-free: the file is created with
 * CREATE_NEW, sized, and its header's magic is stored last; joiners wait briefly for the magic.
 * File permissions guard it ({@link FabricAccess}): it is created 0600 (0660 for a group), and a node joins
 * only a file no other user may write and that its own user owns, unless told otherwise.
 */
public final class ShmFabric {
    public static final Path DEFAULT_PATH = Path.of("/dev/shm/nupa-fabric");
    private static final long JOIN_WAIT_NS = 2_000_000_000L;

    private ShmFabric() {
    }

    /**
     * The sysfs file of an ivshmem device's BAR2, its shared memory, at PCI address {@code bdf} (as 0000:00:04.0):
     * a QEMU guest's view of the host's fabric file. uio_pci_generic would not serve it (it exports no 64-bit BAR),
     * sysfs maps any BAR.
     */
    public static Path pciBar(String bdf) {
        if (!bdf.matches("[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]")) {
            throw new FabricException("PCI address " + bdf + " is not DOMAIN:BUS:DEVICE.FUNCTION (as 0000:00:04.0; lspci -D -d 1af4:1110 lists ivshmem devices)");
        }
        return Path.of("/sys/bus/pci/devices", bdf.toLowerCase(java.util.Locale.ROOT), "resource2");
    }

    /**
     * The BAR2 of the PCI device that UIO device {@code dev} (as /dev/uio0) drives: uio_pci_generic maps no BARs
     * itself, so the memory is mapped through sysfs as for {@link #pciBar}, its doorbells polled.
     */
    public static Path uioBar(Path dev) {
        String name = dev.getFileName() == null ? "" : dev.getFileName().toString();
        if (!name.matches("uio[0-9]+")) {
            throw new FabricException("UIO device " + dev + " is not /dev/uioN (ls /sys/class/uio lists them)");
        }
        Path device = Path.of("/sys/class/uio", name, "device");
        if (!Files.exists(device)) {
            throw new FabricException("no UIO device " + name + " (ls /sys/class/uio; bind the ivshmem device to uio_pci_generic first)");
        }
        return device.resolve("resource2");
    }

    /**
     * An ivshmem-doorbell device at PCI address {@code bdf}, bound to vfio-pci: its BAR2 mapped through VFIO, its
     * Doorbell register and MSI-X interrupts as the nodes' doorbells ({@link VfioDevice}). Named by the device's sysfs
     * directory.
     */
    public static Path vfioDevice(String bdf) {
        return pciBar(bdf).getParent();
    }

    /** Whether {@code path} is a device's memory in sysfs (a PCI BAR), whose doorbells are polled, not a file. */
    public static boolean isDevice(Path path) {
        return path.toAbsolutePath().startsWith("/sys/");
    }

    /** Creates a new fabric file, mode 0600; fails if the file exists. */
    public static Fabric create(Path path, FabricGeometry geometry) {
        return create(path, geometry, FabricAccess.PRIVATE);
    }

    /**
     * Creates a new fabric file; fails if the file exists. It is created 0600 (with the mode given at creation, so
     * it is never readable by others, whatever the umask); with {@code access}'s group, that group is set and only
     * then the mode widened to 0660.
     */
    public static Fabric create(Path path, FabricGeometry geometry, FabricAccess access) {
        if (isDevice(path)) {
            throw new FabricException(path + " is a device's memory: a fabric in it is created on the host, in the file that backs it"
                    + " (nupa fabric create), and joined here");
        }
        long size = geometry.totalBytes();
        try (FileChannel ch = FileChannel.open(path, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(OWNER_RW))) {
            if (access.group() != null) {
                share(path, access.group());
            }
            // Extend to size with one byte at the end: the file stays sparse, and a zero-filled
            // fabric is a valid empty one, so nothing else needs writing.
            ch.write(java.nio.ByteBuffer.wrap(new byte[1]), size - 1);
            Arena arena = Arena.ofShared();
            MemorySegment mem = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            FabricLayout.writeHeader(mem, geometry, System.currentTimeMillis());
            return new Fabric(mem, arena, path.toString(), true);
        } catch (FileAlreadyExistsException e) {
            throw new FabricException("fabric file " + path + " already exists; join it, or remove it to create a new one");
        } catch (IOException e) {
            throw new FabricException("cannot create fabric file " + path + ": " + e.getMessage()
                    + " (is there room in " + path.getParent() + "?)", e);
        }
    }

    /** Maps an existing fabric file, checking magic, version and size, and that this user may trust it. */
    public static Fabric join(Path path) {
        return join(path, FabricAccess.PRIVATE);
    }

    /** Maps an existing fabric file, checking magic, version and size, and the file's owner and mode against {@code access}. */
    public static Fabric join(Path path, FabricAccess access) {
        return map(path, true, access);
    }

    /**
     * A fresh fabric file's path for a program that makes its own (the perf tools, the demo, the soak, a node's warm-up):
     * in $NUPA_FABRIC_DIR where set (a tmpfs or hugetlbfs directory; tests give each run its own), else /dev/shm. The
     * pid and clock keep names apart; {@code what} says whose it is.
     */
    public static Path freshPath(String what) {
        String dir = System.getenv("NUPA_FABRIC_DIR");
        if (dir != null && !dir.isEmpty() && !Files.isDirectory(Path.of(dir))) {
            throw new IllegalArgumentException("NUPA_FABRIC_DIR=" + dir + " is not a directory; create it or unset NUPA_FABRIC_DIR");
        }
        return Path.of(dir != null && !dir.isEmpty() ? dir : "/dev/shm",
                "nupa-" + what + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    }

    /** Maps an existing fabric file read-only, for tools that only look. */
    public static Fabric inspect(Path path) {
        return map(path, false, FabricAccess.PRIVATE);
    }

    /**
     * Joins the fabric at {@code path}, or creates it with {@code geometry} if there is none.
     * If it exists with another geometry than a non-null {@code geometry}, that is an error and the
     * existing fabric is left untouched.
     */
    public static Fabric openOrCreate(Path path, FabricGeometry geometry) {
        return openOrCreate(path, geometry, FabricAccess.PRIVATE);
    }

    /** As {@link #openOrCreate(Path, FabricGeometry)}, creating and joining as {@code access} says. */
    public static Fabric openOrCreate(Path path, FabricGeometry geometry, FabricAccess access) {
        FabricGeometry wanted = geometry != null ? geometry : FabricGeometry.defaults();
        if (isDevice(path)) {
            return join(path, access); // a device's memory is never created here
        }
        for (int attempt = 0; ; attempt++) {
            if (!Files.exists(path)) {
                try {
                    return create(path, wanted, access);
                } catch (FabricException e) {
                    if (!Files.exists(path) || attempt > 3) {
                        throw e;
                    }
                    // another process created it first: join it
                }
            }
            try {
                Fabric f = join(path, access);
                if (geometry != null && !f.geometry().equals(geometry)) {
                    f.close();
                    throw new FabricException("fabric " + path + " exists with geometry " + f.geometry()
                            + " but " + geometry + " was asked for; remove the file or ask for its geometry");
                }
                return f;
            } catch (FabricNotFound e) {
                if (attempt > 3) {
                    throw new FabricException("fabric file " + path + " keeps disappearing while joining", e);
                }
            }
        }
    }

    /** Attaches as {@code address} to the fabric at {@code path}, creating it if needed; closing the node unmaps it. */
    public static FabricNode attach(Path path, int address, FabricGeometry geometry) {
        return attach(path, address, geometry, FabricAccess.PRIVATE);
    }

    /** As {@link #attach(Path, int, FabricGeometry)}, creating and joining as {@code access} says. */
    public static FabricNode attach(Path path, int address, FabricGeometry geometry, FabricAccess access) {
        Fabric f = openOrCreate(path, geometry, access);
        try {
            FabricNode node = f.attach(address);
            node.closeFabricOnClose();
            return node;
        } catch (RuntimeException e) {
            f.close();
            throw e;
        }
    }

    private static final Set<PosixFilePermission> OWNER_RW = PosixFilePermissions.fromString("rw-------");
    private static final Set<PosixFilePermission> GROUP_RW = PosixFilePermissions.fromString("rw-rw----");

    /** Gives the new file at {@code path} (still 0600) to {@code group}, then opens it to the group: 0660. */
    private static void share(Path path, String group) throws IOException {
        PosixFileAttributeView view = Files.getFileAttributeView(path, PosixFileAttributeView.class);
        try {
            GroupPrincipal g = path.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByGroupName(group);
            view.setGroup(g);
            view.setPermissions(GROUP_RW);
        } catch (IOException e) {
            Files.deleteIfExists(path);
            throw new FabricException("cannot give fabric file " + path + " to group " + group + ": " + e.getMessage()
                    + " (the group must exist and this user be in it: id -Gn)", e);
        }
    }

    /** The user this process runs as: the owner of its /proc/self (the effective uid; root is no exception). */
    private static String self() throws IOException {
        return Files.getOwner(Path.of("/proc/self")).getName();
    }

    /**
     * Refuses a fabric file any user may write, or one another user owns (unless it is shared with {@code access}'s
     * group): such a file lets someone else read and forge every frame. As ssh treats a key file, root included.
     */
    private static void checkTrusted(Path path, FabricAccess access) throws IOException {
        if (access.trustFile()) {
            return;
        }
        PosixFileAttributes a = Files.readAttributes(path, PosixFileAttributes.class);
        String mode = PosixFilePermissions.toString(a.permissions());
        if (a.permissions().contains(PosixFilePermission.OTHERS_WRITE)) {
            throw new FabricException("fabric file " + path + " may be written by any user (" + mode + "), who could read and forge"
                    + " its frames; chmod o-w " + path + ", or give --trust-fabric to join it anyway");
        }
        String me = self();
        String owner = a.owner().getName();
        if (!owner.equals(me) && !(access.group() != null && a.group().getName().equals(access.group()))) {
            throw new FabricException("fabric file " + path + " belongs to user " + owner + ", not to " + me + ", and could be a trap;"
                    + " give --trust-fabric to join it anyway (or --fabric-group G for a file shared with group G)");
        }
    }

    private static final class FabricNotFound extends FabricException {
        FabricNotFound(String m) {
            super(m);
        }
    }

    /** Turns a PCI device's memory decoding on (its sysfs {@code enable}), as mapping a BAR needs; needs root once. */
    private static void enable(Path bar) {
        Path enable = bar.getParent().resolve("enable");
        try {
            if (Files.exists(enable) && Files.readString(enable).trim().equals("0")) {
                Files.writeString(enable, "1");
            }
        } catch (IOException e) {
            throw new FabricException("cannot enable PCI device " + bar.getParent() + ": " + e.getMessage() + " (run as root, or echo 1 > "
                    + enable + ")", e);
        }
    }

    private static Fabric mapVfio(Path dir) {
        VfioDevice vfio = VfioDevice.open(dir);
        try {
            if (vfio.bar2().get(ValueLayout.JAVA_LONG, FabricLayout.H_MAGIC) == 0) {
                throw new FabricException("the memory of ivshmem device " + vfio.bdf() + " holds no fabric: create it on the host"
                        + " (nupa fabric create) before the ivshmem server hands it to QEMU");
            }
            return new Fabric(vfio.bar2(), null, "vfio:" + vfio.bdf(), true, true, vfio);
        } catch (RuntimeException e) {
            vfio.close();
            throw e;
        }
    }

    private static boolean isZero(MemorySegment mem, long bytes) {
        for (long i = 0; i < bytes; i += 8) {
            if (mem.get(ValueLayout.JAVA_LONG, i) != 0) {
                return false;
            }
        }
        return true;
    }

    private static Fabric map(Path path, boolean writable, FabricAccess access) {
        if (isDevice(path) && Files.isDirectory(path)) {
            return mapVfio(path);
        }
        boolean device = isDevice(path);
        if (device) {
            enable(path);
        }
        long deadline = System.nanoTime() + JOIN_WAIT_NS;
        while (true) {
            try (FileChannel ch = writable
                    ? FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)
                    : FileChannel.open(path, StandardOpenOption.READ)) {
                if (writable && !device) {
                    // Checked on the file just opened: in /dev/shm (sticky) no other user can swap it for another.
                    checkTrusted(path, access);
                }
                long size = ch.size();
                boolean young = size < FabricLayout.PAGE;
                Arena arena = Arena.ofShared();
                MemorySegment mem = young ? MemorySegment.NULL
                        : ch.map(writable ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY, 0, size, arena);
                // A creator sizes the file, then stores the magic last: give it a moment.
                if ((young || (long) FabricLayout.LONG.getAcquire(mem, FabricLayout.H_MAGIC) == 0)
                        && System.nanoTime() < deadline) {
                    arena.close();
                    Fabric.sleepMillis(5);
                    continue;
                }
                if (young) {
                    arena.close();
                    throw new FabricException("fabric file " + path + " is " + size + " bytes, too small to be a NUPA fabric;"
                            + " remove it or point at another file");
                }
                if (mem.get(ValueLayout.JAVA_LONG, FabricLayout.H_MAGIC) == 0 && isZero(mem, FabricLayout.PAGE)) {
                    arena.close();
                    throw new FabricException("fabric file " + path + " was never initialised (its creator died?);"
                            + " remove it and start again");
                }
                try {
                    return new Fabric(mem, arena, path.toString(), writable, device);
                } catch (RuntimeException e) {
                    arena.close();
                    throw e;
                }
            } catch (NoSuchFileException e) {
                if (device) {
                    throw new FabricException("no PCI device memory at " + path + "; is the guest's ivshmem device at another address?"
                            + " (lspci -D -d 1af4:1110)");
                }
                throw new FabricNotFound("no fabric file at " + path + "; create it with `nupa fabric create --fabric "
                        + path + "` or start a node, which creates it");
            } catch (IOException e) {
                throw new FabricException("cannot open fabric file " + path + ": " + e.getMessage(), e);
            }
        }
    }
}
