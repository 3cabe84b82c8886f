// Probe: can a CUDA kernel post into a /dev/shm file mapped by another (CPU) process, and how fast?
// Process A (this, with --gpu): maps the file, cudaHostRegister's it, a kernel ping-pongs with a CPU
// process B (--cpu) through two 64-byte lines: GPU writes seq to line 0 (system-scope release),
// B spins, echoes seq into line 1, GPU spins on it (volatile system-scope load). Round trips timed
// on the GPU with globaltimer; also one-way CPU->GPU doorbell observed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
static const size_t SZ = 1 << 20;
__device__ __forceinline__ uint64_t gtime() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__global__ void pinger(volatile uint64_t* ping, volatile uint64_t* pong, uint64_t* out, int n) {
  for (int i = 1; i <= n; i++) {
    uint64_t t0 = gtime();
    __threadfence_system();
    *ping = i;                       // post (like a doorbell / ctrl word)
    __threadfence_system();
    while (*pong != (uint64_t)i) { } // wait for the CPU's echo
    out[i - 1] = gtime() - t0;
  }
}
int main(int argc, char** argv) {
  const char* path = "/dev/shm/gpu-probe"; int n = argc > 2 ? atoi(argv[2]) : 20000;
  int fd = open(path, O_RDWR | O_CREAT, 0600); if (fd < 0 || ftruncate(fd, SZ) != 0) { perror(path); return 1; }
  char* base = (char*)mmap(nullptr, SZ, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  volatile uint64_t* ping = (volatile uint64_t*)base; volatile uint64_t* pong = (volatile uint64_t*)(base + 64);
  if (!strcmp(argv[1], "--cpu")) {
    uint64_t last = 0;
    while (last < (uint64_t)n) { uint64_t v = *ping; if (v != last) { *pong = v; last = v; } }
    return 0;
  }
  *ping = 0; *pong = 0;
  CK(cudaHostRegister(base, SZ, cudaHostRegisterMapped));
  uint64_t* dbase; CK(cudaHostGetDevicePointer((void**)&dbase, base, 0));
  uint64_t* dout; CK(cudaMalloc(&dout, n * sizeof(uint64_t)));
  pinger<<<1, 1>>>((volatile uint64_t*)dbase, (volatile uint64_t*)((char*)dbase + 64), dout, n);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  std::vector<uint64_t> h(n); CK(cudaMemcpy(h.data(), dout, n * 8, cudaMemcpyDeviceToHost));
  std::vector<uint64_t> s(h.begin() + n / 10, h.end()); std::sort(s.begin(), s.end());
  printf("GPU<->CPU-process round trip via registered /dev/shm: n=%zu min %lu p50 %lu p99 %lu max %lu ns\n", s.size(),
         s[0], s[s.size() / 2], s[s.size() * 99 / 100], s.back());
  return 0;
}
