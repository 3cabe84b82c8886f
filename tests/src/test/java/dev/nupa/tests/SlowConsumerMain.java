package dev.nupa.tests;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.nupa.cluster.ClusterConfig;
import dev.nupa.cluster.ClusterRequests;
import dev.nupa.cluster.NupaCluster;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Context;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.eventbus.MessageConsumerOptions;
import io.vertx.core.eventbus.impl.MessageConsumerImpl;

/**
 * A member of a two-member clustered Vert.x for {@code EventBusBackPressureTest}, with its event bus on the fabric or on
 * Linux loopback. Arguments: ROLE (consumer|sender) MODE (fabric|linux) FABRIC NODE HAZELCAST_PORT MEMBERS CLUSTER_NAME
 * [MESSAGES BODY_BYTES WINDOW] (the sender's).
 * <ul>
 * <li>consumer: a consumer on {@code slow}, paused and fed one message a millisecond, its queue bounded by
 * {@code MessageConsumerOptions.setMaxBufferedMessages(BUFFERED)}; what arrives beyond it is discarded, as Vert.x does (counted through the
 * consumer's discard handler). On its event loop, {@code ctl} answers {@code sync} (the sender's window),
 * {@code count} ({@code delivered=D discarded=X}) and {@code heap} (bytes of heap in use after a full GC). Prints
 * {@code READY} and runs until killed.</li>
 * <li>sender: waits for stdin to close, then sends MESSAGES bodies of BODY_BYTES to {@code slow}, WINDOW at a time
 * with a {@code sync} request to {@code ctl} after each (the event bus does not push back on a sender: the sender
 * throttles itself), waits until the consumer has accounted for every message, and prints {@code RESULT} with the
 * counts and both members' heap in use after a full GC.</li>
 * </ul>
 */
public final class SlowConsumerMain {
    static final int BUFFERED = 100;
    /** What the sender prints when its stream starts. */
    static final String STREAM = "STREAM";
    private static final int TURN = 100;

    private SlowConsumerMain() {
    }

    public static void main(String[] args) throws Exception {
        String role = args[0];
        boolean fabric = switch (args[1]) {
            case "fabric" -> true;
            case "linux" -> false;
            default -> throw new IllegalArgumentException("mode is fabric or linux, not " + args[1]);
        };
        int node = Integer.parseInt(args[3]);
        ClusterConfig cluster = ClusterConfig.loopback(Integer.parseInt(args[4]), List.of(args[5].split(","))).withName(args[6])
                .withFailureDetection(Duration.ofSeconds(5));
        Vertx vertx;
        if (fabric) {
            vertx = NupaCluster.create(StackConfig.defaults(Path.of(args[2]), node), cluster).await(90, TimeUnit.SECONDS);
        } else {
            VertxOptions options = new VertxOptions();
            options.getEventBusOptions().setHost("127.0.0.1").setClusterPublicHost("127.0.0.1");
            vertx = Vertx.builder().with(options).withClusterManager(NupaCluster.manager(cluster)).buildClustered()
                    .await(90, TimeUnit.SECONDS);
        }
        if (role.equals("consumer")) {
            consumer(vertx);
        } else {
            sender(vertx, Integer.parseInt(args[7]), Integer.parseInt(args[8]), Integer.parseInt(args[9]));
        }
    }

    private static void consumer(Vertx vertx) throws Exception {
        AtomicLong delivered = new AtomicLong();
        AtomicLong discarded = new AtomicLong();
        // On an event loop: a consumer paused and fed one message a millisecond. (A consumer on a worker thread would not
        // do: Vert.x 5.0.7 queues each message as a task on the worker's own queue before the bound is checked, so that
        // queue grows without limit, on Linux as here.)
        Context context = vertx.getOrCreateContext();
        Promise<Void> registered = Promise.promise();
        context.runOnContext(v -> {
            MessageConsumer<Buffer> slow = vertx.eventBus().consumer(
                    new MessageConsumerOptions().setAddress("slow").setMaxBufferedMessages(BUFFERED));
            ((MessageConsumerImpl<Buffer>) slow).discardHandler(m -> discarded.incrementAndGet());
            slow.handler(m -> delivered.incrementAndGet());
            slow.pause();
            vertx.setPeriodic(1, t -> slow.fetch(1));
            slow.completion().onComplete(registered);
        });
        registered.future().await(30, TimeUnit.SECONDS);
        vertx.eventBus().<String>consumer("ctl", m -> {
            switch (m.body()) {
                case "sync" -> m.reply("ok");
                case "count" -> m.reply("delivered=" + delivered.get() + " discarded=" + discarded.get());
                case "heap" -> m.reply(Long.toString(heapAfterGc()));
                default -> m.fail(400, "unknown command " + m.body());
            }
        }).completion().await(30, TimeUnit.SECONDS);
        System.out.println("READY");
    }

    private static void sender(Vertx vertx, int messages, int bodyBytes, int window) throws Exception {
        while (System.in.read() >= 0) {
            // the test closes stdin to start the stream
        }
        System.out.println(STREAM);
        EventBus bus = vertx.eventBus();
        // The consumer's registration reaches this member through Hazelcast: ask until it answers.
        ClusterRequests.requestOnceKnown(vertx, "ctl", "sync", Duration.ofSeconds(30)).await(35, TimeUnit.SECONDS);
        Buffer body = Buffer.buffer(new byte[bodyBytes]);
        DeliveryOptions syncWait = new DeliveryOptions().setSendTimeout(30_000);
        var context = vertx.getOrCreateContext();
        long sent = 0;
        while (sent < messages) {
            long end = Math.min(messages, sent + window);
            long from = sent;
            // A window in event-loop turns of TURN messages (a short task each: a long one is what Vert.x's
            // blocked-thread checker reports), then a request that the consumer's event loop answers only after it has
            // read every message before it (one TCP connection per pair of members, in order).
            Promise<Void> synced = Promise.promise();
            for (long turn = from; turn < end; turn += TURN) {
                long first = turn;
                long last = Math.min(end, turn + TURN);
                context.runOnContext(v -> {
                    for (long i = first; i < last; i++) {
                        bus.send("slow", body);
                    }
                });
            }
            context.runOnContext(v -> bus.request("ctl", "sync", syncWait).<Void>mapEmpty().onComplete(synced));
            try {
                synced.future().await(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                System.out.println("STALLED after " + sent + " sent: " + e);
                System.exit(4);
            }
            sent = end;
        }
        String count = "";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() - deadline < 0) {
            count = bus.<String>request("ctl", "count").await(10, TimeUnit.SECONDS).body();
            String[] f = count.split("[= ]");
            if (Long.parseLong(f[1]) + Long.parseLong(f[3]) >= messages) {
                break;
            }
            Thread.sleep(10); // a pause between looks at the consumer's count (each look is a request), not a timing
        }
        String consumerHeap = bus.<String>request("ctl", "heap").await(30, TimeUnit.SECONDS).body();
        System.out.println("RESULT sent=" + sent + " " + count + " senderHeap=" + heapAfterGc() + " consumerHeap=" + consumerHeap
                + " maxHeap=" + Runtime.getRuntime().maxMemory());
        System.exit(0);
    }

    private static long heapAfterGc() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
