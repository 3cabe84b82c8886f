package dev.nupa.tests;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.FrameClaim;
import dev.nupa.device.ShmFabric;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/**
 * A producer in its own JVM: attaches at {@code address} of an existing fabric, waits for the
 * consumer, and sends it frames of seeded random sizes carrying {@code id}, its generation, a
 * sequence number and a checksum ({@link TestFrames}). It sends {@code frames} frames, or with
 * {@code frames = -1} until its stdin closes. {@code mode} is {@code claim} (write in place
 * through {@link FabricDevice#tryClaim}) or {@code offer} (copy from a private buffer). With
 * {@code window = 1} it first exports a window, which it never closes itself. With
 * {@code hold-after = k >= 0} it sends k frames, then claims a slot for frame k, writes half of it,
 * prints {@code HOLDING seq=k} and sleeps holding the claim until it is killed (or times out).
 *
 * <p>Args: fabric-path address consumer id frames seed mode window timeout-ms hold-after. Prints
 * {@code ATTACHED ...} once attached and one RESULT line at the end.
 */
public final class ProducerMain {
    private static volatile boolean stdinClosed;

    private ProducerMain() {
    }

    /** Claims the slot for frame {@code seq}, half writes it, and sleeps holding it (to be killed so). */
    private static void hold(FabricNode node, int consumer, FrameClaim claim, long seq, int id, int generation, long deadline)
            throws InterruptedException {
        int rc;
        while ((rc = node.tryClaim(consumer, 1024, claim)) == FabricDevice.BACK_PRESSURED) {
            Thread.yield();
        }
        if (rc != FabricDevice.OK) {
            throw new IllegalStateException("claim to hold failed: " + FabricDevice.describe(rc));
        }
        claim.memory().set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, claim.offset(), seq);
        claim.memory().set(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, claim.offset() + 12, id);
        System.out.println("HOLDING seq=" + seq + " generation=" + generation);
        System.out.flush();
        while (System.nanoTime() - deadline < 0) {
            Thread.sleep(10);
        }
        throw new IllegalStateException("held a claim until the timeout; nobody killed this producer");
    }

    public static void main(String[] args) {
        Path path = Path.of(args[0]);
        int address = Integer.parseInt(args[1]);
        int consumer = Integer.parseInt(args[2]);
        int id = Integer.parseInt(args[3]);
        long frames = Long.parseLong(args[4]);
        long seed = Long.parseLong(args[5]);
        boolean claimMode = switch (args[6]) {
            case "claim" -> true;
            case "offer" -> false;
            default -> throw new IllegalArgumentException("mode must be claim or offer, was " + args[6]);
        };
        boolean exportWindow = args[7].equals("1");
        long deadline = System.nanoTime() + Long.parseLong(args[8]) * 1_000_000L;
        long holdAfter = Long.parseLong(args[9]);
        if (frames < 0) {
            Thread.ofPlatform().daemon().name("stdin-watch").start(() -> {
                try {
                    while (System.in.read() >= 0) {
                        // wait for end of input
                    }
                } catch (IOException e) {
                    // closed
                }
                stdinClosed = true;
            });
        }
        String error = "none";
        boolean timedOut = false;
        long sent = 0;
        long hash = 0;
        long lates = 0;
        long backPressured = 0;
        int generation = -1;
        int windowId = -1;
        try (FabricNode node = ShmFabric.attach(path, address, null); Arena arena = Arena.ofConfined()) {
            generation = node.generation();
            if (exportWindow) {
                FabricWindow w = node.exportWindow(8192, FabricWindow.REMOTE_READ);
                windowId = w.id();
            }
            System.out.println("ATTACHED address=" + address + " generation=" + generation + " window=" + windowId
                    + " pid=" + ProcessHandle.current().pid());
            System.out.flush();
            while (!node.isUp(consumer)) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("consumer " + consumer + " never came up");
                }
                Thread.sleep(1);
            }
            TestFrames out = new TestFrames(seed, node.maxFrame());
            FrameClaim claim = new FrameClaim();
            MemorySegment buffer = arena.allocate(node.maxFrame(), 8);
            int length = out.nextLength();
            long bufferSeq = -1;
            int bufferCrc = 0;
            int fails = 0;
            int rounds = 0;
            while (frames < 0 ? !stdinClosed : sent < frames) {
                if (sent == holdAfter) {
                    hold(node, consumer, claim, sent, id, generation, deadline);
                }
                int rc;
                int crc = 0;
                if (claimMode) {
                    rc = node.tryClaim(consumer, length, claim);
                    if (rc == FabricDevice.OK) {
                        crc = out.write(claim.memory(), claim.offset(), length, sent, id, generation);
                        rc = claim.publish();
                    }
                } else {
                    if (bufferSeq != sent) { // written once per frame, so retries resend the same bytes
                        bufferCrc = out.write(buffer, 0, length, sent, id, generation);
                        bufferSeq = sent;
                    }
                    crc = bufferCrc;
                    rc = node.offer(consumer, buffer, 0, length);
                }
                if (rc == FabricDevice.OK) {
                    hash = TestFrames.mix(hash, sent, length, crc);
                    sent++;
                    length = out.nextLength();
                    fails = 0;
                } else if (rc == FabricDevice.LATE) {
                    lates++; // not delivered: send the same sequence number again
                } else if (rc == FabricDevice.BACK_PRESSURED) {
                    backPressured++;
                    // Leave the core to the consumer: spin briefly, then yield, then nap.
                    if (++fails < 64) {
                        Thread.onSpinWait();
                    } else if (fails < 4096) {
                        Thread.yield();
                    } else {
                        LockSupport.parkNanos(20_000);
                    }
                } else {
                    throw new IllegalStateException("send failed: " + FabricDevice.describe(rc));
                }
                if ((++rounds & 0x3FF) == 0 && System.nanoTime() - deadline > 0) {
                    timedOut = true;
                    break;
                }
            }
        } catch (Exception e) {
            error = (e.getClass().getSimpleName() + ":" + e.getMessage()).replace(' ', '_');
            e.printStackTrace(System.out);
        }
        System.out.println("RESULT address=" + address + " id=" + id + " generation=" + generation + " sent=" + sent
                + " hash=" + hash + " lates=" + lates + " backPressured=" + backPressured + " window=" + windowId
                + " timedOut=" + timedOut + " error=" + error);
        System.out.flush();
        System.exit(error.equals("none") && !timedOut ? 0 : 1);
    }
}
