#!/usr/bin/env bash
# gateway-rtt: Linux's ping round trip through the gateway, beside the floor for a userspace responder
# behind a TAP device (bench/floor/tap-echo-floor.c: one C thread that busy-polls the TAP and answers),
# in alternating turns of one run. Needs root (TAP devices, a network namespace), cc and ping.
#
#   bench/gateway-rtt.sh [TURNS] [PINGS]     (defaults 5 and 5000)
#
# Each turn pings, from a namespace that holds both TAP devices, with `ping -A` (the next request as
# soon as the reply is in): the floor's address, the gateway's own address (the gateway node answers),
# and fabric node 1 through the gateway. It prints each turn's p50s and the ratios to the floor, then
# the median and range of each ratio over the turns. The gateway busy-polls (--spin), as the floor does;
# fabric node 1 runs as a node normally does (its event loop spins, then yields, then sleeps).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
turns=${1:-5}
pings=${2:-5000}
id=$$
ns=nupa-rtt-$id
fabric=/dev/shm/nupa-rtt-$id
floor_tap=nuparttf$((id % 10000))
gw_tap=nupartg$((id % 10000))
floor_bin=$root/bench/target/tap-echo-floor
mkdir -p "$root/bench/target"
cc -O2 -o "$floor_bin" "$root/bench/floor/tap-echo-floor.c"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -f "$fabric"
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up

"$root/nupa" node --fabric "$fabric" --address 0 --spin --tap "$gw_tap" --tap-addr 192.168.77.2/24 >/tmp/nupa-rtt-gw-$id.log 2>&1 &
pids+=($!)
"$root/nupa" node --fabric "$fabric" --address 1 --route "192.168.77.0/24 via 10.0.0.1" >/tmp/nupa-rtt-n1-$id.log 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do ip link show "$gw_tap" >/dev/null 2>&1 && break; sleep 0.1; done
sleep 2
ip link set "$gw_tap" netns "$ns"
ip -n "$ns" link set "$gw_tap" up
ip -n "$ns" addr add 192.168.77.1/24 dev "$gw_tap"
ip -n "$ns" route add 10.0.0.0/24 via 192.168.77.2

p50() { # the median of ping's per-reply times, in microseconds
  ip netns exec "$ns" ping -A -c "$pings" -W 2 "$1" | sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | sort -n \
    | awk '{ t[NR] = $1 } END { if (NR == 0) { print "nan"; exit } printf "%.1f\n", t[int((NR + 1) / 2)] * 1000 }'
}

p50 10.0.0.2 >/dev/null # warm-up: the JIT compiles the path
p50 192.168.77.2 >/dev/null
gw_ratios=(); node_ratios=()
for t in $(seq 1 "$turns"); do
  "$floor_bin" "$floor_tap" 192.168.78.2 600 >/dev/null 2>&1 &
  fp=$!
  for _ in $(seq 1 100); do ip link show "$floor_tap" >/dev/null 2>&1 && break; sleep 0.05; done
  ip link set "$floor_tap" netns "$ns"
  ip -n "$ns" link set "$floor_tap" up
  ip -n "$ns" addr add 192.168.78.1/24 dev "$floor_tap"
  floor=$(p50 192.168.78.2)
  kill "$fp"; wait "$fp" 2>/dev/null || true
  gw=$(p50 192.168.77.2)
  node=$(p50 10.0.0.2)
  gr=$(awk -v a="$gw" -v b="$floor" 'BEGIN { printf "%.2f", a / b }')
  nr=$(awk -v a="$node" -v b="$floor" 'BEGIN { printf "%.2f", a / b }')
  gw_ratios+=("$gr"); node_ratios+=("$nr")
  echo "turn $t: p50 floor ${floor} us, gateway ${gw} us (${gr}x), fabric node through it ${node} us (${nr}x)"
done
summary() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "%.2fx (%.2f-%.2fx)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
echo "gateway's own address: $(summary "${gw_ratios[@]}") the floor's p50 over $turns turns"
echo "fabric node through the gateway: $(summary "${node_ratios[@]}") the floor's p50 over $turns turns"
