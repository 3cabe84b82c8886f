package dev.nupa.device;

/** A fabric problem the caller can act on; the message names the problem and the remedy. */
public class FabricException extends RuntimeException {
    public FabricException(String message) {
        super(message);
    }

    public FabricException(String message, Throwable cause) {
        super(message, cause);
    }
}
