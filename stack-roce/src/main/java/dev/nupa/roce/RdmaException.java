package dev.nupa.roce;

/** Misuse of the verbs API (the libibverbs call would return EINVAL, ENOMEM, ...); the message names the remedy. */
public final class RdmaException extends RuntimeException {
    public RdmaException(String message) {
        super(message);
    }
}
