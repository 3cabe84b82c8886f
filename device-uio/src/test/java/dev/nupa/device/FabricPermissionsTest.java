package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalNotFoundException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** File permissions guard the fabric: created 0600 or 0660 for a group, and untrusted files refused on join. */
class FabricPermissionsTest {
    private final FabricFixture fx = new FabricFixture();

    @AfterEach
    void cleanup() {
        fx.close();
    }

    private PosixFileAttributes attributes() throws IOException {
        return Files.readAttributes(fx.path, PosixFileAttributes.class);
    }

    private static PosixFileAttributes self() throws IOException {
        return Files.readAttributes(Path.of("/proc/self"), PosixFileAttributes.class);
    }

    private static boolean root() throws IOException {
        return self().owner().getName().equals("root");
    }

    @Test
    void aCreatedFabricIsTheOwnersAlone() throws Exception {
        fx.create(FabricFixture.small());
        assertEquals("rw-------", PosixFilePermissions.toString(attributes().permissions()));
        assertEquals(self().owner().getName(), attributes().owner().getName());
    }

    @Test
    void aFabricSharedWithAGroupIs0660WithThatGroup() throws Exception {
        // Root may give a file to any group: then one other than its own, so the group is seen to change.
        String group = self().group().getName();
        if (root()) {
            try {
                group = fx.path.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByGroupName("nogroup").getName();
            } catch (UserPrincipalNotFoundException e) {
                // no nogroup here: root's own group
            }
        }
        ShmFabric.create(fx.path, FabricFixture.small(), new FabricAccess(group, false)).close();
        assertEquals("rw-rw----", PosixFilePermissions.toString(attributes().permissions()));
        assertEquals(group, attributes().group().getName());
    }

    @Test
    void anUnknownGroupLeavesNoFile() {
        FabricException e = assertThrows(FabricException.class,
                () -> ShmFabric.create(fx.path, FabricFixture.small(), new FabricAccess("nupa-no-such-group", false)));
        assertTrue(e.getMessage().contains("group nupa-no-such-group"), e.getMessage());
        assertFalse(Files.exists(fx.path));
    }

    @Test
    void aFileAnyUserMayWriteIsJoinedOnlyWhenTrusted() throws Exception {
        ShmFabric.create(fx.path, FabricFixture.small()).close();
        Files.setPosixFilePermissions(fx.path, PosixFilePermissions.fromString("rw-rw-rw-"));
        FabricException e = assertThrows(FabricException.class, () -> ShmFabric.join(fx.path));
        assertTrue(e.getMessage().contains("may be written by any user") && e.getMessage().contains("--trust-fabric"), e.getMessage());
        ShmFabric.join(fx.path, new FabricAccess(null, true)).close();
        ShmFabric.inspect(fx.path).close(); // looking, read-only, is not joining
    }

    @Test
    void anotherUsersFileIsJoinedOnlyWhenTrustedOrSharedWithOurGroup() throws Exception {
        assumeTrue(root(), "giving a file to another user needs root");
        ShmFabric.create(fx.path, FabricFixture.small()).close();
        Files.setOwner(fx.path, fx.path.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody"));
        // Root too is refused, as ssh refuses root a key file of another user.
        FabricException e = assertThrows(FabricException.class, () -> ShmFabric.join(fx.path));
        assertTrue(e.getMessage().contains("belongs to user nobody") && e.getMessage().contains("--trust-fabric"), e.getMessage());
        assertThrows(FabricException.class, () -> ShmFabric.attach(fx.path, 0, FabricFixture.small()));
        ShmFabric.join(fx.path, new FabricAccess(null, true)).close();
        ShmFabric.join(fx.path, new FabricAccess(attributes().group().getName(), false)).close();
    }
}
