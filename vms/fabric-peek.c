/*
 * fabric-peek: reads a NUPA fabric through a mapping of its memory (a file, or a PCI BAR such as ivshmem's
 * BAR2 at /sys/bus/pci/devices/BDF/resource2) and prints its header and the nodes its node table holds, as
 * docs/fabric-layout.md lays them out (sections 3 and 5). Read-only; one line per fact, for scripts and tests.
 *
 *   fabric-peek PATH
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC 0x314241464150554EULL /* "NUPAFAB1" as a little-endian u64 */

static uint64_t u64(const volatile uint8_t *p, size_t off) { uint64_t v; memcpy(&v, (const void *)(p + off), 8); return v; }
static uint32_t u32(const volatile uint8_t *p, size_t off) { uint32_t v; memcpy(&v, (const void *)(p + off), 4); return v; }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: fabric-peek PATH (a fabric file or a PCI BAR's resource file)\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    size_t size = (size_t) st.st_size;
    const volatile uint8_t *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    uint64_t magic = __atomic_load_n((const uint64_t *) m, __ATOMIC_ACQUIRE);
    if (magic != MAGIC) {
        printf("fabric-peek: %s holds no NUPA fabric (magic %016llx)\n", argv[1], (unsigned long long) magic);
        return 1;
    }
    uint64_t total = u64(m, 16), table = u64(m, 56), node_bytes = u64(m, 120);
    uint32_t max_nodes = u32(m, 24);
    printf("fabric magic=NUPAFAB1 version=%u total_bytes=%llu max_nodes=%u mapped=%zu\n", u32(m, 8),
           (unsigned long long) total, max_nodes, size);
    if (total > size || table + (uint64_t) max_nodes * node_bytes > size) {
        printf("fabric-peek: the mapping (%zu bytes) is smaller than the fabric\n", size);
        return 1;
    }
    for (uint32_t a = 0; a < max_nodes; a++) {
        uint64_t word = __atomic_load_n((const uint64_t *) (m + table + a * node_bytes), __ATOMIC_ACQUIRE);
        uint32_t state = (uint32_t) word, generation = (uint32_t) (word >> 32);
        if (state != 0) {
            printf("node %u state=%u generation=%u\n", a, state, generation);
        }
    }
    return 0;
}
