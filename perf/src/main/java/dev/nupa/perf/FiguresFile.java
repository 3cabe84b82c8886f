package dev.nupa.perf;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The suite's tables in docs/figures.md: one per machine kind, between two marker comments, each figure's row
 * replaced by each run of the suite that measures it on that kind of machine (never appended twice), so the file holds
 * each kind's latest figures.
 */
final class FiguresFile {
    private FiguresFile() {
    }

    static String begin(String kind) {
        return "<!-- nupa perf suite: " + kind + " -->";
    }

    static String end(String kind) {
        return "<!-- end of nupa perf suite: " + kind + " -->";
    }

    /**
     * {@code doc} with {@code kind}'s table replaced by {@code table} (a machine line, then a Markdown table): each
     * row of the new table replaces the old row of the same figure (its first two cells: what, command) in place, rows
     * the new table lacks stay (a run of the suite with {@code --only} measures some figures, not all), new ones go
     * last, and the machine line is the new one. Where the document has no table of that kind yet, a section for it
     * is added at its end.
     */
    static String replace(String doc, String kind, String table) {
        String b = begin(kind);
        String e = end(kind);
        int from = doc.indexOf(b);
        if (from < 0) {
            return doc.stripTrailing() + "\n\n## The perf tools on a " + kind + " machine\n\n" + b + "\n" + table.strip() + "\n" + e + "\n";
        }
        int to = doc.indexOf(e, from);
        if (to < 0) {
            throw new IllegalArgumentException("the figures file has \"" + b + "\" without its \"" + e
                    + "\"; put the end marker back after the table");
        }
        String merged = merge(doc.substring(from + b.length(), to), table);
        return doc.substring(0, from) + b + "\n" + merged + "\n" + e + doc.substring(to + e.length());
    }

    /** The new table's lines before its rows (machine line, header), then the old rows merged with the new. */
    private static String merge(String old, String table) {
        java.util.LinkedHashMap<String, String> rows = new java.util.LinkedHashMap<>();
        for (String line : old.strip().split("\n")) {
            if (isRow(line)) {
                rows.put(key(line), line);
            }
        }
        StringBuilder head = new StringBuilder();
        for (String line : table.strip().split("\n")) {
            if (isRow(line)) {
                rows.put(key(line), line); // in the old row's place, or last
            } else {
                head.append(line).append('\n');
            }
        }
        return head + String.join("\n", rows.values());
    }

    /** A table row of a figure (not the header or its rule). */
    private static boolean isRow(String line) {
        return line.startsWith("| ") && !line.startsWith("| what |") && !line.startsWith("| --- ");
    }

    private static String key(String row) {
        String[] cells = row.split(" \\| ", 3);
        return cells.length >= 2 ? cells[0] + " | " + cells[1] : row;
    }

    static void write(Path file, String kind, String table) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("--figures " + file + " is no file; give docs/figures.md");
        }
        Files.writeString(file, replace(Files.readString(file), kind, table));
    }
}
