#!/usr/bin/env bash
# The GPU node on a GPU machine (native/cuda/README.md, "A GPU node"): the echo kernel against a C node (every size
# 0..8,972 bytes, each echo checked) and `nupa udp-check`, the reduction kernel against reduce-check's CPU senders (4
# senders, 64 KiB vectors, every result checked bit for bit), beside the same reduction served by one CPU thread
# (the simulation with THREADS 1). Run from the repository root. NUPA as in figures.sh. Output in $OUT or /tmp.
set -u
cd "$(dirname "$0")/../.."
if [ -z "${NUPA:-}" ]; then
  if [ -x .devrun/jrt/bin/java ]; then NUPA=".devrun/jrt/bin/java --enable-native-access=ALL-UNNAMED -jar .devrun/node/nupa-node.jar"; else NUPA=./nupa; fi
fi
L=${OUT:-/tmp}; F=/dev/shm/nupa-gpu-node-f; B=native/build
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
make -C native all sim build/nupa-gpu-node >/dev/null || { echo "BUILD FAILED"; exit 1; }
up() { for i in $(seq 300); do grep -q "serving" $1 && return 0; sleep .1; done; echo "no server: $(cat $1)"; return 1; }
$NUPA fabric create --force --fabric $F >/dev/null || exit 1
echo "== echo kernel (GPU, ${THREADS:-128} threads)"
taskset -c 2 $B/nupa-gpu-node $F 5 10.0.0.6/24 echo 7 ${THREADS:-128} 300 >$L/echo.log 2>&1 & G=$!
up $L/echo.log
timeout 120 taskset -c 4 $B/nupa-cnode $F 3 10.0.0.4/24 udp 10.0.0.6 7 0 8972
timeout 120 $NUPA udp-check --fabric $F --count 2000 --max-size 8000 10.0.0.6
${EXTRA:-true}
kill -TERM $G; wait $G; cat $L/echo.log
echo "== reduction: 4 senders x 16384 floats, GPU kernel, then one CPU thread (the simulation, THREADS 1)"
for X in "$B/nupa-gpu-node:${THREADS:-128}" "$B/nupa-gpu-node-sim:1"; do
  taskset -c 2 ${X%:*} $F 5 10.0.0.6/24 reduce 9000 4 16384 1024 ${X#*:} 300 >$L/red.log 2>&1 & G=$!
  up $L/red.log
  for i in 1 2 3; do timeout 120 taskset -c 4 $B/nupa-gpu-node-sim $F -1 10.0.0.1/24 reduce-check 10.0.0.6 9000 4 16384 1024 ${ROUNDS:-200}; done
  kill -TERM $G; wait $G; cat $L/red.log
done
if [ "${SANITIZE:-0}" = 1 ]; then
  echo "== echo kernel under compute-sanitizer's memcheck"
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
  $CS --tool memcheck --error-exitcode 9 $B/nupa-gpu-node $F 5 10.0.0.6/24 echo 7 ${THREADS:-128} 300 >$L/cs.log 2>&1 & G=$!
  up $L/cs.log
  timeout 120 $B/nupa-cnode $F 3 10.0.0.4/24 udp 10.0.0.6 7 0 1500
  kill -TERM $(pgrep -P $G nupa-gpu-node || echo $G); wait $G; echo "sanitized run rc=$?"; tail -5 $L/cs.log
fi
rm -f $F
