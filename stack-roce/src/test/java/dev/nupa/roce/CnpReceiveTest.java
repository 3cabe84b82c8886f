package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;

import dev.nupa.ip.SendStatus;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.wire.Bth;
import dev.nupa.roce.wire.Cnp;

/** CNPs arriving over RoCEv2: for an unknown QP counted and dropped, a truncated one counted as malformed. */
class CnpReceiveTest {
    @Test
    void aCnpForAnUnknownQpIsCountedAndDropped() {
        try (RdmaFixture fx = new RdmaFixture()) {
            fx.ipNode(1);
            RdmaContext b = fx.ipNode(2);
            MemorySegment p = Arena.ofAuto().allocate(Cnp.LENGTH);
            Cnp.write(p, 0, 0x999);
            assertEquals(SendStatus.OK, fx.stack(0).sendRoceV2(0xC001, RdmaFixture.ip(2), p, 0, Cnp.LENGTH, 0));
            fx.pump();
            assertEquals(1, b.counter(RdmaCounter.CNPS_RECEIVED));
            assertEquals(1, b.counter(RdmaCounter.CNPS_UNKNOWN_QP));
            assertEquals(0, b.counter(RdmaCounter.RATE_DECREASES));

            long malformed = b.counter(RdmaCounter.MALFORMED);
            assertEquals(SendStatus.OK, fx.stack(0).sendRoceV2(0xC001, RdmaFixture.ip(2), p, 0, Bth.LENGTH + 4, 0));
            fx.pump();
            assertEquals(malformed + 1, b.counter(RdmaCounter.MALFORMED), "a CNP without its 16 reserved bytes");
            assertEquals(1, b.counter(RdmaCounter.CNPS_RECEIVED));
        }
    }
}
