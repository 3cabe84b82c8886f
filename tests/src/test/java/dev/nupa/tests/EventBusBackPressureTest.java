package dev.nupa.tests;

import static dev.nupa.tests.ClusterTestSupport.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Back-pressure with a slow consumer, in two JVMs ({@link SlowConsumerMain}): a member whose consumer on a worker
 * thread takes 1 ms a message, its queue bounded by
 * {@code MessageConsumerOptions.setMaxBufferedMessages}, and a member that sends it a stream
 * of 600 MB (150,000 messages of 4 KiB) point-to-point, each member's heap 256 MB. Vert.x's event bus does not push
 * back across members: the consumer's event loop keeps reading and discards what arrives beyond the bound, and the
 * sender throttles itself with a request every 1,000 messages, which the consumer's event loop answers in order.
 * The same run with the event bus on the fabric and on Linux loopback ends the same way: every message delivered or
 * discarded (none lost otherwise, none twice), messages discarded, no OutOfMemoryError, both heaps small after the
 * stream, the consumer's event loop answering throughout and neither member's reported blocked by Vert.x while the
 * stream runs.
 */
@Tag("process")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EventBusBackPressureTest {
    private static final int MESSAGES = 150_000;
    private static final int BODY = 4096;
    private static final int WINDOW = 1000;

    @Test
    void aSlowConsumerDiscardsBeyondItsBoundAndNoMemberGrowsOnTheFabricAsOnLinux() throws Exception {
        Path fabric = ChildJvm.newFabricPath();
        Map<String, ChildJvm[]> runs = new LinkedHashMap<>();
        try {
            // Both clusters start side by side (Hazelcast's joins mostly wait); the streams then run one after the other.
            for (String mode : new String[] {"fabric", "linux"}) {
                int[] ports = {freePort(), freePort()};
                String members = "127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1];
                String name = "bp-" + mode + "-" + UUID.randomUUID();
                ChildJvm consumer = ChildJvm.start("slow-" + mode, SlowConsumerMain.class, "consumer", mode, fabric, 0, ports[0],
                        members, name);
                ChildJvm sender = ChildJvm.start("sender-" + mode, SlowConsumerMain.class, "sender", mode, fabric, 1, ports[1],
                        members, name, MESSAGES, BODY, WINDOW);
                runs.put(mode, new ChildJvm[] {consumer, sender});
            }
            // Each mode must meet the same checks: the outcome classes of the fabric's run and Linux's are the same.
            for (var run : runs.entrySet()) {
                String mode = run.getKey();
                ChildJvm consumer = run.getValue()[0];
                ChildJvm sender = run.getValue()[1];
                consumer.awaitLine("READY", 90_000);
                sender.closeStdin();
                Map<String, String> r = sender.awaitResult(90_000);
                System.out.println("EventBusBackPressureTest " + mode + ": " + r);
                long delivered = ChildJvm.num(r, "delivered");
                long discarded = ChildJvm.num(r, "discarded");
                long maxHeap = ChildJvm.num(r, "maxHeap");
                assertEquals(MESSAGES, ChildJvm.num(r, "sent"), mode);
                assertEquals(MESSAGES, delivered + discarded, mode + ": every message is delivered or discarded, once: " + r);
                // The consumer takes 1 ms a message; the stream arrives far faster, so most of it meets a full queue.
                assertTrue(discarded > 0 && delivered >= SlowConsumerMain.BUFFERED, mode + ": " + r);
                // 600 MB went through each 256 MB heap; what stays is a small part of it.
                assertTrue(ChildJvm.num(r, "senderHeap") < maxHeap / 4, mode + ": the sender holds " + r);
                assertTrue(ChildJvm.num(r, "consumerHeap") < maxHeap / 4, mode + ": the consumer holds " + r);
                String[] streamStarts = {"READY", SlowConsumerMain.STREAM};
                for (int i = 0; i < 2; i++) {
                    ChildJvm child = run.getValue()[i];
                    String out = child.output();
                    assertFalse(out.contains("OutOfMemoryError"), child.name + ":\n" + out);
                    // Vert.x's blocked-thread checker warns of an event loop held beyond 2 s. Only the stream is this
                    // test's concern: a loop held while Hazelcast forms the cluster on a loaded machine (a full GC
                    // and no free CPU) is not.
                    String stream = out.substring(Math.max(0, out.indexOf(streamStarts[i])));
                    assertFalse(stream.contains("has been blocked for"), child.name + ":\n" + out);
                }
            }
        } finally {
            for (ChildJvm[] run : runs.values()) {
                for (ChildJvm child : run) {
                    child.close();
                }
            }
            Files.deleteIfExists(fabric);
        }
    }
}
