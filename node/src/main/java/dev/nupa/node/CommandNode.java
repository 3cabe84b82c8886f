package dev.nupa.node;

import java.util.concurrent.TimeUnit;

import io.vertx.core.Vertx;

/**
 * For commands that join the fabric as a node of their own for the length of one task (`ping`,
 * `udp-check`, `tcp-check`): start Vert.x and the node, run the task, then leave and stop, whatever
 * the task did.
 */
final class CommandNode {
    @FunctionalInterface
    interface Task {
        int run(Vertx vertx, NupaNode node) throws Exception;
    }

    private CommandNode() {
    }

    static int run(NodeOptions options, Task task) throws Exception {
        Vertx vertx = Vertx.vertx();
        try {
            NupaNode node = NupaNode.start(vertx, options.config()).await(30, TimeUnit.SECONDS);
            try {
                return task.run(vertx, node);
            } finally {
                node.closeAndWait();
            }
        } finally {
            vertx.close();
        }
    }
}
