package dev.nupa.device;

/**
 * The Linux system call numbers the fabric passes to libc's syscall(), for one CPU architecture. Other
 * kernel calls go through their libc wrappers, whose names are the same everywhere.
 */
record Syscalls(String arch, long futex, long membarrier) {
    /** arch/x86/entry/syscalls/syscall_64.tbl (asm/unistd_64.h). */
    static final Syscalls X86_64 = new Syscalls("x86-64", 202, 324);
    /** include/uapi/asm-generic/unistd.h, which arm64 uses. */
    static final Syscalls AARCH64 = new Syscalls("aarch64", 98, 283);

    /** The numbers for {@code osArch}, as {@code System.getProperty("os.arch")} names it. */
    static Syscalls of(String osArch) {
        return switch (osArch) {
            case "amd64", "x86_64" -> X86_64;
            case "aarch64", "arm64" -> AARCH64;
            default -> throw new FabricException("a fabric file needs the futex system call, and its number on CPU"
                    + " architecture " + osArch + " is not known here; supported: amd64 (x86_64) and aarch64"
                    + " (arm64); add the architecture's numbers to " + Syscalls.class.getName());
        };
    }
}
