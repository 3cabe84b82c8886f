package dev.nupa.gateway;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;

/**
 * A Linux TAP device (Documentation/networking/tuntap.rst) through the Foreign Function & Memory API:
 * {@code /dev/net/tun} opened non-blocking, {@code TUNSETIFF} with {@code IFF_TAP | IFF_NO_PI}, so each
 * read or write is one Ethernet frame without a packet-information prefix; with offloads ({@code IFF_VNET_HDR}), each
 * frame is preceded by a {@link VnetHeader} and the kernel may hand over TCP/IPv4 super-frames and partial
 * checksums, and take them ({@code TUNSETOFFLOAD}: checksum, TSO4, ECN). The device is created if no
 * interface of that name exists and goes away when the descriptor is closed (it is not made
 * persistent). Its MTU is set and it is brought up through ioctls on a datagram socket.
 *
 * <p>{@link #read} and {@link #write} never block and allocate nothing; {@link #awaitReadable} blocks in
 * poll(2) for a watcher thread. The descriptor is the event loop's; the watcher only polls it.
 */
public final class Tap implements AutoCloseable {
    /** The longest interface name, without its NUL (IFNAMSIZ - 1). */
    public static final int MAX_NAME = 15;
    static final int EAGAIN = 11;
    private static final int O_RDWR = 2;
    private static final int O_NONBLOCK = 0x800;
    private static final int O_CLOEXEC = 0x80000;
    private static final long TUNSETIFF = 0x400454caL;
    private static final short IFF_TAP = 0x0002;
    private static final short IFF_NO_PI = 0x1000;
    private static final short IFF_VNET_HDR = 0x4000;
    private static final short IFF_MULTI_QUEUE = 0x0100;
    /** The most queues a TAP takes (the kernel's MAX_TAP_QUEUES). */
    public static final int MAX_QUEUES = 256;
    private static final long TUNSETOFFLOAD = 0x400454d0L;
    private static final long TUNSETVNETHDRSZ = 0x400454d8L;
    private static final long TUNSETVNETLE = 0x400454dcL;
    /** Offloads the kernel may use toward us: partial checksums, and TCP/IPv4 super-frames with ECN. */
    private static final long TUN_F_CSUM = 0x01;
    private static final long TUN_F_TSO4 = 0x02;
    private static final long TUN_F_TSO_ECN = 0x08;
    private static final long SIOCGIFFLAGS = 0x8913;
    private static final long SIOCSIFFLAGS = 0x8914;
    private static final long SIOCSIFMTU = 0x8922;
    private static final long SIOCGIFINDEX = 0x8933;
    private static final short IFF_UP = 0x1;
    private static final int AF_INET = 2;
    private static final int SOCK_DGRAM = 2;
    private static final short POLLIN = 1;
    private static final int IFREQ = 40;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MemoryLayout ERRNO_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = ERRNO_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPEN = libc("open", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
            ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle IOCTL = libc("ioctl", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
            ValueLayout.JAVA_LONG, ValueLayout.ADDRESS), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle SOCKET = libc("socket", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle CLOSE = libc("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle READ = libc("read", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle WRITE = libc("write", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle POLL = libc("poll", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));

    private static MethodHandle libc(String name, FunctionDescriptor fd, Linker.Option... options) {
        Linker.Option[] all = java.util.Arrays.copyOf(options, options.length + 1);
        all[options.length] = Linker.Option.captureCallState("errno");
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name)
                .orElseThrow(() -> new IllegalStateException("libc " + name + "() not found; the TAP device needs Linux")), fd, all);
    }

    private final String name;
    private final int fd;
    private final int index;
    private final int mtu;
    private final boolean offloads;
    private final int queue;
    private final Arena arena = Arena.ofAuto(); // freed once nothing, the watcher included, holds the Tap
    /** errno of the event loop's read and write calls (one thread), and the watcher's poll (its own). */
    private final MemorySegment loopErrno = arena.allocate(ERRNO_STATE);
    private final MemorySegment watchErrno = arena.allocate(ERRNO_STATE);
    private final MemorySegment pollFd = arena.allocate(8, 4);
    private volatile boolean closed;

    private Tap(String name, int fd, int index, int mtu, boolean offloads, int queue) {
        this.name = name;
        this.fd = fd;
        this.index = index;
        this.mtu = mtu;
        this.offloads = offloads;
        this.queue = queue;
        pollFd.set(ValueLayout.JAVA_INT, 0, fd);
        pollFd.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
    }

    /** {@link #open(String, int, boolean)} without offloads. */
    public static Tap open(String name, int mtu) {
        return open(name, mtu, false);
    }

    /** {@link #open(String, int, boolean, int)} of one queue. */
    public static Tap open(String name, int mtu, boolean offloads) {
        return open(name, mtu, offloads, 1).getFirst();
    }

    /**
     * Creates TAP device {@code name} (or attaches to a TAP of that name that nobody holds) with {@code queues}
     * queues ({@code IFF_MULTI_QUEUE} when more than one: each descriptor is a queue, and Linux spreads the flows it
     * sends over them), with {@code offloads} (a virtio-net header on every frame; checksum and TCP segmentation
     * offload), sets its MTU and brings it up. Returns one Tap per queue, queue 0 first; all or none.
     *
     * @throws IllegalArgumentException for a bad name, MTU or number of queues
     * @throws IllegalStateException naming the failed step and what to do (CAP_NET_ADMIN, /dev/net/tun)
     */
    public static java.util.List<Tap> open(String name, int mtu, boolean offloads, int queues) {
        if (name == null || name.isEmpty() || name.length() > MAX_NAME || !name.matches("[A-Za-z0-9_.-]+")) {
            throw new IllegalArgumentException("TAP name \"" + name + "\" must be 1.." + MAX_NAME
                    + " characters of letters, digits, '_', '.' or '-'");
        }
        if (mtu < 68 || mtu > 65_521) {
            throw new IllegalArgumentException("TAP MTU " + mtu + " is outside 68..65521 (RFC 791's minimum; the largest"
                    + " frame a TAP takes)");
        }
        if (queues < 1 || queues > MAX_QUEUES) {
            throw new IllegalArgumentException("TAP queues " + queues + " is outside 1.." + MAX_QUEUES);
        }
        int flags = IFF_TAP | IFF_NO_PI | (offloads ? IFF_VNET_HDR : 0) | (queues > 1 ? IFF_MULTI_QUEUE : 0);
        int[] fds = new int[queues];
        java.util.Arrays.fill(fds, -1);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment errno = a.allocate(ERRNO_STATE);
            try {
                for (int q = 0; q < queues; q++) {
                    fds[q] = openQueue(a, errno, name, flags, offloads);
                }
                int index = configure(a, errno, name, mtu);
                java.util.List<Tap> taps = new java.util.ArrayList<>();
                for (int q = 0; q < queues; q++) {
                    taps.add(new Tap(name, fds[q], index, mtu, offloads, q));
                }
                return java.util.List.copyOf(taps);
            } catch (RuntimeException e) {
                for (int fd : fds) {
                    if (fd >= 0) {
                        int ignored = (int) CLOSE.invokeExact(errno, fd);
                    }
                }
                throw e;
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("TAP " + name + ": " + t, t);
        }
    }

    /** Opens /dev/net/tun as a queue of TAP {@code name} with {@code flags}, offloads set; returns the descriptor. */
    private static int openQueue(Arena a, MemorySegment errno, String name, int flags, boolean offloads) throws Throwable {
        int fd = (int) OPEN.invokeExact(errno, a.allocateFrom("/dev/net/tun"), O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            throw failure("open /dev/net/tun", errno, "load the tun module and run as root or with CAP_NET_ADMIN");
        }
        try {
            MemorySegment ifr = ifreq(a, name);
            ifr.set(ValueLayout.JAVA_SHORT, 16, (short) flags);
            if ((int) IOCTL.invokeExact(errno, fd, TUNSETIFF, ifr) < 0) {
                throw failure("TUNSETIFF " + name, errno, "the name may belong to a device that is not a free TAP (or one"
                        + " with another number of queues or offloads); choose another name, and run as root or with CAP_NET_ADMIN");
            }
            if (offloads) {
                MemorySegment v = a.allocate(ValueLayout.JAVA_INT);
                v.set(ValueLayout.JAVA_INT, 0, VnetHeader.LENGTH);
                if ((int) IOCTL.invokeExact(errno, fd, TUNSETVNETHDRSZ, v) < 0) {
                    throw failure("TUNSETVNETHDRSZ " + name, errno, "the kernel's tun lacks virtio-net headers; run without offloads");
                }
                v.set(ValueLayout.JAVA_INT, 0, 1);
                if ((int) IOCTL.invokeExact(errno, fd, TUNSETVNETLE, v) < 0) {
                    throw failure("TUNSETVNETLE " + name, errno, "the kernel's tun lacks little-endian headers; run without offloads");
                }
                // TUNSETOFFLOAD takes its flags as the argument itself, not through a pointer.
                MemorySegment features = MemorySegment.ofAddress(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO_ECN);
                if ((int) IOCTL.invokeExact(errno, fd, TUNSETOFFLOAD, features) < 0) {
                    throw failure("TUNSETOFFLOAD " + name, errno, "the kernel's tun refuses checksum and TSO offloads; run without them");
                }
            }
            return fd;
        } catch (RuntimeException e) {
            int ignored = (int) CLOSE.invokeExact(errno, fd);
            throw e;
        }
    }

    /** Sets the MTU of interface {@code name}, brings it up and returns its index. */
    private static int configure(Arena a, MemorySegment errno, String name, int mtu) throws Throwable {
        int sock = (int) SOCKET.invokeExact(errno, AF_INET, SOCK_DGRAM, 0);
        if (sock < 0) {
            throw failure("socket(AF_INET)", errno, "the host has no IPv4 sockets");
        }
        try {
            MemorySegment ifr = ifreq(a, name);
            ifr.set(ValueLayout.JAVA_INT, 16, mtu);
            if ((int) IOCTL.invokeExact(errno, sock, SIOCSIFMTU, ifr) < 0) {
                throw failure("setting the MTU of " + name + " to " + mtu, errno, "choose an MTU the kernel takes");
            }
            ifr = ifreq(a, name);
            if ((int) IOCTL.invokeExact(errno, sock, SIOCGIFFLAGS, ifr) < 0) {
                throw failure("reading the flags of " + name, errno, "run as root or with CAP_NET_ADMIN");
            }
            ifr.set(ValueLayout.JAVA_SHORT, 16, (short) (ifr.get(ValueLayout.JAVA_SHORT, 16) | IFF_UP));
            if ((int) IOCTL.invokeExact(errno, sock, SIOCSIFFLAGS, ifr) < 0) {
                throw failure("bringing " + name + " up", errno, "run as root or with CAP_NET_ADMIN");
            }
            ifr = ifreq(a, name);
            if ((int) IOCTL.invokeExact(errno, sock, SIOCGIFINDEX, ifr) < 0) {
                throw failure("reading the index of " + name, errno, "run as root or with CAP_NET_ADMIN");
            }
            return ifr.get(ValueLayout.JAVA_INT, 16);
        } finally {
            int ignored = (int) CLOSE.invokeExact(errno, sock);
        }
    }

    private static MemorySegment ifreq(Arena a, String name) {
        MemorySegment ifr = a.allocate(IFREQ, 8);
        byte[] b = name.getBytes(StandardCharsets.US_ASCII);
        MemorySegment.copy(b, 0, ifr, ValueLayout.JAVA_BYTE, 0, b.length);
        return ifr;
    }

    private static IllegalStateException failure(String what, MemorySegment errno, String remedy) {
        int e = (int) ERRNO.get(errno, 0L);
        return new IllegalStateException(what + " failed: errno " + e + " (" + errnoName(e) + "); " + remedy);
    }

    private static String errnoName(int e) {
        return switch (e) {
            case 1 -> "EPERM";
            case 2 -> "ENOENT";
            case 13 -> "EACCES";
            case 16 -> "EBUSY";
            case 19 -> "ENODEV";
            case 22 -> "EINVAL";
            default -> "see errno(3)";
        };
    }

    public String name() {
        return name;
    }

    /** The interface index (if_nametoindex). */
    public int index() {
        return index;
    }

    public int mtu() {
        return mtu;
    }

    /** Which queue of the device this descriptor is (0 for a device of one queue). */
    public int queue() {
        return queue;
    }

    /** Whether each frame read and written is preceded by a {@link VnetHeader} (checksum and TSO offloads). */
    public boolean offloads() {
        return offloads;
    }

    /**
     * Reads one frame into {@code [offset, offset + capacity)} of native {@code buf}: its length, 0 when none
     * waits, or -1 on another error (counted by the caller). A frame longer than {@code capacity} is cut.
     */
    public int read(MemorySegment buf, long offset, int capacity) {
        try {
            long n = (long) READ.invokeExact(loopErrno, fd, buf.asSlice(offset, capacity), (long) capacity);
            if (n >= 0) {
                return (int) n;
            }
            return (int) ERRNO.get(loopErrno, 0L) == EAGAIN ? 0 : -1;
        } catch (Throwable t) {
            return -1;
        }
    }

    /** Writes one frame: true when the kernel took it, false when its queue is full or the device is gone. */
    public boolean write(MemorySegment buf, long offset, int length) {
        try {
            return (long) WRITE.invokeExact(loopErrno, fd, buf.asSlice(offset, length), (long) length) == length;
        } catch (Throwable t) {
            return false;
        }
    }

    /** Blocks until a frame waits to be read or {@code timeoutMs} pass; false on timeout, error or close. */
    public boolean awaitReadable(int timeoutMs) {
        if (closed) {
            return false;
        }
        try {
            pollFd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
            int n = (int) POLL.invokeExact(watchErrno, pollFd, 1L, timeoutMs);
            return n > 0 && (pollFd.get(ValueLayout.JAVA_SHORT, 6) & POLLIN) != 0;
        } catch (Throwable t) {
            return false;
        }
    }

    /** Closes the descriptor: the device goes away (it was not made persistent). */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            int ignored = (int) CLOSE.invokeExact(loopErrno, fd);
        } catch (Throwable t) {
            // nothing more to do: the process's exit closes it
        }
    }

    @Override
    public String toString() {
        return "TAP " + name + " (index " + index + ", MTU " + mtu + (queue > 0 ? ", queue " + queue : "")
                + (offloads ? ", offloads" : "") + ")";
    }
}
