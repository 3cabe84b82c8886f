package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** {@link Syscalls}: the numbers per architecture, both of os.arch's names for each, and a clear refusal. */
class SyscallsTest {
    @Test
    void futexNumbersOfBothArchitectures() {
        assertSame(Syscalls.X86_64, Syscalls.of("amd64"));
        assertSame(Syscalls.X86_64, Syscalls.of("x86_64"));
        assertSame(Syscalls.AARCH64, Syscalls.of("aarch64"));
        assertSame(Syscalls.AARCH64, Syscalls.of("arm64"));
        assertEquals(202, Syscalls.X86_64.futex());
        assertEquals(98, Syscalls.AARCH64.futex());
    }

    @Test
    void anUnknownArchitectureIsNamedWithTheSupportedOnes() {
        FabricException e = assertThrows(FabricException.class, () -> Syscalls.of("riscv64"));
        String m = e.getMessage();
        assertTrue(m.contains("riscv64") && m.contains("amd64") && m.contains("aarch64") && m.contains("futex"), m);
    }

    /** Where the kernel's UAPI headers are installed (linux-libc-dev), the table agrees with them. */
    @Test
    void agreesWithTheInstalledKernelHeaders() throws IOException {
        Path x86 = Path.of("/usr/include/x86_64-linux-gnu/asm/unistd_64.h");
        Path generic = Path.of("/usr/include/asm-generic/unistd.h");
        Assumptions.assumeTrue(Files.exists(x86) || Files.exists(generic), "no kernel headers on this machine");
        if (Files.exists(x86)) {
            assertEquals(nrFutex(x86), Syscalls.X86_64.futex(), x86.toString());
        }
        if (Files.exists(generic)) {
            assertEquals(nrFutex(generic), Syscalls.AARCH64.futex(), generic.toString());
        }
    }

    private static long nrFutex(Path header) throws IOException {
        Matcher m = Pattern.compile("(?m)^#define __NR_futex\\s+(\\d+)\\s*$").matcher(Files.readString(header));
        assertTrue(m.find(), header + " defines __NR_futex");
        return Long.parseLong(m.group(1));
    }
}
