package dev.nupa.roce.verbs;

/**
 * What the transport tells an observer of send completions, as it writes each into its completion queue. The verbs'
 * observer extends it; the transport calls it on the context's thread and only when one is set.
 */
public interface CompletionObserver {
    /** A send completion of {@code qpNum} ({@code opcode} one of {@link WcOpcode}, {@code status} of {@link WcStatus}). */
    default void completed(int qpNum, long wrId, int opcode, int status, long now) {
    }
}
