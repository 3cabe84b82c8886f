package dev.nupa.device;

/**
 * Which failures of a handler, task or timer a datapath loop counts and goes on from: every exception and
 * the errors one piece of code can cause without the JVM being broken (a failed assertion, a class that
 * did not link, running out of heap or stack). The loop itself allocates nothing per frame, and every
 * other connection, socket and queue pair of the node still needs it; one that died would leave the node
 * up in the fabric with nobody draining its rings. A fault on mapped memory (a fabric file truncated under
 * the node) is survivable too: the node's liveness thread finds the file's loss and stops the node cleanly
 * ({@link FabricNode#lostReason()}), which a dead loop would not let happen. Anything else (a broken JVM) is
 * thrown on.
 */
public final class DatapathErrors {
    private DatapathErrors() {
    }

    public static boolean survivable(Throwable t) {
        return t instanceof RuntimeException || t instanceof AssertionError || t instanceof LinkageError
                || t instanceof OutOfMemoryError || t instanceof StackOverflowError || FabricFile.isMappingFault(t);
    }
}
