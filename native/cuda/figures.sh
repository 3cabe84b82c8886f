#!/usr/bin/env bash
# The work rings' figures on a GPU machine (docs/work-rings.md): the floor (gpu-shm-probe: a kernel and a CPU process
# ping-pong through one registered line), GPU-posted WRITE latency against it, GPU-posted bandwidth against a CPU
# thread posting the same work through the same ring (5 pairs of runs each), the tensor example with its FNV check,
# and nupa perf ring. Run from the repository root: native/cuda/figures.sh. NUPA names the command line to use
# (default ./nupa; .devrun/'s runtime where ../shared/tools/devrun-pack.sh packed one). Output in $OUT or /tmp.
# LATONLY=1: the floor and the latency only; TENSOR=0: no tensor runs; RING=0: no nupa perf ring.
set -u
cd "$(dirname "$0")/../.."
if [ -z "${NUPA:-}" ]; then
  if [ -x .devrun/jrt/bin/java ]; then NUPA=".devrun/jrt/bin/java --enable-native-access=ALL-UNNAMED -jar .devrun/node/nupa-node.jar"; else NUPA=./nupa; fi
fi
L=${OUT:-/tmp}; F=/dev/shm/nupa-gpu-f; G=native/build/nupa-gpu; W=native/build/nupa-wr
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader; nproc; df -h /dev/shm | tail -1
make -C native all cuda >/dev/null || { echo "BUILD FAILED"; make -C native all cuda 2>&1 | tail -20; exit 1; }
nvcc -O2 -arch=${CUDA_ARCH:-sm_90} -o /tmp/probe native/cuda/gpu-shm-probe.cu || exit 1
echo "== probe (GPU <-> CPU process round trip through registered /dev/shm)"
for i in 1 2 3 4 5; do rm -f /dev/shm/gpu-probe; taskset -c 6 /tmp/probe --cpu 20000 & sleep 0.5; timeout 60 /tmp/probe --gpu 20000; wait; done
cyc() { tb=$1; shift; $NUPA fabric create --force --fabric $F --window-space 512 >/dev/null || return 1; : >$L/g.log; : >$L/t.log; : >$L/p.log
  taskset -c 4 $NUPA node --fabric $F --address 1 --rdma-target 4000 --rdma-target-bytes $tb >$L/t.log 2>&1 & T=$!
  for i in $(seq 300); do grep -q "RDMA target on" $L/t.log && break; sleep .2; done
  taskset -c 2 $NUPA node --fabric $F --address 2 --proxy 10.0.0.2:4000 --proxy-data 64M --proxy-spin-us 100000000 >$L/p.log 2>&1 & P=$!
  for i in $(seq 300); do grep -q "work ring 0" $L/p.log && break; sleep .2; done
  for c in "$@"; do case $c in write*) X=$W;; *) X=$G;; esac; timeout 300 taskset -c 6 $X $F 2 0 $c 2>&1 | tee -a $L/g.log; echo "[$c] rc=${PIPESTATUS[0]}"; done
  kill -TERM $P; wait $P; kill -TERM $T; wait $T; grep -h "work rings:\|RDMA target:" $L/p.log $L/t.log
  a=$(grep -o "target fnv1a64=0x[0-9a-f]*" $L/g.log | tail -1 | cut -d= -f2); b=$(grep -o "fnv1a64=0x[0-9a-f]*" $L/t.log | tail -1 | cut -d= -f2)
  [ -n "$a" ] && { [ "$a" = "$b" ] && echo "FNV MATCH $a" || echo "FNV MISMATCH expected=$a target=$b"; }; }
echo "== latency and bandwidth, GPU-posted and CPU-posted, 5 runs each"
r5() { for i in 1 2 3 4 5; do echo "$1"; done; }
if [ "${LATONLY:-0}" = 1 ]; then mapfile -t runs < <(r5 "lat 100000"); cyc 256M "${runs[@]}"; exit 0; fi
pairs() { for i in 1 2 3 4 5; do echo "bw $1 $2"; echo "cpu-bw $1 $2"; done; }
# The first write touches the target's 256 MiB (tmpfs allocates pages at first touch), so no measured run pays for it.
mapfile -t runs < <(r5 "lat 100000"; echo "write 268435456 65536"; pairs 65536 32768; pairs 1048576 2048)
cyc 256M "${runs[@]}" "write 1073741824 65536"
[ "${TENSOR:-1}" = 1 ] || { echo "== (tensor runs skipped)"; exit 0; }
echo "== tensor example, 1 GiB, fresh target each"
for t in 1 32 1024; do cyc 256M "tensor 1073741824 65536 $t"; done
cyc 260032000 "tensor 1073741824 65008 1024"
[ "${RING:-1}" = 1 ] || exit 0
echo "== nupa perf ring, 5 runs"
for i in 1 2 3 4 5; do $NUPA perf ring -n 200000 --warmup 50000 --json 2>&1 | tail -6; done
rm -f $F /dev/shm/gpu-probe
