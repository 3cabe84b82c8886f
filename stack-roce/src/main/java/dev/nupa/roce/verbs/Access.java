package dev.nupa.roce.verbs;

/** Memory region and queue pair access flags, with the values of libibverbs' {@code IBV_ACCESS_*}. */
public final class Access {
    public static final int LOCAL_WRITE = 1;
    public static final int REMOTE_WRITE = 2;
    public static final int REMOTE_READ = 4;
    public static final int REMOTE_ATOMIC = 8;
    /** IBV_ACCESS_MW_BIND: memory windows may be bound to the region (IBA 10.6.7.2, C10-73). */
    public static final int MW_BIND = 16;
    static final int ALL = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC | MW_BIND;
    static final int REMOTE = REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;

    private Access() {
    }

    /** Throws, naming {@code what} and the known flags, when {@code access} holds unknown bits. */
    public static void check(int access, String what) {
        if ((access & ~ALL) != 0) {
            throw new RdmaException(what + " access flags 0x" + Integer.toHexString(access)
                    + " hold unknown bits; use Access.LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC");
        }
    }

    /** A memory region's flags: known bits, and remote write or atomic only with local write (IBA 10.6.3.1, C10-30). */
    public static void checkRegion(int access) {
        check(access, "memory region");
        if ((access & (REMOTE_WRITE | REMOTE_ATOMIC)) != 0 && (access & LOCAL_WRITE) == 0) {
            throw new RdmaException("memory region access " + describe(access)
                    + " asks for remote write or atomic access without LOCAL_WRITE; add Access.LOCAL_WRITE");
        }
    }

    /** A memory window's flags at bind: remote rights only (IBA 10.6.7.2.1; rxe takes no others). */
    public static void checkWindow(int access) {
        if ((access & ~REMOTE) != 0) {
            throw new RdmaException("memory window access " + describe(access)
                    + " holds rights a window cannot grant; use Access.REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC");
        }
    }

    public static String describe(int access) {
        StringBuilder b = new StringBuilder();
        if ((access & LOCAL_WRITE) != 0) b.append("LOCAL_WRITE|");
        if ((access & REMOTE_WRITE) != 0) b.append("REMOTE_WRITE|");
        if ((access & REMOTE_READ) != 0) b.append("REMOTE_READ|");
        if ((access & REMOTE_ATOMIC) != 0) b.append("REMOTE_ATOMIC|");
        if ((access & MW_BIND) != 0) b.append("MW_BIND|");
        return b.isEmpty() ? "none" : b.substring(0, b.length() - 1);
    }
}
