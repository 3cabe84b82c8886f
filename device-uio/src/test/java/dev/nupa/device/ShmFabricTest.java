package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.*;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Creating, joining and refusing fabric files. */
class ShmFabricTest {
    private final FabricFixture fx = new FabricFixture();

    @AfterEach
    void cleanup() {
        fx.close();
    }

    /** Creates a valid fabric file and unmaps it, leaving only the file. */
    private byte[] validFile() throws Exception {
        ShmFabric.create(fx.path, FabricFixture.small()).close();
        return Files.readAllBytes(fx.path);
    }

    private void patch(long offset, byte[] bytes) throws Exception {
        try (RandomAccessFile f = new RandomAccessFile(fx.path.toFile(), "rw")) {
            f.seek(offset);
            f.write(bytes);
        }
    }

    private static byte[] le32(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array();
    }

    /** Joining must fail with a message naming every fragment, and must leave the file's bytes as they were. */
    private void joinRefused(Executable join, String... fragments) throws Exception {
        byte[] before = Files.readAllBytes(fx.path);
        FabricException e = assertThrows(FabricException.class, join);
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "message '" + e.getMessage() + "' should contain '" + f + "'");
        }
        assertArrayEquals(before, Files.readAllBytes(fx.path), "a refused join must not change the file");
    }

    @Test
    void createOverAnExistingFileFails() throws Exception {
        byte[] before = validFile();
        FabricException e = assertThrows(FabricException.class, () -> ShmFabric.create(fx.path, FabricFixture.small()));
        assertTrue(e.getMessage().contains("already exists"), e.getMessage());
        assertArrayEquals(before, Files.readAllBytes(fx.path));
    }

    @Test
    void createOverAnUnrelatedFileFailsAndKeepsIt() throws Exception {
        Files.writeString(fx.path, "somebody else's data");
        assertThrows(FabricException.class, () -> ShmFabric.create(fx.path, FabricFixture.small()));
        assertEquals("somebody else's data", Files.readString(fx.path));
    }

    @Test
    void joiningAMissingFileNamesIt() {
        FabricException e = assertThrows(FabricException.class, () -> ShmFabric.join(fx.path));
        assertTrue(e.getMessage().contains("no fabric file"), e.getMessage());
        assertTrue(e.getMessage().contains(fx.path.toString()), e.getMessage());
        assertFalse(Files.exists(fx.path), "join must not create the file");
    }

    @Test
    void joiningAFileWithWrongMagicIsRefused() throws Exception {
        validFile();
        patch(FabricLayout.H_MAGIC, "NOTAFAB!".getBytes());
        joinRefused(() -> ShmFabric.join(fx.path), "not a NUPA fabric", "magic", fx.path.toString());
        joinRefused(() -> ShmFabric.inspect(fx.path), "not a NUPA fabric");
        joinRefused(() -> ShmFabric.openOrCreate(fx.path, FabricFixture.small()), "not a NUPA fabric");
    }

    @Test
    void joiningAFileWithWrongVersionIsRefused() throws Exception {
        validFile();
        patch(FabricLayout.H_VERSION, le32(1));
        joinRefused(() -> ShmFabric.join(fx.path), "version 1", "reads version 2");
    }

    @Test
    void joiningATruncatedFileIsRefused() throws Exception {
        byte[] valid = validFile();
        try (RandomAccessFile f = new RandomAccessFile(fx.path.toFile(), "rw")) {
            f.setLength(valid.length - FabricLayout.PAGE);
        }
        joinRefused(() -> ShmFabric.join(fx.path), "truncated or extended", String.valueOf(valid.length));
        assertEquals(valid.length - FabricLayout.PAGE, Files.size(fx.path));
    }

    @Test
    void joiningAnExtendedFileIsRefused() throws Exception {
        byte[] valid = validFile();
        try (RandomAccessFile f = new RandomAccessFile(fx.path.toFile(), "rw")) {
            f.setLength(valid.length + FabricLayout.PAGE);
        }
        joinRefused(() -> ShmFabric.join(fx.path), "truncated or extended",
                String.valueOf(valid.length + FabricLayout.PAGE));
    }

    @Test
    void aFileExtendedToThePowerOfTwoOfAPciBarIsJoined() throws Exception {
        byte[] valid = validFile();
        long bar = FabricLayout.barBytes(valid.length);
        assertTrue(bar > valid.length && Long.bitCount(bar) == 1, "the geometry's size is no power of two: " + valid.length);
        try (RandomAccessFile f = new RandomAccessFile(fx.path.toFile(), "rw")) {
            f.setLength(bar); // what QEMU's ivshmem needs of the file that backs its BAR
        }
        try (Fabric joined = ShmFabric.join(fx.path)) {
            assertEquals(valid.length, joined.geometry().totalBytes());
        }
        try (RandomAccessFile f = new RandomAccessFile(fx.path.toFile(), "rw")) {
            f.setLength(bar * 2);
        }
        joinRefused(() -> ShmFabric.join(fx.path), "truncated or extended", String.valueOf(bar * 2));
    }

    @Test
    void joiningAFileWithADamagedGeometryIsRefused() throws Exception {
        validFile();
        patch(FabricLayout.H_RING_SLOTS, le32(6));
        joinRefused(() -> ShmFabric.join(fx.path), "damaged header", "ring slots 6");
    }

    @Test
    void joiningAFileWhoseOffsetsDoNotFollowFromItsGeometryIsRefused() throws Exception {
        validFile();
        patch(FabricLayout.H_WINDOW_AREA, ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(12345).array());
        joinRefused(() -> ShmFabric.join(fx.path), "damaged header", "offsets");
    }

    @Test
    void openOrCreateCreatesWhenAbsentAndJoinsWhenPresent() {
        FabricGeometry g = FabricFixture.small();
        Fabric first = fx.track(ShmFabric.openOrCreate(fx.path, g));
        assertEquals(g, first.geometry());
        Fabric second = fx.track(ShmFabric.openOrCreate(fx.path, g));
        assertEquals(first.createdMillis(), second.createdMillis());
        Fabric any = fx.track(ShmFabric.openOrCreate(fx.path, null));
        assertEquals(g, any.geometry(), "a null geometry joins whatever exists");
    }

    @Test
    void openOrCreateWithAnotherGeometryIsAnErrorAndLeavesTheFile() throws Exception {
        validFile();
        FabricGeometry other = FabricFixture.small().withRing(16, 256);
        joinRefused(() -> ShmFabric.openOrCreate(fx.path, other), "exists with geometry", "ring");
        joinRefused(() -> ShmFabric.attach(fx.path, 0, FabricFixture.small().withMaxNodes(5)), "exists with geometry");
        assertEquals(FabricFixture.small(), fx.join().geometry());
    }

    @Test
    void inspectIsReadOnly() throws Exception {
        validFile();
        Fabric f = fx.track(ShmFabric.inspect(fx.path));
        assertTrue(f.mem.isReadOnly());
        byte[] before = Files.readAllBytes(fx.path);
        FabricException e = assertThrows(FabricException.class, () -> f.attach(0));
        assertTrue(e.getMessage().contains("read-only"), e.getMessage());
        assertTrue(f.nodes().isEmpty());
        assertArrayEquals(before, Files.readAllBytes(fx.path));
    }

    @Test
    void shmAttachCreatesTheFabricAndUnmapsItWhenTheNodeCloses() {
        FabricNode node = fx.track(ShmFabric.attach(fx.path, 2, FabricFixture.small()));
        assertTrue(Files.exists(fx.path));
        assertEquals(2, node.address());
        Fabric mapping = node.fabric();
        assertEquals(1, mapping.nodes().size());
        node.close();
        assertThrows(IllegalStateException.class, mapping::nodes, "the node's own mapping is closed with it");
        Fabric other = fx.join();
        assertEquals("FREE", other.nodes().getFirst().state());
    }

    @Test
    void createInAMissingDirectoryFailsWithFabricException() {
        Path p = Path.of("/dev/shm/nupa-test-missing-" + UUID.randomUUID(), "fabric");
        FabricException e = assertThrows(FabricException.class, () -> ShmFabric.create(p, FabricFixture.small()));
        assertTrue(e.getMessage().contains(p.toString()), e.getMessage());
    }

    /**
     * A guest's fabric is an ivshmem device's BAR2 in sysfs: named by PCI address, joined and never created, its
     * doorbells polled; a file's fabric keeps its futexes. (VmFabricTest runs nodes on a real BAR in a QEMU guest.)
     */
    @Test
    void aPciDevicesBarIsJoinedNeverCreatedAndItsDoorbellsArePolled() throws Exception {
        assertEquals(Path.of("/sys/bus/pci/devices/0000:00:04.0/resource2"), ShmFabric.pciBar("0000:00:04.0"));
        FabricException e = assertThrows(FabricException.class, () -> ShmFabric.pciBar("00:04.0"));
        assertTrue(e.getMessage().contains("DOMAIN:BUS:DEVICE.FUNCTION"), e.getMessage());
        Path bar = ShmFabric.pciBar("0000:ff:1f.7");
        assertTrue(ShmFabric.isDevice(bar));
        e = assertThrows(FabricException.class, () -> ShmFabric.create(bar, FabricGeometry.defaults()));
        assertTrue(e.getMessage().contains("created on the host"), e.getMessage());
        e = assertThrows(FabricException.class, () -> ShmFabric.openOrCreate(bar, null));
        assertTrue(e.getMessage().contains("no PCI device memory at " + bar), e.getMessage());
        try (Fabric f = ShmFabric.create(fx.path, FabricFixture.small())) {
            assertFalse(f.polled(), "a file's doorbells are futexes");
            assertEquals("futex", f.doorbells());
        }
    }

    /** uio:/dev/uioN and vfio:BDF name the device, and a host without it hears which step is missing. */
    @Test
    void uioAndVfioDevicesAreNamedAndTheirAbsenceExplained() {
        FabricException e = assertThrows(FabricException.class, () -> ShmFabric.uioBar(Path.of("/dev/sda")));
        assertTrue(e.getMessage().contains("is not /dev/uioN"), e.getMessage());
        if (!Files.exists(Path.of("/sys/class/uio/uio97"))) {
            e = assertThrows(FabricException.class, () -> ShmFabric.uioBar(Path.of("/dev/uio97")));
            assertTrue(e.getMessage().contains("no UIO device uio97") && e.getMessage().contains("uio_pci_generic"), e.getMessage());
        }
        Path vfio = ShmFabric.vfioDevice("0000:ff:1f.7");
        assertEquals(Path.of("/sys/bus/pci/devices/0000:ff:1f.7"), vfio);
        assertTrue(ShmFabric.isDevice(vfio));
        e = assertThrows(FabricException.class, () -> ShmFabric.create(vfio, FabricGeometry.defaults()));
        assertTrue(e.getMessage().contains("created on the host"), e.getMessage());
        if (!Files.exists(vfio)) {
            e = assertThrows(FabricException.class, () -> ShmFabric.join(vfio));
            assertTrue(e.getMessage().contains("no PCI device memory at"), e.getMessage());
        }
    }
}
