package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * No two packages of the project's main sources depend on each other, directly or around a longer loop: imports point
 * down the layers only (docs: DESIGN, "Imports point down only ... No cycles between packages either"). The graph is read
 * from every {@code src/main/java} of the repository: an arrow from a file's package to the package of each
 * {@code dev.nupa} class it imports or names fully qualified in code (comments and string literals left out).
 */
class PackageCycleTest {
    /** A package and, up to the first class name, the rest of a dev.nupa reference: {@code dev.nupa.roce.transport.RdmaDevice}. */
    private static final Pattern REFERENCE = Pattern.compile("\\bdev\\.nupa((?:\\.[a-z_][a-z0-9_]*)*)\\.(?:[A-Z]|\\*)");
    private static final Pattern PACKAGE = Pattern.compile("^\\s*package\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);
    /** Comments, text blocks, strings and char literals, in the order a lexer meets them. */
    private static final Pattern NOT_CODE = Pattern.compile(
            "//[^\\n]*|/\\*.*?\\*/|\"\"\".*?\"\"\"|\"(?:\\\\.|[^\"\\\\\\n])*\"|'(?:\\\\.|[^'\\\\\\n])+'", Pattern.DOTALL);

    /** An arrow between two packages and one file that makes it (for the message). */
    private record Arrow(String from, String to, String file) {
    }

    @Test
    void mainSourcesHaveNoPackageCycle() throws IOException {
        Path root = repositoryRoot();
        Map<String, Map<String, String>> graph = graph(root);
        // The graph was really read: the stack's own layers are there, with an arrow known to exist.
        assertTrue(graph.size() >= 10, "read " + graph.size() + " packages under " + root + "; expected the whole project");
        assertTrue(graph.getOrDefault("dev.nupa.tcp", Map.of()).containsKey("dev.nupa.ip"), "dev.nupa.tcp imports dev.nupa.ip");

        List<List<String>> cycles = new ArrayList<>();
        for (Set<String> component : stronglyConnected(graph)) {
            if (component.size() > 1) {
                cycles.add(cycleThrough(graph, component));
            }
        }
        if (!cycles.isEmpty()) {
            StringBuilder b = new StringBuilder(cycles.size() + " package cycle(s) in the main sources; make the lower"
                    + " package reach the upper one through an interface it registers, or move what both use below both:");
            for (List<String> c : cycles) {
                b.append("\n  ").append(String.join(" -> ", c));
                for (int i = 0; i + 1 < c.size(); i++) {
                    b.append("\n      ").append(c.get(i)).append(" -> ").append(c.get(i + 1)).append(": ")
                            .append(graph.get(c.get(i)).get(c.get(i + 1)));
                }
            }
            fail(b.toString());
        }
    }

    /** The detector itself finds a loop of three and names its packages in order, and leaves a chain alone. */
    @Test
    void findsACycleAndNamesItsPackages() {
        Map<String, Map<String, String>> g = new TreeMap<>();
        g.put("a", Map.of("b", "A.java"));
        g.put("b", Map.of("c", "B.java", "d", "B.java"));
        g.put("c", Map.of("a", "C.java"));
        g.put("d", Map.of());
        List<Set<String>> big = stronglyConnected(g).stream().filter(s -> s.size() > 1).toList();
        assertEquals(List.of(Set.of("a", "b", "c")), big);
        assertEquals(List.of("a", "b", "c", "a"), cycleThrough(g, big.get(0)));

        g.put("c", Map.of());
        assertTrue(stronglyConnected(g).stream().allMatch(s -> s.size() == 1), "a chain is no cycle");
    }

    /** Up from the working directory to the one whose pom.xml lists the module stack-roce. */
    private static Path repositoryRoot() throws IOException {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path pom = p.resolve("pom.xml");
            if (Files.isRegularFile(pom) && Files.readString(pom).contains("<module>stack-roce</module>")) {
                return p;
            }
        }
        throw new IllegalStateException("no pom.xml with <module>stack-roce</module> above " + Path.of("").toAbsolutePath()
                + "; run the test from inside the repository");
    }

