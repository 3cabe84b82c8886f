#!/usr/bin/env bash
# cluster-two-fabrics: one Vert.x cluster over two fabrics, each behind a gateway, as on two hosts.
#
#   bench/cluster-two-fabrics.sh up      the fabrics, their gateways and the two hosts' networks; left running
#   bench/cluster-two-fabrics.sh run     (up if not up,) the cluster examples across the fabrics, then tears down what it made
#   bench/cluster-two-fabrics.sh down    removes everything up made
#
# Fabric A is 10.0.0.0/24, fabric B 10.0.1.0/24; node 0 of each is its gateway (`nupa node --tap`). Two network
# namespaces stand for the two hosts' kernels: host A holds fabric A's TAP device, host B fabric B's, and a veth pair
# joins the hosts; each routes its own fabric to its gateway and the other fabric to the other host:
#
#   fabric A -- gateway A (10.0.0.1, TAP 192.168.91.2) -- host A (192.168.91.1, 192.168.93.1)
#                                                            | veth
#   fabric B -- gateway B (10.0.1.1, TAP 192.168.92.2) -- host B (192.168.92.1, 192.168.93.2)
#
# `run` starts, with `nupa example`: cluster-service on fabric A (10.0.0.2) and on fabric B (10.0.1.2), then
# cluster-client on fabric B (10.0.1.3) and on fabric A (10.0.0.3). Each client's requests are answered in turn by
# the service on its own fabric (over the fabric directly) and the one on the other (TCP through both gateways and
# both hosts); what each client publishes reaches both services. It prints the replies, the news each service
# received, and the packets that crossed between the hosts; it fails (status 1, one line) when a client fails, is not
# answered by both services, or a service misses news. The JVMs run in this namespace: Hazelcast's membership goes
# over its loopback (FIRST_PORT..FIRST_PORT+3, default 5701), the event bus over the fabrics and the gateways.
# TWO_FABRICS_ID (1 to 9 of a-z0-9, default 2f) names what it makes, so that setups side by side do not clash:
# namespaces nupaID-hosta and -hostb, devices nupaIDa, nupaIDb, nupaIDva and nupaIDvb, fabrics /dev/shm/nupa-ID-a
# and -b, its state in /tmp/nupa-cluster-two-fabrics-ID.
# Needs root (TAP devices, network namespaces), ip, and the JDK and Maven that ./nupa needs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
die() { echo "cluster-two-fabrics: $*" >&2; exit 1; }

id=${TWO_FABRICS_ID:-2f}
# Interface names hold 15 characters: nupa + ID + va.
[[ "$id" =~ ^[a-z0-9]{1,9}$ ]] || { echo "cluster-two-fabrics: TWO_FABRICS_ID must be 1 to 9 of a-z0-9, not '$id'" >&2; exit 2; }
first_port=${FIRST_PORT:-5701}
[[ "$first_port" =~ ^[0-9]+$ ]] && [ "$first_port" -ge 1 ] && [ "$first_port" -le 65532 ] \
  || { echo "cluster-two-fabrics: FIRST_PORT must be a port from 1 to 65532, not '$first_port'" >&2; exit 2; }
state=/tmp/nupa-cluster-two-fabrics-$id
ns_a=nupa$id-hosta; ns_b=nupa$id-hostb
tap_a=nupa${id}a; tap_b=nupa${id}b
veth_a=nupa${id}va; veth_b=nupa${id}vb
fabric_a=/dev/shm/nupa-$id-a; fabric_b=/dev/shm/nupa-$id-b

# A command that fails ends the run with one line naming it (the EXIT traps below tear down what was made); functions
# and subshells share the trap (set -E), and a subshell leaves the line to its caller.
set -E
on_error() { [ "$BASH_SUBSHELL" -gt 0 ] && exit "$1"; die "'$3' failed (status $1, line $2)"; }
trap 'on_error $? $LINENO "$BASH_COMMAND"' ERR

