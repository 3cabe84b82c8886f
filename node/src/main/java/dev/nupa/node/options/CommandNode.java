package dev.nupa.node.options;

import dev.nupa.node.NodeConfig;
import dev.nupa.node.NupaNode;
import java.util.concurrent.TimeUnit;

import io.vertx.core.Vertx;

/**
 * For commands that join the fabric as a node of their own for the length of one task (`ping`,
 * `udp-check`, `tcp-check`): start the node on Vert.x of its own (the node's datapath is the event
 * loop, so the task's sockets run on the node's thread), run the task, then leave, whatever the
 * task did.
 */
public final class CommandNode {
    @FunctionalInterface
    public interface Task {
        public int run(Vertx vertx, NupaNode node) throws Exception;
    }

    private CommandNode() {
    }

    public static int run(NodeOptions options, Task task) throws Exception {
        return run(options.config(), task);
    }

    public static int run(NodeConfig config, Task task) throws Exception {
        NupaNode node = NupaNode.create(config).await(30, TimeUnit.SECONDS);
        try {
            return task.run(node.vertx(), node);
        } finally {
            node.closeAndWait();
        }
    }
}
