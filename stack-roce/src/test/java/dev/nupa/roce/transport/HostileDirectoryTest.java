package dev.nupa.roce.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricDevice;
import dev.nupa.roce.RcPair;
import dev.nupa.roce.RdmaFixture;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * A peer's directory is memory another process writes: an entry whose window offset lies outside the window it
 * names is not followed. The requester sends the operation as packets, which the target's responder judges from
 * its own tables, and the WRITE lands where it should.
 */
class HostileDirectoryTest {

    private static void write(RcPair p, long id, long offset) {
        p.qa.postSend(new SendWorkRequest(1).wrId(id).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .remote(p.mrB.addr() + offset, p.mrB.rkey()).local(p.mrA, offset, 256));
        p.fx.pump();
        RdmaFixture.assertStatus(WcStatus.SUCCESS, RdmaFixture.poll(p.cqA));
    }

    @Test
    void anEntryWhoseWindowOffsetLiesOutsideItsWindowIsNotFollowed() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            RdmaFixture.fill(p.mrA.memory(), 3);
            write(p, 1, 0);
            assertEquals(1, p.a.counter(RdmaCounter.DIRECT_OPS), "placed directly while the entry is sound");

            FabricDevice reader = p.fx.devices.get(0);
            VerbsDirectory view = VerbsDirectory.open(reader.openDirectory(p.b.node()), reader);
            long e = view.mrEntry(p.mrB.rkey());
            // What a hostile process with the fabric file mapped can do: write the entry in place.
            MemorySegment raw = MemorySegment.ofAddress(view.mem.address()).reinterpret(view.mem.byteSize());
            long fallbacks = p.a.counter(RdmaCounter.DIRECT_FALLBACKS);
            long[] offsets = {1L << 40, -4096, Long.MIN_VALUE};
            for (int i = 0; i < offsets.length; i++) {
                raw.set(ValueLayout.JAVA_LONG, e + 40, offsets[i]);
                raw.set(ValueLayout.JAVA_LONG, 16, raw.get(ValueLayout.JAVA_LONG, 16) + 1); // the epoch: check again
                write(p, 2 + i, 1024L * (i + 1));
                assertEquals(fallbacks + i + 1, p.a.counter(RdmaCounter.DIRECT_FALLBACKS), "offset " + offsets[i] + " sent as packets");
                assertEquals(-1, p.mrB.memory().asSlice(1024L * (i + 1), 256).mismatch(p.mrA.memory().asSlice(1024L * (i + 1), 256)),
                        "the WRITE landed where its address says");
            }
            assertTrue(p.a.counter(RdmaCounter.DIRECT_OPS) == 1, "nothing placed through the hostile entry");
        }
    }
}
