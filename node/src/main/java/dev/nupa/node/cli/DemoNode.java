package dev.nupa.node.cli;

import dev.nupa.perf.PerfSession;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FrameClaim;
import dev.nupa.device.FrameHandler;
import dev.nupa.device.ShmFabric;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.zip.CRC32C;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One node of the demo (started by `nupa demo`): streams frames of random sizes to its peer while
 * checking the peer's frames arrive complete, in order and checksum-equal. A frame is
 * [u64 sequence][u32 crc32c of the rest][payload]; sequence -1 says "I have all of yours".
 */
@Command(name = "demo-node", hidden = true, description = "One side of `nupa demo`.")
final class DemoNode implements Callable<Integer> {
    @Option(names = "--fabric", required = true)
    Path fabric;
    @Option(names = "--address", required = true)
    int address;
    @Option(names = "--peer", required = true)
    int peer;
    @Option(names = "--frames", defaultValue = "100000")
    long frames;

    private long expected;
    private long errors;
    private boolean peerDone;
    private final CRC32C crc = new CRC32C();

    @Override
    public Integer call() {
        try (FabricNode node = ShmFabric.attach(fabric, address, null)) {
            long deadline = System.currentTimeMillis() + 30_000;
            while (!node.isUp(peer)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("peer node " + peer + " never came up");
                }
                PerfSession.sleep(5);
            }
            SplittableRandom random = new SplittableRandom(address * 7919L + 1);
            FrameClaim claim = new FrameClaim();
            FrameHandler check = (src, mem, off, len) -> {
                long seq = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off);
                if (seq == -1) {
                    peerDone = true;
                    return;
                }
                crc.reset();
                crc.update(mem.asSlice(off + 12, len - 12).asByteBuffer());
                if (seq != expected || (int) crc.getValue() != mem.get(ValueLayout.JAVA_INT_UNALIGNED, off + 8)) {
                    errors++;
                }
                expected = seq + 1;
            };
            long sent = 0;
            long bytes = 0;
            boolean toldPeer = false;
            long t0 = System.nanoTime();
            while (!(toldPeer && peerDone)) {
                if (sent < frames) {
                    int len = 12 + random.nextInt(node.maxFrame() - 11);
                    int rc = node.tryClaim(peer, len, claim);
                    if (rc == FabricDevice.OK) {
                        MemorySegment m = claim.memory();
                        long off = claim.offset();
                        m.set(ValueLayout.JAVA_LONG_UNALIGNED, off, sent);
                        for (long p = off + 12; p < off + len; p++) {
                            m.set(ValueLayout.JAVA_BYTE, p, (byte) random.nextInt());
                        }
                        crc.reset();
                        crc.update(m.asSlice(off + 12, len - 12).asByteBuffer());
                        m.set(ValueLayout.JAVA_INT_UNALIGNED, off + 8, (int) crc.getValue());
                        if (claim.publish() == FabricDevice.OK) {
                            sent++;
                            bytes += len;
                        }
                    } else if (rc != FabricDevice.BACK_PRESSURED) {
                        throw new IllegalStateException("send failed: " + FabricDevice.describe(rc));
                    }
                }
                node.poll(check, 64);
                if (!toldPeer && expected == frames) {
                    MemorySegment done = MemorySegment.ofArray(new long[] {-1, 0});
                    while (node.offer(peer, done, 0, 16) == FabricDevice.BACK_PRESSURED) {
                        node.poll(check, 64);
                    }
                    toldPeer = true;
                }
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("node %d (pid %d, generation %d): sent %d frames (%.1f MB), received %d in order, %d bad, in %d ms%n",
                    address, ProcessHandle.current().pid(), node.generation(), sent, bytes / 1e6, expected, errors, ms);
            return errors == 0 ? 0 : 1;
        }
    }
}
