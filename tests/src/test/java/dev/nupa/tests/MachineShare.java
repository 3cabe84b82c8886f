package dev.nupa.tests;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Shares the machine between the test JVMs that run classes side by side (the surefire forks): every test class holds
 * a shared lock on one file while it runs, and a class marked {@link RunsAlone} an exclusive one, so it waits for the
 * classes running in the other JVM to end and none starts beside it. Without it, the 1,024 nodes of
 * {@code FabricScaleTest} starved a test in the other JVM of CPU on a 2-CPU machine (a node there took over 30 s to
 * notice its fabric file was removed; a gateway over 60 s to start). Registered for every class through JUnit's
 * extension autodetection (junit-platform.properties). A class runs with nothing held when the file cannot be opened
 * or locked (no temporary directory to write): as before, side by side.
 */
public final class MachineShare implements BeforeAllCallback, AfterAllCallback {
    /** In the temporary directory, so that test runs of several checkouts on one machine share it too. */
    static final Path LOCK = Path.of(System.getProperty("java.io.tmpdir"), "nupa-tests-machine.lock");
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(MachineShare.class);

    @Override
    public void beforeAll(ExtensionContext context) throws IOException {
        if (context.getStore(NS).get("lock") != null) {
            return; // a nested class: its enclosing class holds the lock (this JVM cannot lock the file twice)
        }
        boolean alone = context.getRequiredTestClass().isAnnotationPresent(RunsAlone.class);
        long t0 = System.nanoTime();
        FileLock lock;
        try {
            FileChannel channel = FileChannel.open(LOCK, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.READ);
            try {
                lock = channel.lock(0, Long.MAX_VALUE, !alone); // waits for the other JVM's classes (or its lone class)
            } catch (IOException e) {
                channel.close();
                throw e;
            }
        } catch (IOException e) {
            System.err.println("MachineShare: cannot lock " + LOCK + " (" + e.getMessage() + "); " + context.getDisplayName()
                    + " runs without it");
            return;
        }
        long waitedMs = (System.nanoTime() - t0) / 1_000_000;
        if (alone || waitedMs > 1000) {
            System.out.println("MachineShare: " + context.getDisplayName() + (alone ? " runs alone" : " ran after a class"
                    + " that runs alone") + " (waited " + waitedMs + " ms)");
        }
        context.getStore(NS).put("lock", lock);
    }

    @Override
    public void afterAll(ExtensionContext context) throws IOException {
        FileLock lock = context.getStore(NS).remove("lock", FileLock.class);
        if (lock != null) {
            lock.release();
            lock.channel().close();
        }
    }
}
