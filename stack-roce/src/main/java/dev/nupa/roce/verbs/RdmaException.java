package dev.nupa.roce.verbs;

/**
 * Misuse of the verbs API (the libibverbs call would return EINVAL, ENOMEM, ...), or a failure the peer reported;
 * the message names the remedy.
 */
public class RdmaException extends RuntimeException {
    public RdmaException(String message) {
        super(message);
    }
}
