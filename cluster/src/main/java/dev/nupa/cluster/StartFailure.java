package dev.nupa.cluster;

import java.net.BindException;

/** The one-line error of a cluster manager that could not start: where, the root cause, and a remedy where one is known. */
final class StartFailure {
    private StartFailure() {
    }

    static IllegalStateException of(String manager, ClusterConfig cluster, Throwable err) {
        Throwable root = err;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String why = manager + " could not start on " + cluster.host() + ":" + cluster.port() + " ("
                + (root.getMessage() != null ? root.getMessage() : root) + ")";
        return new IllegalStateException(root instanceof BindException
                ? why + "; choose a free membership port or stop what holds it" : why, err);
    }
}
