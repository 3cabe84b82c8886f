package dev.nupa.tcp;

/**
 * A connection buffer could not be allocated: the layer's buffer budget (see {@link TcpLayer#bufferMemoryLimit})
 * or the JVM's native memory bound ({@code -XX:MaxDirectMemorySize}) has no room for it. Thrown to a
 * writer; nothing of its data was taken.
 */
public final class BufferUnavailableException extends IllegalStateException {
    BufferUnavailableException(int capacity, BufferBudget budget) {
        super("no memory for a " + capacity + "-byte TCP buffer: the node's TCP buffers hold " + budget.used() + " of "
                + (budget.limit() == Long.MAX_VALUE ? "unlimited" : budget.limit() + " allowed") + " bytes, or the JVM's"
                + " -XX:MaxDirectMemorySize is reached; close idle connections, lower the buffer sizes (TcpConfig.withBuffers)"
                + " or raise the limits");
    }
}
