/**
 * The {@code nupa perf} tools: each measures one layer beside a floor or a Linux peer in the same run, in turns
 * ({@link dev.nupa.perf.Turns}), and reports ratios; their floors ({@code Floor*}), reports and tracing
 * ({@link dev.nupa.perf.PerfReport}, {@link dev.nupa.perf.PerfTrace}, {@link dev.nupa.perf.TraceLog}) and the suite
 * that writes the figures of docs/figures.md ({@code PerfSuite}). The command line in module node serves them; the tools
 * start their other side in a child JVM of that command line ({@link dev.nupa.perf.Children}).
 */
package dev.nupa.perf;
