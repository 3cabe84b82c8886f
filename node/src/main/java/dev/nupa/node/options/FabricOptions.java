package dev.nupa.node.options;

import java.nio.file.Path;

import dev.nupa.device.FabricAccess;
import dev.nupa.device.ShmFabric;
import picocli.CommandLine.Option;

/** Where the fabric is: a file (--fabric), or a device (--device) inside a QEMU guest; for every command that maps it. */
public final class FabricOptions {
    @Option(names = "--fabric", paramLabel = "PATH", defaultValue = "/dev/shm/nupa-fabric",
            description = "Fabric file (default: ${DEFAULT-VALUE}); a node creates it if missing.")
    Path fabric;

    @Option(names = "--device", paramLabel = "shm:PATH|pci:BDF|uio:/dev/uioN|vfio:BDF",
            description = "The fabric's device: shm:PATH, a shared-memory file (as --fabric); pci:BDF, an ivshmem device's BAR2 inside a"
                    + " QEMU guest (as pci:0000:00:04.0; through sysfs, doorbells polled) backed by the host's fabric file; uio:/dev/uioN,"
                    + " the same for the device uio_pci_generic holds; or vfio:BDF, an ivshmem-doorbell device bound to vfio-pci (BAR2"
                    + " through VFIO, doorbells as MSI-X interrupts between guests).")
    String device;

    @Option(names = "--fabric-group", paramLabel = "GROUP",
            description = "Share the fabric file with GROUP: a file created here is mode 0660 with that group (else 0600, this user's"
                    + " alone), and a file of another user that has that group is joined.")
    String group;

    @Option(names = "--trust-fabric", description = "Join the fabric file even if another user owns it or any user may write it"
            + " (refused by default: such a user could read and forge its frames).")
    boolean trust;

    /** Who may touch the fabric file: --fabric-group and --trust-fabric. */
    public FabricAccess access() {
        return new FabricAccess(group, trust);
    }

    /** The fabric's path: --fabric, or what --device names. */
    public Path path() {
        if (device == null) {
            return fabric;
        }
        if (device.startsWith("shm:")) {
            return Path.of(device.substring(4));
        }
        if (device.startsWith("pci:")) {
            return ShmFabric.pciBar(device.substring(4));
        }
        if (device.startsWith("vfio:")) {
            return ShmFabric.vfioDevice(device.substring(5));
        }
        if (device.startsWith("uio:")) {
            return ShmFabric.uioBar(Path.of(device.substring(4)));
        }
        throw new IllegalArgumentException("--device is shm:PATH, pci:BDF, uio:/dev/uioN or vfio:BDF, not " + device);
    }
}
