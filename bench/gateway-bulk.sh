#!/usr/bin/env bash
# gateway-bulk: TCP bulk between Linux and a fabric node through the gateway, each way, beside Linux TCP
# over a veth pair between two namespaces, in alternating turns of one run. Needs root, nc (netcat-openbsd).
#
#   bench/gateway-bulk.sh [TURNS] [MIB]     (defaults 5 and 256)
#   GATEWAY_OPTS=--tap-offloads bench/gateway-bulk.sh    (checksum and segmentation offloads on the TAP)
#
# To the fabric, each turn sends MIB MiB of random bytes with `nc -N` (the same client both ways): to the
# TCP discard service (port 9) of the example services on fabric node 1, through a gateway whose TAP has
# the MTU of the veth pair (1500), and to `nc -l` in a second namespace over the veth pair. From the
# fabric, Linux's `nc` reads MIB MiB from the chargen service (port 19) of the example services, and from
# `nc -l` sending the same file over the veth pair. It prints each turn's rates and their ratios, then
# the median and range of each ratio over the turns.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
turns=${1:-5}
mib=${2:-256}
id=$$
ns=nupa-bulk-$id
peer=nupa-bulkp-$id
fabric=/dev/shm/nupa-bulk-$id
data=/dev/shm/nupa-bulk-data-$id
tap=nupabk$((id % 10000))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  ip netns del "$peer" 2>/dev/null || true
  rm -f "$fabric" "$data"
}
trap cleanup EXIT
head -c $((mib << 20)) /dev/urandom > "$data"
ip netns add "$ns"
ip netns add "$peer"
ip -n "$ns" link set lo up
ip -n "$peer" link set lo up
ip -n "$ns" link add vb0 type veth peer name vb1 netns "$peer"
ip -n "$ns" link set vb0 up
ip -n "$peer" link set vb1 up
ip -n "$ns" addr add 192.168.79.1/24 dev vb0
ip -n "$peer" addr add 192.168.79.2/24 dev vb1

"$root/nupa" build >/dev/null
"$root/nupa" node --fabric "$fabric" --address 0 --tap "$tap" --tap-addr 192.168.77.2/24 ${GATEWAY_OPTS:-} >/tmp/nupa-bulk-gw-$id.log 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do ip link show "$tap" >/dev/null 2>&1 && break; sleep 0.1; done
"$root/nupa" example hello-server "$fabric" 1 "192.168.77.0/24 via 10.0.0.1" >/tmp/nupa-bulk-srv-$id.log 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do grep -q READY /tmp/nupa-bulk-srv-$id.log 2>/dev/null && break; sleep 0.1; done
ip link set "$tap" netns "$ns"
ip -n "$ns" link set "$tap" up
ip -n "$ns" addr add 192.168.77.1/24 dev "$tap"
ip -n "$ns" route add 10.0.0.0/24 via 192.168.77.2

seconds() { local s e; s=$(date +%s%N); "$@"; e=$(date +%s%N); awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
ours() { ip netns exec "$ns" nc -N 10.0.0.2 9 < "$data"; }
linux() {
  ip netns exec "$peer" nc -l 192.168.79.2 5009 > /dev/null &
  local sink=$!
  sleep 0.2
  ip netns exec "$ns" nc -N 192.168.79.2 5009 < "$data"
  wait "$sink"
}
ours_back() { ip netns exec "$ns" nc 10.0.0.2 19 | head -c $((mib << 20)) > /dev/null; }
linux_back() {
  ip netns exec "$peer" nc -l 192.168.79.2 5019 < "$data" &
  local source=$!
  sleep 0.2
  ip netns exec "$ns" nc 192.168.79.2 5019 | head -c $((mib << 20)) > /dev/null
  kill "$source" 2>/dev/null || true
  wait "$source" 2>/dev/null || true
}
gbit() { awk -v s="$1" -v m="$mib" 'BEGIN { printf "%.2f", m * 8.388608 / 1000 / s }'; }
ours; ours; ours_back; ours_back # warm-up: the JIT compiles the paths
to=()
from=()
for t in $(seq 1 "$turns"); do
  a=$(seconds ours)
  b=$(seconds linux)
  c=$(seconds ours_back)
  d=$(seconds linux_back)
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
  q=$(awk -v c="$c" -v d="$d" 'BEGIN { printf "%.3f", d / c }')
  to+=("$r")
  from+=("$q")
  echo "turn $t: to the fabric $(gbit "$a") Gbit/s, Linux over veth $(gbit "$b") Gbit/s: ${r}x;" \
    "from the fabric $(gbit "$c") Gbit/s, Linux over veth $(gbit "$d") Gbit/s: ${q}x"
done
summary() { sort -n | awk -v n="$turns" -v what="$1" '{ v[NR] = $1 } END { printf "%s: %.3fx (%.3f-%.3fx) Linux over veth, %d turns\n", what, v[int((NR + 1) / 2)], v[1], v[NR], n }'; }
printf '%s\n' "${to[@]}" | summary "to the fabric through the gateway"
printf '%s\n' "${from[@]}" | summary "from the fabric through the gateway"