# Ends the run with one line; the output of process NAME is kept in a file the line names, as the teardown removes $state.
die_with_log() {
  local name=$1 kept=/tmp/nupa-cluster-two-fabrics-$id-$1.log; shift
  cp "$state/$name.log" "$kept" 2>/dev/null || kept="(none)"
  die "$* (its output: $kept)"
}

# Starts "$@" in the background with its output in $state/NAME.log and its pid in $state/NAME.pid.
spawn() {
  local name=$1; shift
  "$@" >"$state/$name.log" 2>&1 &
  echo $! >"$state/$name.pid"
}

# Waits up to $3 seconds for a line matching $2 in $state/$1.log; fails with the log's tail if the process ends first.
await_line() {
  local name=$1 pattern=$2 secs=$3 pid
  pid=$(cat "$state/$name.pid")
  for _ in $(seq 1 $((secs * 5))); do
    grep -q -- "$pattern" "$state/$name.log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || die_with_log "$name" "$name ended before printing '$pattern'"
    sleep 0.2
  done
  die_with_log "$name" "$name printed no '$pattern' within $secs s"
}

stop() { # $1: a name spawned; SIGTERM, then SIGKILL after 10 s
  local f="$state/$1.pid" pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

is_up() { [ -f "$state/up" ]; }

down() {
  [ -d "$state" ] || { echo "cluster-two-fabrics: nothing is up"; return 0; }
  local n
  for n in client-a client-b service-a service-b gateway-a gateway-b; do stop "$n"; done
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  rm -f "$fabric_a" "$fabric_b"
  rm -rf "$state"
  echo "cluster-two-fabrics: down (gateways stopped, namespaces $ns_a and $ns_b and fabrics removed)"
}

up() {
  is_up && die "already up ($state); '$0 down' first"
  [ "$(id -u)" = 0 ] || die "needs root (TAP devices and network namespaces)"
  command -v ip >/dev/null || die "needs ip (apt-get install iproute2)"
  [ -w /dev/net/tun ] || die "/dev/net/tun is not writable here: no TAP devices"
  local existing; existing=$(ip netns list | awk '{ print $1 }')
  for n in "$ns_a" "$ns_b"; do
    grep -qxF "$n" <<<"$existing" && die "namespace $n exists (left by another run?): '$0 down' removes it"
  done
  for n in "$fabric_a" "$fabric_b"; do [ -e "$n" ] && die "$n exists (left by another run?): '$0 down' removes it"; done
  # Builds the distribution now if it is stale, so that the gateways' 60 s to start are not spent on it.
  "$root/nupa" --version >/dev/null || die "$root/nupa does not run (its error above)"
  mkdir -p "$state"
  trap 'down >/dev/null' EXIT # a failed up removes what it made
  spawn gateway-a "$root/nupa" node --fabric "$fabric_a" --address 0 --tap "$tap_a" --tap-addr 192.168.91.2/24 \
    --tap-route "10.0.1.0/24 via 192.168.91.1"
  spawn gateway-b "$root/nupa" node --fabric "$fabric_b" --address 0 --ip 10.0.1.1/24 --tap "$tap_b" --tap-addr 192.168.92.2/24 \
    --tap-route "10.0.0.0/24 via 192.168.92.1"
  await_line gateway-a "nupa node:" 60
  await_line gateway-b "nupa node:" 60
  ip netns add "$ns_a"
  ip netns add "$ns_b"
  ip link set "$tap_a" netns "$ns_a"
  ip link set "$tap_b" netns "$ns_b"
  ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b"
  ip -n "$ns_a" addr add 192.168.91.1/24 dev "$tap_a"
  ip -n "$ns_a" addr add 192.168.93.1/24 dev "$veth_a"
  ip -n "$ns_b" addr add 192.168.92.1/24 dev "$tap_b"
  ip -n "$ns_b" addr add 192.168.93.2/24 dev "$veth_b"
  for n in "$ns_a" "$ns_b"; do
    ip -n "$n" link set lo up
    ip netns exec "$n" sysctl -q -w net.ipv4.ip_forward=1
  done
  ip -n "$ns_a" link set "$tap_a" up; ip -n "$ns_a" link set "$veth_a" up
  ip -n "$ns_b" link set "$tap_b" up; ip -n "$ns_b" link set "$veth_b" up
  ip -n "$ns_a" route add 10.0.0.0/24 via 192.168.91.2
  ip -n "$ns_a" route add 10.0.1.0/24 via 192.168.93.2
  ip -n "$ns_b" route add 10.0.1.0/24 via 192.168.92.2
  ip -n "$ns_b" route add 10.0.0.0/24 via 192.168.93.1
  touch "$state/up"
  trap - EXIT
  echo "cluster-two-fabrics: up: fabric A $fabric_a (gateway 10.0.0.1, host $ns_a), fabric B $fabric_b (gateway 10.0.1.1, host $ns_b)"
}

packets_between_hosts() { ip -n "$ns_a" -s link show "$veth_a" | awk '/RX:/ { getline; rx = $2 } /TX:/ { getline; tx = $2 } END { print rx + tx }'; }

run() {
  local made=0
  if ! is_up; then
    up
    made=1
  fi
  # Tear down what this run made, whatever happens; a setup that was up before stays, without the examples.
  if [ "$made" = 1 ]; then trap 'down' EXIT; else trap 'stop client-a; stop client-b; stop service-a; stop service-b' EXIT; fi
  local a_route="10.0.1.0/24 via 10.0.0.1" b_route="10.0.0.0/24 via 10.0.1.1" before after
  before=$(packets_between_hosts)
  spawn service-a "$root/nupa" example cluster-service --route "$a_route" --member 0 "$fabric_a" 1 "$first_port"
  await_line service-a "cluster service on" 180 # the first example builds the examples when they are stale
  spawn service-b "$root/nupa" example cluster-service --ip 10.0.1.2/24 --route "$b_route" --member 1 "$fabric_b" 1 "$first_port"
  await_line service-b "cluster service on" 120
  spawn client-b "$root/nupa" example cluster-client --ip 10.0.1.3/24 --route "$b_route" --member 2 "$fabric_b" 2 "$first_port" 4
  spawn client-a "$root/nupa" example cluster-client --route "$a_route" --member 3 "$fabric_a" 2 "$first_port" 4
  local c s status news
  for c in client-b client-a; do
    status=0
    wait "$(cat "$state/$c.pid")" || status=$?
    rm -f "$state/$c.pid"
    echo "== $c ($( [ $c = client-a ] && echo 'fabric A, 10.0.0.3' || echo 'fabric B, 10.0.1.3')): replies from greeter"
    grep -v -i -E 'warn|hazelcast|^\s|^$|nupa:' "$state/$c.log" || true
    [ "$status" = 0 ] || die_with_log "$c" "$c failed (status $status)"
    for s in 10.0.0.2 10.0.1.2; do
      grep -q "^hello .* from $s\$" "$state/$c.log" || die_with_log "$c" "$c got no reply from the service at $s"
    done
  done
  for c in service-a service-b; do
    # Each client published 4 messages (not counting its one "subscriber check" request, which one service answers);
    # those to the service that did not answer its last request may still be on the way.
    for _ in $(seq 1 50); do
      news=$(grep -c '^news: news [0-9]* from ' "$state/$c.log" || true)
      [ "$news" -ge 8 ] && break
      sleep 0.2
    done
    echo "== $c ($( [ $c = service-a ] && echo 'fabric A, 10.0.0.2' || echo 'fabric B, 10.0.1.2')): news received"
    grep '^news:' "$state/$c.log" || true
    [ "$news" -ge 8 ] || die_with_log "$c" "$c printed $news of the 8 news within 10 s"
  done
  after=$(packets_between_hosts)
  echo "== packets between host A and host B (the event bus across the gateways): $((after - before))"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  run) run ;;
  -h|--help|help) usage ;;
  *) echo "cluster-two-fabrics: usage: $0 up|run|down ('$0 --help' says more)" >&2; exit 2 ;;
esac
