package dev.nupa.node.soak;

import java.util.ArrayList;
import java.util.List;

/** What went wrong during a soak: counted, and the first few kept word for word for the summary. */
final class SoakFailures {
    private static final int KEPT = 10;
    private final List<String> first = new ArrayList<>();
    private long count;

    synchronized void add(String what) {
        count++;
        if (first.size() < KEPT) {
            first.add(what);
            System.out.println("soak: FAILURE " + what);
        }
    }

    synchronized long count() {
        return count;
    }

    synchronized List<String> first() {
        return List.copyOf(first);
    }
}
