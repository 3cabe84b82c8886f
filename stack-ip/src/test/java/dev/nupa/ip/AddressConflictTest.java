package dev.nupa.ip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import dev.nupa.device.FabricDevice;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.l2.NeighborDirectory.Binding;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** RFC 5227 address conflict detection between the nodes of a fabric. */
class AddressConflictTest {
    private final IpFixture fx = new IpFixture(4);

    @AfterEach
    void cleanup() {
        fx.close();
    }

    @Test
    void aNodeRefusesTheAddressOfALiveNode() {
        fx.node(0);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> fx.node(1, d -> d, c -> IpConfig.of(IpFixture.ip(0), 24)));
        assertTrue(e.getMessage().contains("10.0.0.1/24 at node 0") && e.getMessage().contains("in use"), e.getMessage());
        fx.node(2); // another address is taken as ever
    }

    @Test
    void aConflictThatAppearsLaterIsCountedOnceByBothNodes() {
        FabricDevice d0 = fx.fabric.attach(0);
        FabricDevice d1 = fx.fabric.attach(1);
        try (d0; d1; NeighborDirectory n0 = new NeighborDirectory(d0); NeighborDirectory n1 = new NeighborDirectory(d1)) {
            n0.publish(List.of(new Binding(IpFixture.ip(0), 24, 0)));
            n1.publish(List.of(new Binding(IpFixture.ip(1), 24, 1)));
            assertEquals(0, n0.conflicts());
            assertEquals(0, n1.conflicts());
            // Node 1 comes to claim node 0's address after both started (as two nodes that probed at the same time).
            n1.publish(List.of(new Binding(IpFixture.ip(0), 24, 1)));
            assertEquals(1, n1.conflicts(), "the claimer sees the holder as it publishes");
            n0.rescan(); // as on any peer event or lookup miss
            assertEquals(1, n0.conflicts());
            n0.rescan();
            n1.rescan();
            assertEquals(1, n0.conflicts(), "one conflict is counted once");
            assertEquals(1, n1.conflicts());
        }
    }
}
