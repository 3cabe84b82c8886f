package dev.nupa.tests;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A QEMU guest (`vms/guest.sh run ... --control SOCKET`) that stays up across the tests of a class: booted once, it
 * runs each tool a test asks for through its command channel (vms/init.sh) and prints "nupa-guest: command done"
 * after it; its console is collected line by line.
 */
final class Guest implements AutoCloseable {
    private static final String DONE = "nupa-guest: command done";

    private final Process process;
    private final Path channel;
    private final List<String> lines = new ArrayList<>();

    private Guest(Process process, Path channel) {
        this.process = process;
        this.channel = channel;
        Thread.ofPlatform().daemon().name("guest-console").start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) {
                    synchronized (lines) {
                        lines.add(l);
                    }
                }
            } catch (IOException e) {
                // the guest is gone; what it printed stays
            }
        });
    }

    /**
     * Boots {@code command} (a `vms/guest.sh run` command line, to which the channel's `--control SOCKET` is added) and
     * returns once the guest waits for commands; fails with its console if it does not within {@code bootMs}.
     */
    static Guest boot(List<String> command, long bootMs) throws IOException {
        // A Unix socket's path has at most 107 bytes: a short one in /tmp.
        Path channel = Path.of("/tmp", "nupa-guest-" + java.util.UUID.randomUUID().toString().substring(0, 8) + ".sock");
        List<String> all = new ArrayList<>(command);
        all.addAll(List.of("--control", channel.toString()));
        Process p = new ProcessBuilder(all).redirectErrorStream(true).start();
        p.getOutputStream().close();
        Guest g = new Guest(p, channel);
        g.await(0, "nupa-guest: waiting for commands", bootMs);
        return g;
    }

    /** The console from line {@code from} on. */
    String output(int from) {
        synchronized (lines) {
            return String.join("\n", lines.subList(Math.min(from, lines.size()), lines.size()));
        }
    }

    private int size() {
        synchronized (lines) {
            return lines.size();
        }
    }

    private int indexOf(int from, String line) {
        synchronized (lines) {
            for (int i = from; i < lines.size(); i++) {
                if (lines.get(i).contains(line)) {
                    return i;
                }
            }
            return -1;
        }
    }

    private void await(int from, String line, long timeoutMs) {
        try {
            ChildJvm.waitUntil("the guest's \"" + line + "\"", timeoutMs, () -> indexOf(from, line) >= 0 || !process.isAlive());
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; the guest's console:\n" + output(0), e);
        }
        if (indexOf(from, line) < 0) {
            throw new AssertionError("the guest ended before \"" + line + "\"; its console:\n" + output(0));
        }
    }

    /**
     * Runs one tool in the guest ({@code KEY=VALUE} as vms/init.sh takes it: ping, pingpong, rping, perftest) and
     * returns what the console printed meanwhile, once the guest says the command is done.
     */
    String run(String keyValue, long timeoutMs) throws IOException {
        int from = size();
        send(keyValue);
        await(from, DONE, timeoutMs);
        return output(from);
    }

    /** Writes a line to the channel and returns once the guest echoed it: QEMU drops what a hung-up sender left unread. */
    private void send(String line) throws IOException {
        try (SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            c.connect(UnixDomainSocketAddress.of(channel));
            c.write(ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.UTF_8)));
            c.configureBlocking(false);
            ByteBuffer in = ByteBuffer.allocate(4096);
            StringBuilder back = new StringBuilder();
            ChildJvm.waitUntil("the guest to echo \"" + line + "\" on its channel", 30_000, () -> {
                try {
                    in.clear();
                    int n = c.read(in);
                    if (n > 0) {
                        back.append(new String(in.array(), 0, n, StandardCharsets.UTF_8));
                    }
                    return back.toString().contains(line) || n < 0;
                } catch (IOException e) {
                    return true;
                }
            });
            if (!back.toString().contains(line)) {
                throw new IOException("the guest's channel closed before it took \"" + line + "\"");
            }
        }
    }

    /** Asks the guest to power off and waits for it; kills it (and QEMU under it) where it does not. */
    @Override
    public void close() throws IOException, InterruptedException {
        try {
            if (process.isAlive()) {
                send("stop");
            }
        } catch (IOException e) {
            // no channel: the kill below ends it
        }
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        }
        Files.deleteIfExists(channel);
    }
}
