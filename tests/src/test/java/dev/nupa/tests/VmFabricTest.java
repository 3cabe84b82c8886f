package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.node.cli.Main;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * QEMU guests on the fabric: `vms/guest.sh` builds a guest from Debian's packages (kernel, static busybox) and
 * boots it under software emulation with an ivshmem-plain device backed by a fabric file. Without QEMU,
 * busybox-static, cpio or gcc, or when the kernel package cannot be downloaded, the tests say so and skip.
 */
@Tag("vm")
class VmFabricTest {
    private static final Path GUEST = Path.of("target", "guest");
    private static final Path SCRIPT = Path.of("..", "vms", "guest.sh").toAbsolutePath().normalize();
    private static Linux.Result built;
    private static Linux.Result builtJava;
    private static Guest ethernet;
    private static GatewayRig ethernetRig;

    /** Builds the guest once for the tests here; skips the calling test where it cannot be built. */
    private static synchronized void guest() throws Exception {
        String missing = Linux.missing("qemu-system-x86_64", "busybox", "cpio", "gcc", "apt-get");
        Assumptions.assumeTrue(missing == null, () -> "skipping the VM test: " + missing
                + " is absent (apt-get install qemu-system-x86 busybox-static cpio gcc)");
        if (built == null) {
            built = Linux.run(300, SCRIPT.toString(), "build", GUEST.toString());
        }
        Assumptions.assumeTrue(built.status() == 0, () -> "skipping the VM test: no guest could be built: " + built.output());
    }

    /** Builds the guest with Java once (a second initramfs: jlink'd runtime and the node's jars); skips where it cannot. */
    private static synchronized void guestWithJava() throws Exception {
        guest();
        if (builtJava == null) {
            builtJava = Linux.run(600, SCRIPT.toString(), "build", GUEST.toString(), "--java");
        }
        Assumptions.assumeTrue(builtJava.status() == 0, () -> "skipping the test: no guest with Java could be built: " + builtJava.output());
    }

    /** A new fabric whose liveness timeouts a JVM under software emulation meets: it may stand still for seconds. */
    private static Path slowFabric() throws Exception {
        Path fabric = ChildJvm.newFabricPath();
        NupaCli.Run made = NupaCli.here("fabric", "create", "--fabric", fabric.toString(), "--timeout-ms",
                "60000", "--stall-ms", "60000");
        assertEquals(0, made.status(), made.err());
        return fabric;
    }

