#!/usr/bin/env bash
# The GPU node on a GPU machine (native/cuda/README.md, "A GPU node"). Run from the repository root. NUPA as in
# figures.sh. Output in $OUT or /tmp.
#  1. the echo kernel against a C node (every size 0..8,972 bytes, each echo checked) and `nupa udp-check`;
#  2. the reduction kernel against reduce-check's CPU senders (4 senders, 64 KiB vectors, every result checked bit for
#     bit), 3 runs, beside the same reduction served by one CPU thread (the simulation with THREADS 1), 3 runs;
#  3. FIG=1: 64 B UDP round trips from a Java node (`nupa perf udp-lat --peer`), 5 runs each against the GPU echo and
#     a C node (nupa-cnode serve, one core), beside the floor (gpu-shm-probe: a kernel and a CPU process ping-ponging
#     through one registered line), 5 runs; then the echo rate with many datagrams in flight (`nupa-cnode rate`, one
#     C sender spinning on its own core, up to each of WINDOWS (64 256) unanswered, RATE_S seconds a run), 64 B and
#     1,472 B, 5 runs each against the GPU echo and the C node, alternating;
#     (PEERS picks the peers, AB="BIN ..." adds 5 round-trip runs against the echo of each other build of
#     nupa-gpu-node, FLOOR=0 leaves the floor out, REDUCE=0 the reduction, CPU_REDUCE=" " the CPU's reduction;
#     BUILD=0 takes the binaries in native/build as they are, e.g. built elsewhere with nvcc.)
#  4. SANITIZE=1: the echo kernel under compute-sanitizer's memcheck (lone datagrams of 0..300 bytes, then batches).
#  5. KILL=1 (the default): a GPU node's host process killed with SIGKILL while its kernel runs: a Java node
#     (`nupa node`) reclaims its address, and a new GPU node at that address echoes again (`nupa udp-check`).
set -u
cd "$(dirname "$0")/../.."
if [ -z "${NUPA:-}" ]; then
  if [ -x .devrun/jrt/bin/java ]; then NUPA=".devrun/jrt/bin/java --enable-native-access=ALL-UNNAMED -jar .devrun/node/nupa-node.jar"; else NUPA=./nupa; fi
fi
L=${OUT:-/tmp}; F=/dev/shm/nupa-gpu-node-f; B=native/build; T=${THREADS:-128}
JCPUS=4-7 # the Java client's CPUs: its JIT and GC threads beside the one that spins (on one CPU they preempt it for ticks)
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
lspci -vvv -d 10de: 2>/dev/null | grep -i "atomicop" | head -4
if [ "${BUILD:-1}" = 1 ]; then make -C native all sim build/nupa-gpu-node >/dev/null || { echo "BUILD FAILED"; exit 1; }; fi
up() { for i in $(seq 300); do grep -q "serving" $1 && return 0; sleep .1; done; echo "no server: $(cat $1)"; return 1; }
$NUPA fabric create --force --fabric $F >/dev/null || exit 1
echo "== echo kernel (GPU, $T threads)"
taskset -c 2 $B/nupa-gpu-node $F 5 10.0.0.6/24 echo 7 $T 300 >$L/echo.log 2>&1 & G=$!
up $L/echo.log
timeout 120 taskset -c 4 $B/nupa-cnode $F 3 10.0.0.4/24 udp 10.0.0.6 7 0 8972
timeout 120 $NUPA udp-check --fabric $F --count 2000 --max-size 8972 10.0.0.6
if [ "${FIG:-0}" = 1 ]; then
  # a fresh echo for the round trips, so that the time per step it prints at the end is theirs (64 B) alone
  kill -TERM $G; wait $G; cat $L/echo.log
  rm -f $L/echo.log; taskset -c 2 $B/nupa-gpu-node $F 5 10.0.0.6/24 echo 7 $T 300 >$L/echo.log 2>&1 & G=$!
  up $L/echo.log
  taskset -c 10 $B/nupa-cnode $F 7 10.0.0.8/24 serve 600 >$L/cnode.log 2>&1 & C=$!
  for peer in ${PEERS:-10.0.0.6 10.0.0.8}; do echo "== udp-lat 64 B to $peer, 5 runs"
    for i in 1 2 3 4 5; do timeout 60 taskset -c $JCPUS $NUPA perf udp-lat --peer $peer --fabric $F --client-address 2 -n 20000 --warmup 5000 --json | tail -1; done
  done
  kill -TERM $G; wait $G; cat $L/echo.log # its time per step: the round trips' (and the checks')
  for X in ${AB:-}; do echo "== udp-lat 64 B to the echo of $X (AB: other builds, one after another), 5 runs"
    rm -f $L/ab.log; taskset -c 2 $X $F 5 10.0.0.6/24 echo 7 $T 300 >$L/ab.log 2>&1 & G=$!
    up $L/ab.log
    for i in 1 2 3 4 5; do timeout 60 taskset -c $JCPUS $NUPA perf udp-lat --peer 10.0.0.6 --fabric $F --client-address 2 -n 20000 --warmup 5000 --json | tail -1; done
    kill -TERM $G; wait $G; cat $L/ab.log
  done
  rm -f $L/echo.log; taskset -c 2 $B/nupa-gpu-node $F 5 10.0.0.6/24 echo 7 $T 300 >$L/echo.log 2>&1 & G=$!
  up $L/echo.log
  a=9
  for w in ${WINDOWS:-64 256}; do for size in 64 1472; do echo "== echo rate, $size B, window $w, 5 runs each, GPU then C node"
    for i in 1 2 3 4 5; do for peer in 10.0.0.6 10.0.0.8; do
      a=$((a + 1)) # a fresh sender each run: echoes still in flight when a run ends must not reach the next one
      timeout 60 taskset -c 12 $B/nupa-cnode $F $a 10.0.0.$((a + 1))/24 rate $peer 7 $size ${RATE_S:-2} $w
    done; done
  done; done
  kill -TERM $C; wait $C
