package dev.nupa.transport;

import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** What the transport's tests share about the Vert.x nodes they start on a fabric file of their own. */
final class Nodes {
    private Nodes() {
    }

    /** Closes each Vert.x instance that is not null (its node leaves the fabric), then deletes the fabric file. */
    static void close(Path fabric, Vertx... nodes) throws Exception {
        try {
            for (Vertx v : nodes) {
                if (v != null) {
                    v.close().await(10, TimeUnit.SECONDS);
                }
            }
        } finally {
            Files.deleteIfExists(fabric);
        }
    }
}
