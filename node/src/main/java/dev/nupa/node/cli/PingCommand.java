package dev.nupa.node.cli;

import dev.nupa.node.options.CommandNode;
import dev.nupa.node.options.NodeOptions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import dev.nupa.ip.EchoListener;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.wire.IcmpHeader;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `nupa ping`: ICMP echo over the fabric, with Linux ping's options, lines and summary. It joins the
 * fabric as a node of its own (the first free address unless --address says), pings, and leaves.
 * Each request carries its send time in its first 8 bytes, as Linux ping carries a timeval.
 */
@Command(name = "ping", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Send ICMP echo requests over the fabric and report replies as Linux ping does.")
final class PingCommand implements Callable<Integer> {
    @Parameters(paramLabel = "DESTINATION", description = "IPv4 address to ping.")
    String destination;

    @Option(names = "-c", paramLabel = "COUNT", description = "Stop after COUNT requests (default: until interrupted).")
    Long count;

    @Option(names = "-i", paramLabel = "SECONDS", defaultValue = "1", description = "Seconds between requests (default: ${DEFAULT-VALUE}).")
    double interval;

    @Option(names = "-s", paramLabel = "BYTES", defaultValue = "56", description = "Data bytes per request, 0..65507; below 8 no send time, so no RTT (default: ${DEFAULT-VALUE}).")
    int size;

    @Option(names = "-W", paramLabel = "SECONDS", defaultValue = "10", description = "Seconds to wait for a reply (default: ${DEFAULT-VALUE}).")
    double timeout;

    @Option(names = "-w", paramLabel = "DEADLINE",
            description = "Seconds before ping exits, whatever was sent or received; with -c it stops once COUNT replies came, and exits 1"
                    + " if fewer did (Linux's -w: wait for a peer that is still starting).")
    Double deadline;

    @Option(names = "-q", description = "Quiet: only the summary.")
    boolean quiet;

    @Option(names = "-A", description = "Adaptive: send the next request as soon as a reply comes (at most one unanswered), "
            + "or after -i if none does.")
    boolean adaptive;

    @Mixin
    NodeOptions options;

    private record Event(boolean reply, int from, int sequence, int ttl, int bytes, long rttNs, int type, int code) {
    }

    @Override
    public Integer call() throws Exception {
        int dst = Ipv4Address.parse(destination);
        if (interval < 0.001 || timeout <= 0 || (count != null && count < 1) || (deadline != null && deadline <= 0)) {
            throw new IllegalArgumentException("need -i >= 0.001, -W > 0, -c >= 1 and -w > 0");
        }
        options.requireExistingFabric("ping");
        return CommandNode.run(options, (vertx, node) -> ping(node.ip(), dst));
    }

    private int ping(Ipv4Stack ip, int dst) throws InterruptedException {
        int id = (int) (ProcessHandle.current().pid() & 0xFFFF);
        boolean timing = size >= 8; // iputils ping: fewer than 8 data bytes carry no send time, so no RTT is shown
        LinkedBlockingQueue<Event> events = new LinkedBlockingQueue<>();
        EchoListener listener = new EchoListener() {
            @Override
            public void onEchoReply(int from, int sequence, int ttl, MemorySegment data, long offset, int length, long now) {
                long rtt = timing && length >= 8 ? System.nanoTime() - data.get(ValueLayout.JAVA_LONG_UNALIGNED, offset) : -1;
                events.add(new Event(true, from, sequence, ttl, length + IcmpHeader.HEADER, rtt, 0, 0));
            }

            @Override
            public void onError(int from, int type, int code, int sequence, long now) {
                events.add(new Event(false, from, sequence, 0, 0, 0, type, code));
            }
        };
        ip.addEchoListener(id, listener);
        MemorySegment data = Arena.ofAuto().allocate(size);
        for (int i = 8; i < size; i++) {
            data.set(ValueLayout.JAVA_BYTE, i, (byte) i); // Linux ping's pattern: 0x08, 0x09, ...
        }
        System.out.printf("PING %s (%s) %d(%d) bytes of data.%n", destination, destination, size,
                size + IcmpHeader.HEADER + Ipv4Header.MIN_HEADER);
        long start = System.nanoTime();
        long transmitted = 0;
        long received = 0;
        long errors = 0;
        double min = Double.MAX_VALUE;
        double max = 0;
        double sum = 0;
        double sumSq = 0;
        boolean[] seen = new boolean[65536];
        long intervalNs = (long) (interval * 1e9);
        long nextSend = start;
        long lastSend = start;
        long deadlineAt = deadline == null ? Long.MAX_VALUE : start + (long) (deadline * 1e9);
        try {
            while (true) {
                long now = System.nanoTime();
                if (deadline != null && (now - deadlineAt >= 0 || (count != null && received >= count))) {
                    break;
                }
                // With a deadline, requests go on until COUNT replies came; without, until COUNT were sent.
                boolean moreToSend = count == null || (deadline != null ? received < count : transmitted < count);
                if (moreToSend && now >= nextSend) {
                    int seq = (int) ((transmitted + 1) & 0xFFFF);
                    if (timing) {
                        data.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, System.nanoTime());
                    }
                    int rc = ip.link().call(() -> ip.sendEchoRequest(dst, id, seq, data, 0, size)); // on the loop
                    transmitted++;
                    lastSend = now;
                    nextSend += intervalNs;
                    if (rc != SendStatus.OK) {
                        errors++;
                        System.out.printf("From %s icmp_seq=%d %s%n", Ipv4Address.toString(ip.address()), seq,
                                rc == SendStatus.NO_NEIGHBOR ? "Destination Host Unreachable"
                                        : rc == SendStatus.NO_ROUTE ? "Destination Net Unreachable" : SendStatus.describe(rc));
                    }
                    continue;
                }
                if (!moreToSend && (received + errors >= transmitted || now - lastSend > (long) (timeout * 1e9))) {
                    break;
                }
                long waitNs = Math.min(moreToSend ? nextSend - now : lastSend + (long) (timeout * 1e9) - now, deadlineAt - now);
                Event e = events.poll(Math.max(1, waitNs), TimeUnit.NANOSECONDS);
                if (e == null) {
                    continue;
                }
                if (e.reply) {
                    boolean dup = seen[e.sequence];
                    seen[e.sequence] = true;
                    if (!dup) {
                        received++;
                    }
                    if (adaptive && e.sequence == (int) (transmitted & 0xFFFF)) {
                        nextSend = System.nanoTime(); // the latest request is answered: the next goes now
                    }
                    double ms = e.rttNs / 1e6;
                    if (e.rttNs >= 0) {
                        min = Math.min(min, ms);
                        max = Math.max(max, ms);
                        sum += ms;
                        sumSq += ms * ms;
                    }
                    if (!quiet) {
                        System.out.printf(Locale.ROOT, "%d bytes from %s: icmp_seq=%d ttl=%d%s%s%n", e.bytes,
                                Ipv4Address.toString(e.from), e.sequence, e.ttl, e.rttNs >= 0 ? " time=" + rtt(ms) + " ms" : "",
                                dup ? " (DUP!)" : "");
                    }
                } else {
                    errors++;
                    System.out.printf("From %s icmp_seq=%d %s%n", Ipv4Address.toString(e.from), e.sequence,
                            describe(e.type, e.code));
                }
            }
        } finally {
            ip.removeEchoListener(id, listener);
        }
        long elapsedMs = (System.nanoTime() - start) / 1_000_000;
        System.out.printf("%n--- %s ping statistics ---%n", destination);
        System.out.printf("%d packets transmitted, %d received,%s %d%% packet loss, time %dms%n", transmitted, received,
                errors > 0 ? " +" + errors + " errors," : "", transmitted == 0 ? 0 : (transmitted - received) * 100 / transmitted,
                elapsedMs);
        if (received > 0 && timing) {
            double n = received;
            double avg = sum / n;
            double mdev = Math.sqrt(Math.max(0, sumSq / n - avg * avg));
            System.out.printf(Locale.ROOT, "rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms%n", min, avg, max, mdev);
        }
        return deadline != null && count != null ? (received >= count ? 0 : 1) : received > 0 ? 0 : 1;
    }

    /** Linux ping prints 3 significant digits, at least 3 decimals below 1 ms. */
    private static String rtt(double ms) {
        return ms >= 100 ? String.format(Locale.ROOT, "%.0f", ms)
                : ms >= 10 ? String.format(Locale.ROOT, "%.1f", ms)
                : ms >= 1 ? String.format(Locale.ROOT, "%.2f", ms) : String.format(Locale.ROOT, "%.3f", ms);
    }

    private static String describe(int type, int code) {
        if (type == IcmpHeader.TYPE_TIME_EXCEEDED) {
            return code == 0 ? "Time to live exceeded" : "Frag reassembly time exceeded";
        }
        return switch (code) {
            case IcmpHeader.UNREACHABLE_NET -> "Destination Net Unreachable";
            case IcmpHeader.UNREACHABLE_HOST -> "Destination Host Unreachable";
            case IcmpHeader.UNREACHABLE_PROTOCOL -> "Destination Protocol Unreachable";
            case IcmpHeader.UNREACHABLE_PORT -> "Destination Port Unreachable";
            case IcmpHeader.UNREACHABLE_FRAGMENTATION_NEEDED -> "Frag needed";
            default -> "Destination Unreachable, code " + code;
        };
    }
}
