package dev.nupa.bench;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.LongUnaryOperator;

/**
 * Two builds of the stack timed against each other in one JVM (run by {@code bench/ab.sh}). On a 2-vCPU VM
 * the same build varies by tens of percent between JVMs (JIT choices, the host), far more than most single
 * changes; in one JVM, with blocks interleaved, both builds see the same moments. Each build is loaded twice,
 * in the order A B B A, because the copy loaded (and compiled) first is measurably favoured; rounds then run
 * one block of each copy, rotating the order. Printed: the median over rounds of (B1 + B2) / (A1 + A2).
 *
 * <p>Arguments: {@code core checksums classDirsA classDirsB libs [block] [rounds]}, where {@code core} is a
 * {@link LongUnaryOperator} with a constructor taking one String (e.g. {@link UdpEchoCore}), the class dirs
 * are ':'-separated build outputs and {@code libs} the benchmark jar that supplies everything else.
 */
public final class BuildAbBench {
    private BuildAbBench() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("build-ab: arguments: core checksums classDirsA classDirsB libs [block] [rounds]");
            System.exit(2);
        }
        int block = args.length > 5 ? Integer.parseInt(args[5]) : 20_000;
        int rounds = args.length > 6 ? Integer.parseInt(args[6]) : 100;
        int[] build = {0, 1, 1, 0};
        LongUnaryOperator[] copies = new LongUnaryOperator[4];
        for (int c = 0; c < 4; c++) {
            List<URL> urls = new ArrayList<>();
            for (String d : (args[2 + build[c]] + ":" + args[4]).split(":")) {
                if (!d.isEmpty()) {
                    urls.add(Path.of(d).toUri().toURL()); // build outputs first: their classes shadow the jar's
                }
            }
            ClassLoader loader = new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader());
            copies[c] = (LongUnaryOperator) loader.loadClass(args[0]).getConstructor(String.class).newInstance(args[1]);
        }
        for (int w = 0; w < 20; w++) {
            for (LongUnaryOperator copy : copies) {
                copy.applyAsLong(block);
            }
        }
        double[] ratio = new double[rounds];
        long[] a = new long[rounds];
        long[] b = new long[rounds];
        long[] t = new long[4];
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < 4; k++) {
                int c = (k + r) & 3;
                t[c] = copies[c].applyAsLong(block);
            }
            a[r] = t[0] + t[3];
            b[r] = t[1] + t[2];
            ratio[r] = (double) b[r] / a[r];
        }
        Arrays.sort(ratio);
        Arrays.sort(a);
        Arrays.sort(b);
        System.out.printf(Locale.ROOT, "A %.1f ns/op, B %.1f ns/op, B/A median %.3f (p25 %.3f, p75 %.3f) over %d rounds%n",
                a[rounds / 2] / (2.0 * block), b[rounds / 2] / (2.0 * block), ratio[rounds / 2], ratio[rounds / 4],
                ratio[3 * rounds / 4], rounds);
        for (LongUnaryOperator copy : copies) {
            ((AutoCloseable) copy).close();
        }
    }
}
