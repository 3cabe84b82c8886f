#!/usr/bin/env bash
# gateway-rtt: a UDP echo's round trip from Linux through the gateway, beside the floor for a userspace
# responder behind a TAP device (bench/floor/tap-echo-floor.c: one C thread that busy-polls the TAP and
# answers), in alternating turns of one run. Needs root (TAP devices, a network namespace) and cc.
#
#   bench/gateway-rtt.sh [TURNS] [ROUND_TRIPS]     (defaults 5 and 20000)
#   GATEWAY_OPTS=--spin CLIENT=block FLOOR=always bench/gateway-rtt.sh    (the other arrangement, below)
#
# Each turn runs bench/floor/udp-rtt.c (64-byte datagrams, one in flight, a nanosecond clock) from a
# namespace that holds both TAP devices, against: the floor's UDP echo, the gateway node's own UDP echo
# (at its TAP address), and the UDP echo of fabric node 1 through the gateway. It prints each turn's
# p50s and their ratios to the floor's, then the median and range of each ratio over the turns.
# The two vCPUs of the machines here hold two busy threads at once: the client (it busy-polls for each
# answer, so that no wake-up of its own is timed) and the side measured. The floor runs only for its
# turn; the gateway and node 1 run as nodes do by default (their event loops spin while work comes,
# then yield, then sleep), so they are asleep during the floor's turn. On a VM an idle vCPU takes
# 10-20 us to wake; no side is measured with the other's busy thread beside it. A round trip through the
# gateway to node 1 wants three busy threads (client, gateway, node 1), one more than there are vCPUs;
# for it, the other arrangement keeps one busy thread on each vCPU all the time: the gateway spins
# (GATEWAY_OPTS=--spin), the floor runs for the whole run (FLOOR=always), and the client blocks
# (CLIENT=block), so each side's turn has the other side's busy thread beside it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
turns=${1:-5}
pings=${2:-20000}
id=$$
ns=nupa-rtt-$id
fabric=/dev/shm/nupa-rtt-$id
floor_tap=nuparttf$((id % 10000))
gw_tap=nupartg$((id % 10000))
floor_bin=$root/bench/target/tap-echo-floor
rtt_bin=$root/bench/target/udp-rtt
mkdir -p "$root/bench/target"
cc -O2 -o "$floor_bin" "$root/bench/floor/tap-echo-floor.c"
cc -O2 -o "$rtt_bin" "$root/bench/floor/udp-rtt.c"
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

"$root/nupa" node --fabric "$fabric" --address 0 ${GATEWAY_OPTS:-} --udp-echo 7 --tap "$gw_tap" --tap-addr 192.168.77.2/24 >/tmp/nupa-rtt-gw-$id.log 2>&1 &
pids+=($!)
"$root/nupa" node --fabric "$fabric" --address 1 --udp-echo 7 --route "192.168.77.0/24 via 10.0.0.1" >/tmp/nupa-rtt-n1-$id.log 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do ip link show "$gw_tap" >/dev/null 2>&1 && break; sleep 0.1; done
sleep 2
ip link set "$gw_tap" netns "$ns"
ip -n "$ns" link set "$gw_tap" up
ip -n "$ns" addr add 192.168.77.1/24 dev "$gw_tap"
ip -n "$ns" route add 10.0.0.0/24 via 192.168.77.2

p50() { # the median round trip to $1's UDP echo (port 7), in microseconds
  ip netns exec "$ns" "$rtt_bin" "$1" 7 "$pings" 64 "${CLIENT:-spin}" | sed -n 's/.*p50_ns=\([0-9]*\).*/\1/p' | awk '{ printf "%.2f\n", $1 / 1000 }'
}

floor_pid=""
floor_on() {
  "$floor_bin" "$floor_tap" 192.168.78.2 3600 >/dev/null 2>&1 &
  floor_pid=$!
  for _ in $(seq 1 100); do ip link show "$floor_tap" >/dev/null 2>&1 && break; sleep 0.05; done
  ip link set "$floor_tap" netns "$ns"
  ip -n "$ns" link set "$floor_tap" up
  ip -n "$ns" addr add 192.168.78.1/24 dev "$floor_tap"
}
floor_off() { kill "$floor_pid" 2>/dev/null || true; wait "$floor_pid" 2>/dev/null || true; }
trap 'floor_off; cleanup' EXIT

for _ in 1 2 3; do # warm-up: the JIT compiles the path
  p50 10.0.0.2 >/dev/null
  p50 192.168.77.2 >/dev/null
done
gw_ratios=(); node_ratios=()
[ "${FLOOR:-}" = always ] && floor_on
for t in $(seq 1 "$turns"); do
  # By default the floor runs while the gateway's and node 1's loops sleep: one busy thread answers, one asks.
  [ "${FLOOR:-}" = always ] || floor_on
  floor=$(p50 192.168.78.2)
  [ "${FLOOR:-}" = always ] || floor_off
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
