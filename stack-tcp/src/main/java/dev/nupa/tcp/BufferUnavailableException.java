package dev.nupa.tcp;

/**
 * A connection buffer could not be allocated: the layer's buffer budget (see {@link TcpLayer#bufferMemoryLimit})
 * or the JVM's native memory bound ({@code -XX:MaxDirectMemorySize}) has no room for it. Thrown to a
 * writer; nothing of its data was taken.
 */
public final class BufferUnavailableException extends IllegalStateException {
    private final boolean neverFits;

    BufferUnavailableException(int capacity, BufferBudget budget, boolean send) {
        super("no memory for a " + capacity + "-byte TCP buffer: the node's TCP buffers hold " + budget.used() + " of "
                + (budget.limit() == Long.MAX_VALUE ? "unlimited" : budget.limit() + " allowed") + " bytes, or the JVM's"
                + " -XX:MaxDirectMemorySize is reached; close idle connections, lower the buffer sizes (TcpConfig.withBuffers)"
                + " or raise the limits");
        this.neverFits = !budget.couldFit(capacity, send);
    }

    /**
     * Whether the buffer is larger than the bound ever gives one (a send buffer past the pressure mark): waiting
     * for other connections to give memory back cannot help, and the writer should fail rather than wait.
     */
    public boolean neverFits() {
        return neverFits;
    }
}
