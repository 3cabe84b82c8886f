package dev.nupa.roce;

/** Queue pair transport services carried: reliable connected and unreliable datagram. */
public enum QpType {
    RC, UD
}