    /** Package -> (package it refers to -> the first file seen doing so), over every main source file. */
    private static Map<String, Map<String, String>> graph(Path root) throws IOException {
        List<Path> files = new ArrayList<>();
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                String name = dir.getFileName().toString();
                return !dir.equals(root) && (name.startsWith(".") || name.equals("target") || name.equals("node_modules"))
                        ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                String rel = root.relativize(file).toString().replace('\\', '/');
                if (rel.endsWith(".java") && rel.contains("/src/main/java/") && !rel.startsWith("src/")) {
                    files.add(file); // MODULE/src/main/java/..., modules at any depth
                }
                return FileVisitResult.CONTINUE;
            }
        });
        files.sort(null);
        Map<String, Map<String, String>> graph = new TreeMap<>();
        List<Arrow> arrows = new ArrayList<>();
        for (Path f : files) {
            String code = NOT_CODE.matcher(read(f)).replaceAll(" ");
            Matcher pm = PACKAGE.matcher(code);
            if (!pm.find()) {
                continue; // module-info.java and the like
            }
            String from = pm.group(1);
            graph.computeIfAbsent(from, k -> new TreeMap<>());
            Matcher m = REFERENCE.matcher(code);
            while (m.find()) {
                String to = "dev.nupa" + m.group(1);
                if (!to.equals(from)) {
                    arrows.add(new Arrow(from, to, root.relativize(f).toString()));
                }
            }
        }
        for (Arrow a : arrows) {
            if (graph.containsKey(a.to())) { // generated packages (protobuf stubs) hold no source here and import none of ours
                graph.get(a.from()).putIfAbsent(a.to(), a.file());
            }
        }
        return graph;
    }

    private static String read(Path f) {
        try {
            return Files.readString(f);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Tarjan's strongly connected components (iterative), each as a sorted set. */
    private static List<Set<String>> stronglyConnected(Map<String, Map<String, String>> g) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<Set<String>> out = new ArrayList<>();
        int[] next = {0};
        for (String start : g.keySet()) {
            if (index.containsKey(start)) {
                continue;
            }
            Deque<Map.Entry<String, ArrayDeque<String>>> work = new ArrayDeque<>();
            visit(start, g, index, low, stack, onStack, next, work);
            while (!work.isEmpty()) {
                Map.Entry<String, ArrayDeque<String>> top = work.peek();
                String v = top.getKey();
                String w = top.getValue().poll();
                if (w != null) {
                    if (!index.containsKey(w)) {
                        visit(w, g, index, low, stack, onStack, next, work);
                    } else if (onStack.contains(w)) {
                        low.put(v, Math.min(low.get(v), index.get(w)));
                    }
                    continue;
                }
                work.pop();
                if (!work.isEmpty()) {
                    String parent = work.peek().getKey();
                    low.put(parent, Math.min(low.get(parent), low.get(v)));
                }
                if (low.get(v).equals(index.get(v))) {
                    Set<String> c = new TreeSet<>();
                    String x;
                    do {
                        x = stack.pop();
                        onStack.remove(x);
                        c.add(x);
                    } while (!x.equals(v));
                    out.add(c);
                }
            }
        }
        return out;
    }

    private static void visit(String v, Map<String, Map<String, String>> g, Map<String, Integer> index, Map<String, Integer> low,
                              Deque<String> stack, Set<String> onStack, int[] next, Deque<Map.Entry<String, ArrayDeque<String>>> work) {
        index.put(v, next[0]);
        low.put(v, next[0]);
        next[0]++;
        stack.push(v);
        onStack.add(v);
        work.push(Map.entry(v, new ArrayDeque<>(g.getOrDefault(v, Map.of()).keySet())));
    }

    /** A shortest loop from the component's first package back to it, inside the component: [p, ..., p]. */
    private static List<String> cycleThrough(Map<String, Map<String, String>> g, Set<String> component) {
        String start = component.iterator().next();
        Map<String, String> parent = new HashMap<>();
        Deque<String> queue = new ArrayDeque<>(List.of(start));
        while (!queue.isEmpty()) {
            String v = queue.poll();
            for (String w : g.getOrDefault(v, Map.of()).keySet()) {
                if (!component.contains(w)) {
                    continue;
                }
                if (w.equals(start)) {
                    List<String> path = new ArrayList<>(List.of(start));
                    for (String x = v; !x.equals(start); x = parent.get(x)) {
                        path.add(1, x);
                    }
                    path.add(start);
                    return path;
                }
                if (!parent.containsKey(w)) {
                    parent.put(w, v);
                    queue.add(w);
                }
            }
        }
        throw new AssertionError("component " + component + " has no loop through " + start);
    }
}
