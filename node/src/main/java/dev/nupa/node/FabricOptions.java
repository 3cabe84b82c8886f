package dev.nupa.node;

import java.nio.file.Path;

import dev.nupa.device.ShmFabric;
import picocli.CommandLine.Option;

/** Where the fabric is: a file (--fabric), or a device (--device) inside a QEMU guest; for every command that maps it. */
final class FabricOptions {
    @Option(names = "--fabric", paramLabel = "PATH", defaultValue = "/dev/shm/nupa-fabric",
            description = "Fabric file (default: ${DEFAULT-VALUE}); a node creates it if missing.")
    Path fabric;

    @Option(names = "--device", paramLabel = "shm:PATH|pci:BDF|uio:/dev/uioN|vfio:BDF",
            description = "The fabric's device: shm:PATH, a shared-memory file (as --fabric); pci:BDF, an ivshmem device's BAR2 inside a"
                    + " QEMU guest (as pci:0000:00:04.0; through sysfs, doorbells polled) backed by the host's fabric file; uio:/dev/uioN,"
                    + " the same for the device uio_pci_generic holds; or vfio:BDF, an ivshmem-doorbell device bound to vfio-pci (BAR2"
                    + " through VFIO, doorbells as MSI-X interrupts between guests).")
    String device;

    /** The fabric's path: --fabric, or what --device names. */
    Path path() {
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
