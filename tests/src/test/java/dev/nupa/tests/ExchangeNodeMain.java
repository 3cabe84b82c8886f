package dev.nupa.tests;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FrameClaim;
import dev.nupa.device.FrameHandler;
import dev.nupa.device.ShmFabric;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * One side of {@link TwoProcessExchangeTest}, in its own JVM: attaches at {@code address} of an
 * existing fabric, waits for {@code peer}, then sends {@code frames} frames of seeded random sizes
 * to it while receiving and checking the peer's frames in the same non-blocking loop (on
 * back-pressure it polls, then retries). When it has all of the peer's frames it sends a
 * {@link TestFrames#DONE} frame; it leaves once it has also seen the peer's, so neither side
 * closes while the other still sends.
 *
 * <p>Args: fabric-path address peer frames seed timeout-ms. Prints one RESULT line.
 */
public final class ExchangeNodeMain {
    private ExchangeNodeMain() {
    }

    public static void main(String[] args) {
        Path path = Path.of(args[0]);
        int address = Integer.parseInt(args[1]);
        int peer = Integer.parseInt(args[2]);
        long frames = Long.parseLong(args[3]);
        long seed = Long.parseLong(args[4]);
        long deadline = System.nanoTime() + Long.parseLong(args[5]) * 1_000_000L;
        String error = "none";
        boolean timedOut = false;
        long sent = 0;
        long sentHash = 0;
        long lates = 0;
        long backPressured = 0;
        long t0 = 0;
        long t1 = 0;
        int generation = -1;
        TestFrames.Track in = new TestFrames.Track(peer, -1);
        boolean[] peerDone = {false};
        try (FabricNode node = ShmFabric.attach(path, address, null); Arena arena = Arena.ofConfined()) {
            generation = node.generation();
            while (!node.isUp(peer)) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("peer " + peer + " never came up");
                }
                Thread.sleep(1);
            }
            TestFrames out = new TestFrames(seed, node.maxFrame());
            FrameClaim claim = new FrameClaim();
            FrameHandler check = (src, mem, off, len) -> {
                if (TestFrames.isDone(mem, off, len)) {
                    peerDone[0] = true;
                } else {
                    in.accept(mem, off, len);
                }
            };
            IdleRounds idle = new IdleRounds(node);
            boolean toldPeer = false;
            int length = out.nextLength();
            t0 = System.nanoTime();
            int spins = 0;
            while (!(toldPeer && peerDone[0])) {
                int work = 0;
                if (sent < frames) {
                    int rc = node.tryClaim(peer, length, claim);
                    if (rc == FabricDevice.OK) {
                        int crc = out.write(claim.memory(), claim.offset(), length, sent, address, generation);
                        int published = claim.publish();
                        if (published == FabricDevice.OK) {
                            sentHash = TestFrames.mix(sentHash, sent, length, crc);
                            sent++;
                            length = out.nextLength();
                            work++;
                        } else if (published == FabricDevice.LATE) {
                            lates++; // not delivered: send the same sequence number again
                        } else {
                            throw new IllegalStateException("publish failed: " + FabricDevice.describe(published));
                        }
                    } else if (rc == FabricDevice.BACK_PRESSURED) {
                        backPressured++;
                    } else {
                        throw new IllegalStateException("send failed: " + FabricDevice.describe(rc));
                    }
                }
                work += node.poll(check, 64);
                if (!toldPeer && in.received >= frames) {
                    MemorySegment done = arena.allocate(TestFrames.HEADER, 8);
                    out.writeDone(done, 0, address, generation);
                    int rc;
                    while ((rc = node.offer(peer, done, 0, TestFrames.HEADER)) == FabricDevice.BACK_PRESSURED) {
                        node.poll(check, 64);
                    }
                    if (rc != FabricDevice.OK) {
                        throw new IllegalStateException("sending done failed: " + FabricDevice.describe(rc));
                    }
                    toldPeer = true;
                    work++;
                }
                idle.after(work);
                if ((++spins & 0x3FF) == 0 && System.nanoTime() - deadline > 0) {
                    timedOut = true;
                    break;
                }
            }
            t1 = System.nanoTime();
        } catch (Exception e) {
            error = (e.getClass().getSimpleName() + ":" + e.getMessage()).replace(' ', '_');
            e.printStackTrace(System.out);
        }
        System.out.println("RESULT address=" + address + " generation=" + generation + " sent=" + sent
                + " sentHash=" + sentHash + " lates=" + lates + " backPressured=" + backPressured
                + " peerDone=" + peerDone[0] + " timedOut=" + timedOut + " ms=" + (t1 - t0) / 1_000_000 + " "
                + in.fields("in.") + " error=" + error);
        System.out.flush();
        System.exit(error.equals("none") && !timedOut ? 0 : 1);
    }
}
