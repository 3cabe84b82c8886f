package dev.nupa.roce.verbs;

/** Queue pair transport services carried: reliable connected and unreliable datagram. */
public enum QpType {
    RC, UD
}
