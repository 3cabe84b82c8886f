package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** A node killed but not yet reaped by its parent (a zombie) is dead: its address is free to take. */
@Tag("linux")
class ZombieNodeTest {
    private final FabricFixture fx = new FabricFixture();
    private Process parent;

    @AfterEach
    void cleanup() {
        if (parent != null) {
            parent.destroyForcibly(); // the zombie goes to init, which reaps it
        }
        fx.close();
    }

    private static char state(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        return stat.charAt(stat.lastIndexOf(')') + 2);
    }

    @Test
    void aZombieHoldsNoAddress() throws Exception {
        // A parent that never waits, with SIGCHLD at its default (an ignored SIGCHLD, which a child inherits from
        // whoever started the build, would have the kernel reap at once): the killed child stays a zombie.
        parent = new ProcessBuilder("python3", "-c", "import os, signal, sys, time\n"
                + "signal.signal(signal.SIGCHLD, signal.SIG_DFL)\n"
                + "pid = os.fork()\n"
                + "if pid == 0:\n    time.sleep(1000)\n    os._exit(0)\n"
                + "print(pid, flush=True)\n"
                + "time.sleep(1000)\n").start();
        long pid = Long.parseLong(new BufferedReader(new InputStreamReader(parent.getInputStream())).readLine().strip());
        ProcessHandle.of(pid).orElseThrow().destroyForcibly();
        FabricFixture.waitUntil("the killed child is a zombie", () -> {
            try {
                return state(pid) == 'Z';
            } catch (Exception e) {
                return false;
            }
        });
        assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "the JDK calls a zombie alive");

        Fabric fabric = fx.create(FabricFixture.small().withTimeouts(10 * FabricFixture.MS, 60_000 * FabricFixture.MS,
                10_000 * FabricFixture.MS)); // a heartbeat timeout no test waits out: only the pid can free the address
        long n = fabric.nodeOffset(1);
        fabric.mem.set(ValueLayout.JAVA_LONG, n + FabricLayout.N_PID, pid);
        fabric.mem.set(ValueLayout.JAVA_LONG, n + FabricLayout.N_HOST_ID, Fabric.HOST_ID);
        fabric.mem.set(ValueLayout.JAVA_LONG, n + FabricLayout.N_HEARTBEAT, 1L);
        FabricLayout.LONG.setRelease(fabric.mem, n + FabricLayout.N_STATE, Fabric.word(FabricLayout.STATE_UP, 3));

        assertTrue(fabric.provablyDead(1));
        assertFalse(fabric.provablyAlive(1));
        FabricNode node = fx.attach(fabric, 1);
        assertEquals(1, node.address());
    }
}