fi
kill -TERM $G; wait $G; cat $L/echo.log
if [ "${FIG:-0}" = 1 ] && [ "${FLOOR:-1}" = 1 ]; then
  echo "== floor: gpu-shm-probe, 5 runs"
  P=$B/gpu-shm-probe; [ -x $P ] || nvcc -O2 -arch=${CUDA_ARCH:-sm_90} -o $P native/cuda/gpu-shm-probe.cu || exit 1
  for i in 1 2 3 4 5; do rm -f /dev/shm/gpu-probe; taskset -c 6 $P --cpu 20000 & sleep 0.5; timeout 60 $P --gpu 20000; wait; done
fi
if [ "${REDUCE:-1}" = 1 ]; then
echo "== reduction: 4 senders x 16384 floats, GPU kernel ($T threads), then one CPU thread (the simulation, THREADS 1)"
for X in "$B/nupa-gpu-node:$T" ${CPU_REDUCE:-"$B/nupa-gpu-node-sim:1"}; do
  taskset -c 2 ${X%:*} $F 5 10.0.0.6/24 reduce 9000 4 16384 1024 ${X#*:} 300 >$L/red.log 2>&1 & G=$!
  up $L/red.log
  for i in 1 2 3; do timeout 120 taskset -c 4 $B/nupa-gpu-node-sim $F -1 10.0.0.1/24 reduce-check 10.0.0.6 9000 4 16384 1024 ${ROUNDS:-200}; done
  kill -TERM $G; wait $G; cat $L/red.log
done
fi
if [ "${SANITIZE:-0}" = 1 ]; then
  echo "== echo kernel under compute-sanitizer's memcheck"
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
  $CS --tool memcheck $B/nupa-gpu-node $F 5 10.0.0.6/24 echo 7 $T 300 >$L/cs.log 2>&1 & G=$!
  up $L/cs.log
  timeout 120 $B/nupa-cnode $F 3 10.0.0.4/24 udp 10.0.0.6 7 0 300
  timeout 120 $B/nupa-cnode $F 4 10.0.0.5/24 rate 10.0.0.6 7 1472 2 64 # batches, and the look read beside them
  kill -TERM $(pgrep -P $G || echo $G); wait $G; echo "sanitized run rc=$?"
  grep -c "Invalid" $L/cs.log; grep -A3 "Invalid" $L/cs.log | head -16; tail -3 $L/cs.log
fi
if [ "${KILL:-1}" = 1 ]; then
  echo "== a GPU node killed with SIGKILL, reclaimed by a Java node"
  state() { $NUPA fabric info --fabric $F | awk '$1 == 5 { print $2 }'; }
  $NUPA fabric create --force --fabric $F >/dev/null || exit 1
  taskset -c 8 $NUPA node --fabric $F --address 1 >$L/jnode.log 2>&1 & J=$!
  rm -f $L/kill.log; taskset -c 2 $B/nupa-gpu-node $F 5 10.0.0.6/24 echo 7 $T 300 >$L/kill.log 2>&1 & G=$!
  up $L/kill.log && echo "node 5: $(state)"
  kill -KILL $G; wait $G 2>/dev/null; t0=$(date +%s%N)
  end=$((SECONDS + 30)); while [ $SECONDS -lt $end ]; do case "$(state)" in ""|FREE) break;; esac; sleep .1; done
  s=$(state); echo "kill: node 5 ${s:-FREE} $(( ($(date +%s%N) - t0) / 1000000 )) ms after the kill"
  rm -f $L/kill.log; taskset -c 2 $B/nupa-gpu-node $F 5 10.0.0.6/24 echo 7 $T 300 >$L/kill.log 2>&1 & G=$!
  up $L/kill.log && timeout 120 $NUPA udp-check --fabric $F --count 200 --max-size 1472 10.0.0.6
  rc=$?; [ $rc = 0 ] && echo "kill: a new GPU node at address 5 echoed" || echo "kill: FAILED: no echo from a new GPU node at address 5 (rc=$rc)"
  kill -TERM $G; wait $G; kill -TERM $J; wait $J
fi
rm -f $F /dev/shm/gpu-probe