    /**
     * Fabric nodes inside two guests at once and on the host, all on one fabric file: each guest's JVM (a jlink'd
     * runtime from the second initramfs) runs `nupa` on its ivshmem device's BAR2 (guest 0 {@code --device pci:BDF},
     * guest 1 {@code --device uio:/dev/uio0} with the device bound to uio_pci_generic: sysfs either way, doorbells
     * polled), which the host's file backs. Guest 0 runs a node with UDP and TCP echo; guest 1 pings it
     * (waiting for it to come up), runs a UDP echo of 100 datagrams up to 4,000 bytes and a TCP echo of two
     * connections against it, each byte checked, then pings a node on the host and runs rping through the CM
     * against a `nupa rping -s` on the host (READs and WRITEs through the rings). The fabric has long liveness
     * timeouts: a JVM under software emulation may stand still for seconds.
     */
    @Test
    void nodesInTwoGuestsAndOnTheHostAreFabricPeersThroughTheSharedBar() throws Exception {
        guestWithJava();
        Path fabric = slowFabric();
        try {
            try (ChildJvm node = ChildJvm.start("vm-host-node", Main.class, "node", "--fabric", fabric, "--address", "3");
                 ChildJvm rping = ChildJvm.start("vm-host-rping", Main.class, "rping", "-s", "-v", "--timeout", "600", "--fabric",
                         fabric, "--address", "4")) {
                node.awaitLine("nupa node:", 60_000);
                rping.awaitLine("rping: listening", 60_000);
                // Guest 0 at address 10 (10.0.0.11) maps the BAR through sysfs; guest 1, at 11, through the device that
                // uio_pci_generic holds in it.
                String device0 = ",--device,pci:IVSHMEM,--address,10";
                String device = ",--device,uio:UIO,--address,11";
                Linux.Result guests = Linux.run(900, "env", "GUEST_TIMEOUT=840", SCRIPT.toString(), "many", GUEST.toString(),
                        fabric.toString(), "2", "--java",
                        "0:nupa=node" + device0 + ",--udp-echo,7,--tcp-echo,7", "0:serve=1",
                        "1:uio=1",
                        "1:nupa=ping" + device + ",-c,3,-w,90,10.0.0.11"
                                + ";udp-check" + device + ",--count,100,--max-size,4000,10.0.0.11"
                                + ";tcp-check" + device + ",--connections,2,--bytes,100000,10.0.0.11"
                                + ";ping" + device + ",-c,3,10.0.0.4"
                                + ";rping" + device + ",-c,-a,10.0.0.5,-C,10,-V");
                System.out.println("VmFabricTest: the guests' consoles:\n" + guests.output());
                String out = guests.output();
                assertEquals(0, guests.status(), out);
                assertStoppedOnItsChannel(out);
                assertTrue(out.contains("guest1: nupa-guest: 0000:00:04.0 on uio_pci_generic as /dev/uio0"), out);
                for (String c : List.of("ping", "udp-check", "tcp-check", "rping")) {
                    assertTrue(Pattern.compile("(?m)^guest1: nupa-guest: nupa " + c + " exit 0").matcher(out).find(), c + " in guest 1: " + out);
                }
                assertFalse(out.contains("exit 1"), out);
                assertTrue(out.contains("100 echoed intact"), "UDP between the guests: " + out);
                assertTrue(out.contains("2 echoed intact"), "TCP between the guests: " + out);
                assertTrue(out.contains("guest1: rping: 10 pings done"), out);
                rping.awaitLine("rping: 10 pings done", 60_000);
                assertTrue(rping.output().contains("server ping data: rdma-ping-9: "), rping.output());
            }
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /**
     * Two guests whose ivshmem-doorbell devices got the host's fabric file from an ivshmem server (vms/ivshmem-server.c),
     * on q35 machines with an IOMMU, each device bound to vfio-pci: their nodes ({@code --device vfio:BDF}) map BAR2
     * through VFIO and wake each other with the devices' interrupts (a Doorbell register write in one guest, MSI-X on an
     * eventfd in the other). Guest 0 serves rping (RDMA through the CM: SENDs, READs and WRITEs), then runs a node with
     * UDP echo; guest 1 runs rping's 10 pings against it, pings it 20 times, 100 ms apart (so that guest 0's node sleeps
     * between them), and runs 100 UDP echoes, each checked.
     * Guest 0's node, stopping, reports interrupts both raised and received.
     */
    @Test
    void guestsOnIvshmemDoorbellsThroughVfioWakeEachOtherWithInterrupts() throws Exception {
        guestWithJava();
        Path fabric = slowFabric();
        try {
            String device = ",--device,vfio:IVSHMEM,--address,1GUEST"; // guest 0 at address 10 (10.0.0.11), guest 1 at 11
            Linux.Result guests = Linux.run(900, "env", "GUEST_TIMEOUT=840", SCRIPT.toString(), "many", GUEST.toString(),
                    fabric.toString(), "2", "--doorbells", "--java",
                    "0:nupa=rping" + device + ",-s,-v,--timeout,300;node" + device + ",--udp-echo,7", "0:serve=1",
                    "1:nupa=rping" + device + ",-c,-a,10.0.0.11,-C,10,-V,--wait,150"
                            + ";ping" + device + ",-c,20,-i,0.1,-w,90,10.0.0.11"
                            + ";udp-check" + device + ",--count,100,--max-size,4000,10.0.0.11");
            System.out.println("VmFabricTest: the guests' consoles:\n" + guests.output());
            String out = guests.output();
            assertEquals(0, guests.status(), out);
            assertTrue(Pattern.compile("(?m)^guest0: nupa-guest: 0000:00:04.0 on vfio-pci, IOMMU group \\d+").matcher(out).find(),
                    "the device went to vfio-pci: " + out);
            assertTrue(out.contains("(doorbells: MSI-X interrupts of 0000:00:04.0 through VFIO"), "the node sleeps on interrupts: " + out);
            assertStoppedOnItsChannel(out);
            assertTrue(out.contains("guest0: nupa-guest: nupa rping exit 0"), "guest 0's rping server: " + out);
            for (String c : List.of("rping", "ping", "udp-check")) {
                assertTrue(Pattern.compile("(?m)^guest1: nupa-guest: nupa " + c + " exit 0").matcher(out).find(), c + " in guest 1: " + out);
            }
            assertTrue(out.contains("guest1: rping: 10 pings done"), "RDMA between the guests: " + out);
            assertTrue(out.contains("guest0: server ping data: rdma-ping-9: "), "the server saw the last ping's data: " + out);
            assertTrue(out.contains("100 echoed intact"), "UDP between the guests: " + out);
            var m = Pattern.compile("(?m)^guest0: nupa node: fabric frames out=\\d+ in=\\d+ wakeups=\\d+ interrupts out=(\\d+) in=(\\d+)")
                    .matcher(out);
            assertTrue(m.find(), "guest 0's node reported its fabric counters: " + out);
            assertTrue(Long.parseLong(m.group(1)) > 0, "guest 0 interrupted guest 1: " + m.group());
            assertTrue(Long.parseLong(m.group(2)) > 0, "guest 1 interrupted guest 0: " + m.group());
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /**
     * Guest 0 served (serve=1) until guest 1 powered off, then `vms/guest.sh many` sent "stop" on its command channel:
     * its node ended on SIGTERM, printing its counters as it left the fabric.
     */
    private static void assertStoppedOnItsChannel(String out) {
        assertTrue(out.contains("guest0: nupa-guest: command channel on ttyS1"), out);
        assertTrue(out.contains("guest0: nupa-guest: nupa node stopped"), "guest 0's node was stopped through its channel: " + out);
        assertTrue(Pattern.compile("(?m)^guest0: nupa node: fabric frames out=[1-9]").matcher(out).find(),
                "guest 0's node printed its counters as it stopped: " + out);
    }

    /** The TAP's address moves to a bridge br0 in the rig's namespace, which the guest's NIC joins too. */
    private static void bridge(GatewayRig rig) throws Exception {
            rig.run(10, "ip", "addr", "flush", "dev", rig.tap());
            Linux.ok("ip", "-n", rig.ns(), "link", "add", "br0", "type", "bridge");
            Linux.ok("ip", "-n", rig.ns(), "link", "set", rig.tap(), "master", "br0");
            Linux.ok("ip", "-n", rig.ns(), "link", "set", "br0", "up");
            Linux.ok("ip", "-n", rig.ns(), "addr", "add", GatewayRig.LINUX + "/24", "dev", "br0");
    }

    /**
     * A `nupa node` on the host is attached to the fabric; inside the guest, fabric-peek maps the ivshmem device's
     * BAR2 and reads the fabric as docs/fabric-layout.md lays it out: the header, and the host's node in the node
     * table. The file grows to the power of two a PCI BAR needs, and the fabric's nodes still join it.
     */
    @Test
    void aGuestReadsTheFabricAndTheHostsNodeThroughIvshmem() throws Exception {
        guest();
        Path fabric = ChildJvm.newFabricPath();
        try (ChildJvm node = ChildJvm.start("vm-host-node", Main.class, "node", "--fabric", fabric, "--address", "3")) {
            node.awaitLine("nupa node:", 60_000);
            long before = Files.size(fabric);
            Linux.Result guest = Linux.run(180, SCRIPT.toString(), "run", GUEST.toString(), fabric.toString());
            System.out.println("VmFabricTest: the guest's console:\n" + guest.output());
            assertEquals(0, guest.status(), guest.output());
            String out = guest.output();
            assertTrue(out.contains("nupa-guest: ivshmem at "), "the guest found the ivshmem device: " + out);
            assertTrue(out.contains("fabric magic=NUPAFAB1 version=" + dev.nupa.device.FabricLayout.VERSION + " total_bytes=" + before + " max_nodes=64"),
                    "the guest read the fabric's header through BAR2: " + out);
            assertTrue(out.contains("node 3 state=2 generation=1"), "the guest saw the host's node 3 up: " + out);
            assertTrue(out.contains("nupa-guest: done"), out);

            long bar = Files.size(fabric);
            assertEquals(Long.highestOneBit(before) << 1, bar, "the file grew to the BAR's power of two");
            NupaCli.Run info = NupaCli.here("fabric", "info", "--fabric", fabric.toString());
            assertEquals(0, info.status(), "the fabric is still joined after the guest mapped it: " + info.err());
            assertTrue(java.util.regex.Pattern.compile("(?m)^\\s+3 UP ").matcher(info.out()).find(), "node 3 is up: " + info.out());
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /**
     * The guest on the gateway's Ethernet side: its virtio NIC and the gateway's TAP are ports of one Linux bridge
     * in a namespace, and the guest's Linux pings a fabric node through the gateway (ARP for the gateway, routing,
     * the way back).
     */
    @Test
    void aGuestPingsAFabricNodeThroughTheGateway() throws Exception {
        Guest g = ethernetGuest();
        String out = g.run("ping=" + GatewayRig.SERVER, 60_000);
        System.out.println("VmFabricTest: the guest's console:\n" + out);
        assertTrue(g.output(0).contains("nupa-guest: eth0 192.168.77.10/24"), g.output(0));
        assertTrue(out.contains("3 packets transmitted, 3 packets received"),
                "the guest's pings of the fabric node came back through the gateway: " + out);
    }

    /**
     * The guest on the gateway's Ethernet side that the tests below share, booted by the first that needs it: a
     * gateway whose TAP joins a bridge br0 in its namespace, which the guest's NIC joins too (192.168.77.10, routed
     * to the fabric through the gateway). Each test starts its own fabric node behind the gateway and asks the guest
     * for a tool through its command channel.
     */
    private static synchronized Guest ethernetGuest() throws Exception {
        guest();
        if (ethernet == null) {
            GatewayRig rig = GatewayRig.start(1500, 9000, false, List.of("--udp-echo", "9"));
            try {
                bridge(rig);
                ethernet = Guest.boot(List.of("ip", "netns", "exec", rig.ns(), "env", "GUEST_TIMEOUT=1800", SCRIPT.toString(), "run",
                        GUEST.toString(), rig.fabric().toString(), "--bridge", "br0", "ip=192.168.77.10/24",
                        "route=10.0.0.0/24," + GatewayRig.GATEWAY), 180_000);
            } catch (Exception | AssertionError e) {
                rig.stop();
                throw e;
            }
            ethernetRig = rig;
        }
        return ethernet;
    }

    /** Powers off the shared guest and stops its rig; the next test that needs them boots new ones. */
    @AfterAll
    static synchronized void stopEthernetGuest() throws Exception {
        if (ethernet != null) {
            ethernet.close();
            ethernet = null;
        }
        if (ethernetRig != null) {
            ethernetRig.stop();
            ethernetRig = null;
        }
    }

    /**
     * Linux Soft-RoCE as the RDMA peer: the guest's rxe runs rdma-core's {@code ibv_rc_pingpong} against a fabric
     * node ({@link RcPingpongPeerMain}), the QP details swapped over our TCP through the gateway, then SENDs of
     * 4 KiB (four packets at path MTU 1024) both ways as RoCEv2, every ICRC checked by rxe and by us. Our side's
     * PSNs start just under 2^24 and wrap. tshark on the gateway's TAP decodes every RoCEv2 frame as InfiniBand,
     * and an ICRC check written apart from ours finds every ICRC right.
     */
    @Test
    void linuxSoftRoceInAGuestPingpongsWithAFabricNode() throws Exception {
        againstSoftRoce("ibverbs-utils", rig -> ChildJvm.start("rc-pingpong-peer", RcPingpongPeerMain.class, rig.fabric(), 2, "10.0.0.3",
                        "192.168.77.0/24 via 10.0.0.1", 100, 4096, 150_000), "READY", "pingpong=10.0.0.3,100,4096",
                (guest, peer, pcap) -> {
                    java.util.Map<String, String> r = peer.awaitResult(60_000);
                    System.out.println("VmFabricTest: the fabric node's side: " + r);
                    assertTrue(guest.contains("nupa-guest: ibv_rc_pingpong exit 0"), "rxe's pingpong ran to its end: " + guest);
                    assertTrue(guest.contains("100 iters in"), guest);
                    assertEquals("ok", r.get("outcome"));
                    assertEquals(0, ChildJvm.num(r, "bad_icrc"));
                    if (pcap != null) {
                        RoceV2GatewayTest.checkRoceCapture(pcap, 800, List.of("RC Send First", "RC Send Middle", "RC Send Last",
                                "RC Acknowledge"));
                    }
                });
    }

    /** The five perftest tests of the guest runs below, in order, with the sizes both sides are given. */
    private static final String TESTS = "write-lat,send-lat,read-lat,atomic-lat,write-bw";
    private static final String[] PERFTEST = {"ib_write_lat", "ib_send_lat", "ib_read_lat", "ib_atomic_lat", "ib_write_bw"};
    private static final int SIZE = 4096; // four packets at path MTU 1024
    private static final int ITERS = 100;

    /** The guest's perftest runs: each tool with -s and -n, and the server's address when the guest is the client. */
    private static String perftestRuns(String host, boolean rdmaCm) {
        List<String> runs = new ArrayList<>();
        for (String t : PERFTEST) {
            String size = t.equals("ib_atomic_lat") ? "" : ",-s," + SIZE;
            runs.add(t + (rdmaCm ? ",-R" : "") + size + ",-n," + ITERS + (host != null ? "," + host : ""));
        }
        return "perftest=" + String.join(";", runs);
    }

    /** What a Soft-RoCE run checks: the guest's console, our side (exited or not), the capture (null without tshark). */
    @FunctionalInterface
    private interface Outcome {
        void check(String guest, ChildJvm ours, Path pcap) throws Exception;
    }

    /**
     * The shared guest's Soft-RoCE running {@code guestTool} (vms/init.sh's KEY=VALUE, through the command channel)
     * against `nupa ARGS` on a fabric node at 10.0.0.3 behind the gateway; {@code ready}, when given, is the line our
     * side prints once it serves, before the guest's tool starts. tshark captures the gateway's TAP meanwhile.
     */
    private static void againstSoftRoce(String packages, java.util.function.Function<GatewayRig, ChildJvm> start, String ready,
                                        String guestTool, Outcome outcome) throws Exception {
        guest();
        Assumptions.assumeTrue(!built.output().contains("guest has no RDMA tools") && !built.output().contains("no " + packages),
                "skipping the test: the host has no " + packages + ", ibverbs-utils or ibverbs-providers to put in the guest");
        Guest guest = ethernetGuest();
        GatewayRig rig = ethernetRig;
        ChildJvm ours = null;
        Process capture = null;
        Path pcap = Files.createTempFile("nupa-softroce-", ".pcap");
        boolean done = false;
        try {
            ours = start.apply(rig);
            if (ready != null) {
                ours.awaitLine(ready, 60_000);
            }
            if (Linux.missing("tshark") == null) {
                capture = Linux.capture(rig.ns(), rig.tap(), pcap);
            }
            String out;
            try {
                out = guest.run(guestTool, 280_000);
            } catch (AssertionError e) { // a guest tool that never ended: what our side saw meanwhile, in the report
                throw new AssertionError(e.getMessage() + "\nthe fabric node's side:\n" + ours.output(), e);
            }
            System.out.println("VmFabricTest: the guest's console:\n" + out);
            boolean captured = capture != null;
            if (captured) {
                Linux.endCapture(capture);
                capture = null;
                System.out.println("VmFabricTest: the CM's MADs on the gateway's TAP:\n"
                        + Linux.stdout(60, "tshark", "-r", pcap.toString(), "-Y", "infiniband.bth.destqp == 1"));
            } else {
                System.out.println("tshark is absent (apt-get install tshark): the run goes without the capture check");
            }
            try {
                outcome.check(out, ours, captured ? pcap : null);
            } catch (AssertionError e) { // the guest's side of a failure, in the report itself
                String[] lines = out.split("\n");
                String tail = String.join("\n", Arrays.copyOfRange(lines, Math.max(0, lines.length - 40), lines.length));
                throw new AssertionError(e.getMessage() + "\nthe guest's console, its last 40 lines:\n" + tail, e);
            }
            System.out.println("VmFabricTest: the fabric node's side:\n" + ours.output());
            done = true;
        } finally {
            if (capture != null) {
                capture.destroyForcibly();
            }
            if (ours != null) {
                ours.close();
            }
            Files.deleteIfExists(pcap);
            if (!done) {
                stopEthernetGuest(); // a guest left mid-tool serves no next test: that one boots its own
            }
        }
    }

    /** Starts `nupa ARGS` as the fabric node at address 2, 10.0.0.3, routed to the guest's side through the gateway. */
    private static java.util.function.Function<GatewayRig, ChildJvm> nupa(String name, List<Object> nupaArgs) {
        return rig -> {
            List<Object> args = new ArrayList<>(nupaArgs);
            args.addAll(List.of("--fabric", rig.fabric(), "--address", 2, "--ip", "10.0.0.3/24", "--route", "192.168.77.0/24 via 10.0.0.1"));
            return ChildJvm.start(name, Main.class, args.toArray());
        };
    }

    /**
     * Stock perftest against {@code nupa perf perftest}: the guest's rxe runs ib_write_lat, ib_send_lat, ib_read_lat,
     * ib_atomic_lat and ib_write_bw as perftest's client, or as its server, while a fabric node behind the gateway is
     * the other side. The QP details go over our TCP on port 18515 as perftest exchanges them; the operations go
     * as RoCEv2, 4 KiB messages in four packets, our PSNs starting just under 2^24 so they wrap. Each perftest run
     * prints its own result and exits 0; tshark finds nothing malformed and every ICRC right.
     */
    private static void perftestAgainstAGuest(boolean guestIsClient, boolean rdmaCm) throws Exception {
        List<Object> args = new ArrayList<>(List.of("perf", "perftest", TESTS));
        if (!guestIsClient) {
            args.add("192.168.77.10");
        }
        args.addAll(List.of("-s", SIZE, "-n", ITERS, "--timeout", "150"));
        args.addAll(rdmaCm ? List.of("-R") : List.of("--psn", "0xFFFFF0")); // with -R the CM picks the PSNs
        againstSoftRoce("perftest", nupa("nupa-perftest", args), guestIsClient ? "perftest: serving" : null,
                perftestRuns(guestIsClient ? "10.0.0.3" : null, rdmaCm),
                (guest, ours, pcap) -> {
                    String done = ours.awaitLine("perftest: 5 test(s) done", 60_000);
                    for (String t : PERFTEST) {
                        assertTrue(guest.contains("nupa-guest: " + t + " exit 0"), t + " ran to its end: " + guest);
                    }
                    // perftest's own result rows: the latency tools' t_min column, ib_write_bw's BW columns.
                    assertTrue(guest.contains("t_min[usec]"), guest);
                    assertTrue(guest.contains("BW average[MB/sec]"), guest);
                    assertTrue(Pattern.compile("(?m)^\\s*" + SIZE + "\\s+" + ITERS + "\\s").matcher(guest).find(),
                            "a result row for " + SIZE + " bytes, " + ITERS + " iterations: " + guest);
                    assertTrue(done.contains("bad_icrc=0"), done);
                    if (guestIsClient) { // rxe's fetch-and-adds landed on our zeroed vaddr (ours are checked one by one as they return)
                        assertTrue(ours.output().contains("FETCH_AND_ADDs of 1 left " + ITERS + " at our vaddr"), ours.output());
                    }
                    if (rdmaCm) {
                        assertTrue(guest.contains("Data ex. method : rdma_cm"), "perftest ran with -R: " + guest);
                    }
                    if (pcap != null) {
                        List<String> names = new ArrayList<>(List.of("RC RDMA Write First", "RC RDMA Write Last", "RC Send First",
                                "RC Send Last", "RC RDMA Read Request", "RC RDMA Read Response First", "RC Fetch Add",
                                "RC Atomic Acknowledge", "RC Acknowledge"));
                        if (rdmaCm) {
                            names.addAll(List.of("CM: ConnectRequest", "CM: ConnectReply", "CM: ReadyToUse", "CM: DisconnectRequest",
                                    "CM: DisconnectReply"));
                        }
                        RoceV2GatewayTest.checkRoceCapture(pcap, 2000, names);
                    }
                });
    }

    @Test
    void stockPerftestInAGuestRunsItsFiveTestsAgainstAFabricNodeAsServer() throws Exception {
        perftestAgainstAGuest(true, false);
    }

    @Test
    void aFabricNodeRunsTheFiveTestsAgainstStockPerftestServersInAGuest() throws Exception {
        perftestAgainstAGuest(false, false);
    }

    /** The same with -R: perftest's side channel and its test QP connected through rdma_cm, against our CM. */
    @Test
    void stockPerftestWithRdmaCmRunsItsFiveTestsAgainstAFabricNodeAsServer() throws Exception {
        perftestAgainstAGuest(true, true);
    }

    @Test
    void aFabricNodeRunsTheFiveTestsWithRdmaCmAgainstStockPerftestServersInAGuest() throws Exception {
        perftestAgainstAGuest(false, true);
    }

    /**
     * rdma_cm against our CM: Linux's rping in the guest and {@code nupa rping} on a fabric node connect through the
     * InfiniBand CM over RoCEv2 (REQ, REP, RTU, then DREQ and DREP as 256-byte MADs to QP 1), one way and then the
     * other, and run 10 pings of 64 bytes (a SEND, a READ, a SEND, a WRITE, a SEND each), the client checking each.
     */
    private static void rpingAgainstAGuest(boolean guestIsClient) throws Exception {
        List<Object> args = new ArrayList<>(List.of("rping"));
        args.addAll(guestIsClient ? List.of("-s", "-v") : List.of("-c", "-a", "192.168.77.10", "-C", 10, "-v", "-V", "--wait", 120));
        args.addAll(List.of("--timeout", "150"));
        againstSoftRoce("rdmacm-utils", nupa("nupa-rping", args), guestIsClient ? "rping: listening" : null,
                guestIsClient ? "rping=-c,-a,10.0.0.3,-C,10,-S,64,-v,-V" : "rping=-s,-a,192.168.77.10,-v", (guest, ours, pcap) -> {
                    String end = ours.awaitLine("rping: 10 pings done", 60_000);
                    assertTrue(guest.contains("nupa-guest: rping exit 0"), "Linux's rping ended well: " + guest);
                    String data = guestIsClient ? guest : ours.output();
                    assertTrue(data.contains("ping data: rdma-ping-9: "), "the client's tenth ping came back: " + data);
                    String served = guestIsClient ? ours.output() : guest;
                    assertTrue(served.contains("server ping data: rdma-ping-9: "), "the server read the tenth ping: " + served);
                    assertTrue(end.contains("bad_icrc=0"), end);
                    if (pcap != null) {
                        RoceV2GatewayTest.checkRoceCapture(pcap, 50, List.of("CM: ConnectRequest", "CM: ConnectReply",
                                "CM: ReadyToUse", "CM: DisconnectRequest", "CM: DisconnectReply", "RC RDMA Read Request",
                                "RC RDMA Write Only", "RC Send Only"));
                    }
                });
    }

    @Test
    void linuxRpingConnectsToAFabricNodeThroughTheInfinibandCm() throws Exception {
        rpingAgainstAGuest(true);
    }

    @Test
    void aFabricNodeConnectsToLinuxRpingThroughTheInfinibandCm() throws Exception {
        rpingAgainstAGuest(false);
    }

    /**
     * Memory windows against Linux's: the guest's rxe runs {@code vms/mw-check.c} against {@link MwPeerMain} on a fabric
     * node, connected through rdma_cm and our CM. Type 2 windows are bound, written through, invalidated by the other
     * side's SEND_WITH_INVALIDATE (IETH, opcodes 0x16/0x17) and by LOCAL_INV, one way and then the other; a WRITE
     * through an invalidated window is refused with a remote access error NAK and changes nothing. tshark on the
     * gateway's TAP finds a SEND_WITH_INV each way, carrying the rkey the other side advertised, and a remote access
     * error NAK each way.
     */
    @Test
    void memoryWindowsAndSendWithInvalidateWorkWithLinuxSoftRoce() throws Exception {
        againstSoftRoce("libibverbs-dev", rig -> ChildJvm.start("mw-peer", MwPeerMain.class, rig.fabric(), 2, "10.0.0.3/24",
                        "192.168.77.0/24 via 10.0.0.1", 7175, 200_000), "LISTENING", "mwcheck=10.0.0.3,7175",
                (guest, peer, pcap) -> {
                    java.util.Map<String, String> r = peer.awaitResult(60_000);
                    System.out.println("VmFabricTest: the fabric node's side: " + r + "\n" + peer.output());
                    assertTrue(guest.contains("mw-check: all checks passed"), "rxe's side of every check held: " + guest);
                    assertTrue(guest.contains("nupa-guest: mw-check exit 0"), guest);
                    assertEquals("ok", r.get("outcome"), peer.output());
                    assertEquals(0, ChildJvm.num(r, "bad_icrc"));
                    if (pcap != null) {
                        RoceV2GatewayTest.checkRoceCapture(pcap, 20, List.of("RC RDMA Write First", "RC Acknowledge"));
                        String inv = Linux.stdout(60, "tshark", "-r", pcap.toString(), "-Y", "infiniband.bth.opcode == 23",
                                "-T", "fields", "-e", "ip.src", "-e", "infiniband.ieth").strip();
                        assertEquals(2, inv.lines().map(l -> l.split("\t")[0]).distinct().count(),
                                "a SEND_WITH_INV (Send Only with Invalidate) each way: " + inv);
                        assertTrue(inv.lines().allMatch(l -> l.split("\t").length == 2 && !l.split("\t")[1].isBlank()),
                                "each carries an IETH: " + inv);
                        String naks = Linux.stdout(60, "tshark", "-r", pcap.toString(), "-Y",
                                "infiniband.aeth.syndrome.opcode == 3 && infiniband.aeth.syndrome.error_code == 2", "-T", "fields",
                                "-e", "ip.src").strip();
                        assertEquals(2, naks.lines().distinct().count(), "a remote access error NAK each way: " + naks);
                    }
                });
    }
}
