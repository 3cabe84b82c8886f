package dev.nupa.node.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.nupa.tcp.TcpConfig;
import picocli.CommandLine;

/**
 * The TCP socket options of `nupa tcp-check` and `nupa node --tcp-echo` ({@link TcpSocketOptions}):
 * what each one sets, and that a bad value is one line naming the option, exit status 2, before any
 * node starts (the fabric file is never created).
 */
class TcpSocketOptionsTest {
    private static final long SECOND = 1_000_000_000L;
    private static final TcpConfig BASE = TcpConfig.defaults(9000);
    private final Path fabric = Path.of("/dev/shm/nupa-socket-options-test-" + UUID.randomUUID());

    record Run(int status, String out, String err) {
    }

    @AfterEach
    void noFabricWasMade() throws Exception {
        assertFalse(Files.deleteIfExists(fabric), "a command refused for its options touched the fabric");
    }

    /** `nupa ARGS` in this JVM, its output captured. */
    private static Run nupa(String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
            int status = Main.run(args);
            return new Run(status, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }

    /** The options as tcp-check parses them, applied over the default TCP settings of MTU 9000. */
    private static TcpConfig tcpCheck(String... options) {
        TcpCheckCommand command = new TcpCheckCommand();
        String[] args = java.util.Arrays.copyOf(options, options.length + 1);
        args[options.length] = "10.0.0.1";
        new CommandLine(command).parseArgs(args);
        return command.sockets.apply(BASE);
    }

    private void assertOneLineError(String mentions, String... args) {
        Run r = nupa(args);
        assertEquals(2, r.status(), r.err());
        String err = r.err().strip();
        assertFalse(err.contains("\n"), "one line, no stack trace: " + err);
        assertTrue(err.startsWith("nupa: ") && err.contains(mentions), err);
    }

    private String[] tcpCheckArgs(String... options) {
        String[] args = new String[options.length + 4];
        args[0] = "tcp-check";
        args[1] = "--fabric";
        args[2] = fabric.toString();
        System.arraycopy(options, 0, args, 3, options.length);
        args[args.length - 1] = "10.0.0.1";
        return args;
    }

    @Test
    void withoutOptionsTheNodesTcpSettingsAreKept() {
        assertEquals(BASE, tcpCheck());
    }

    @Test
    void tcpNoDelay_noDelayTurnsNagleOffAndDelayKeepsItOn() {
        assertTrue(tcpCheck("--no-delay").noDelay());
        assertFalse(tcpCheck("--delay").noDelay());
        TcpCheckCommand command = new TcpCheckCommand();
        new CommandLine(command).parseArgs("--delay", "10.0.0.1");
        assertFalse(command.sockets.apply(BASE.withNoDelay(true)).noDelay(), "--delay overrides a no-delay default");
        assertOneLineError("--delay and --no-delay are exclusive", tcpCheckArgs("--delay", "--no-delay"));
    }

    @Test
    void soKeepAlive_keepaliveProbesAfterTwoIdleHoursAsLinuxAndTheTunablesImplyIt() {
        TcpConfig on = tcpCheck("--keepalive");
        assertEquals(7_200 * SECOND, on.keepAliveIdleNs(), "RFC 1122 4.2.3.6: no less than two hours by default");
        assertEquals(75 * SECOND, on.keepAliveIntervalNs());
        assertEquals(9, on.keepAliveProbes());
        TcpConfig tuned = tcpCheck("--keepalive-idle", "30", "--keepalive-interval", "5", "--keepalive-probes", "3");
        assertEquals(30 * SECOND, tuned.keepAliveIdleNs(), "TCP_KEEPIDLE alone turns keep-alive on");
        assertEquals(5 * SECOND, tuned.keepAliveIntervalNs());
        assertEquals(3, tuned.keepAliveProbes());
        assertEquals(0, tcpCheck().keepAliveIdleNs(), "off unless asked");
        assertOneLineError("--keepalive-idle 0 is outside 1..32767 seconds", tcpCheckArgs("--keepalive-idle", "0"));
        assertOneLineError("--keepalive-interval 32768 is outside 1..32767 seconds",
                tcpCheckArgs("--keepalive-interval", "32768"));
        assertOneLineError("--keepalive-probes 128 is outside 1..127", tcpCheckArgs("--keepalive-probes", "128"));
    }

    @Test
    void soSndbufSoRcvbuf_eachBufferIsSetAloneFromOneMssToOneGibibyte() {
        TcpConfig c = tcpCheck("--send-buffer", "65536", "--recv-buffer", "4194304");
        assertEquals(65_536, c.sendBuffer());
        assertEquals(4 << 20, c.receiveBuffer());
        assertEquals(7, c.receiveWindowShift(), "RFC 7323 2.3: the shift follows the receive buffer");
        assertEquals(BASE.receiveBuffer(), tcpCheck("--send-buffer", "65536").receiveBuffer(), "the other one is kept");
        assertEquals(8960, tcpCheck("--send-buffer", "8960").sendBuffer(), "one MSS at MTU 9000");
        assertOneLineError("--send-buffer 8959 is outside 8960..1073741824 bytes (one MSS at MTU 9000, at most 1 GiB)",
                tcpCheckArgs("--send-buffer", "8959"));
        assertOneLineError("--recv-buffer 1073741825 is outside", tcpCheckArgs("--recv-buffer", "1073741825"));
        assertOneLineError("--recv-buffer 535 is outside 536..1073741824 bytes (one MSS at MTU 576",
                tcpCheckArgs("--mtu", "576", "--recv-buffer", "535"));
        assertOneLineError("'lots' is not an int", tcpCheckArgs("--send-buffer", "lots"));
    }

    @Test
    void soLinger_lingerIsZeroTo65535Seconds() {
        TcpCheckCommand command = new TcpCheckCommand();
        new CommandLine(command).parseArgs("--linger", "0", "10.0.0.1");
        assertEquals(0, command.sockets.linger);
        assertEquals(BASE, command.sockets.apply(BASE), "linger lives on the socket, not in its TcpConfig");
        assertOneLineError("--linger -1 is out of range: --linger takes 0..65535", tcpCheckArgs("--linger", "-1"));
        assertOneLineError("--linger 65536 is out of range: --linger takes 0..65535", tcpCheckArgs("--linger", "65536"));
    }

    @Test
    void tcpCongestion_cubicOrNewrenoInAnyCase() {
        assertEquals("newreno", tcpCheck("--congestion", "NewReno").congestionControl());
        assertEquals("cubic", tcpCheck("--congestion", "cubic").congestionControl());
        assertEquals("cubic", tcpCheck().congestionControl(), "the default");
        assertOneLineError("--congestion vegas is unknown; choose one of: newreno, cubic",
                tcpCheckArgs("--congestion", "vegas"));
    }

    @Test
    void nodeTakesTheSocketOptionsForItsTcpEchoServerOnly() {
        assertOneLineError("--linger sets the TCP echo server's connections; give --tcp-echo PORT too",
                "node", "--fabric", fabric.toString(), "--linger", "0", "--run-for", "1");
        assertOneLineError("--congestion reno is unknown",
                "node", "--fabric", fabric.toString(), "--tcp-echo", "7", "--congestion", "reno", "--run-for", "1");
        assertOneLineError("--send-buffer 1 is outside",
                "node", "--fabric", fabric.toString(), "--tcp-echo", "7", "--send-buffer", "1", "--run-for", "1");
    }

    @Test
    void helpNamesEverySocketOption() {
        for (String command : new String[] {"tcp-check", "node"}) {
            Run r = nupa(command, "--help");
            assertEquals(0, r.status(), r.err());
            for (String option : new String[] {"--no-delay", "--delay", "--keepalive", "--keepalive-idle=SECONDS",
                "--keepalive-interval=SECONDS", "--keepalive-probes=N", "--send-buffer=BYTES", "--recv-buffer=BYTES",
                "--linger=SECONDS", "--congestion=ALGORITHM", "TCP_NODELAY", "SO_LINGER", "cubic", "newreno"}) {
                assertTrue(r.out().contains(option), command + " --help names " + option + ":\n" + r.out());
            }
        }
    }

    @Test
    void describeSaysWhatTheConnectionsUse() {
        TcpCheckCommand command = new TcpCheckCommand();
        new CommandLine(command).parseArgs("--no-delay", "--keepalive-idle", "30", "--send-buffer", "65536", "--linger", "5",
                "--congestion", "newreno", "10.0.0.1");
        assertEquals("no-delay, keepalive 30/75/9, send buffer 65536, recv buffer 262144, linger 5, newreno",
                command.sockets.describe(command.sockets.apply(BASE)));
        assertEquals("nagle, no keepalive, send buffer 262144, recv buffer 262144, no linger, cubic",
                new TcpSocketOptions().describe(BASE));
    }
}
