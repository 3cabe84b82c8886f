#!/usr/bin/env bash
# Times the UDP stack of revision REV (A) against the working tree (B) in one JVM: see BuildAbBench.
# usage: bench/ab.sh REV [on|off] [runs]    (checksums on by default, 3 runs; needs JAVA_HOME = a JDK 25)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ]; then
  echo "usage: bench/ab.sh REV [on|off] [runs]  (e.g. bench/ab.sh HEAD~1)" >&2
  exit 2
fi
java="${JAVA_HOME:?set JAVA_HOME to a JDK 25}/bin/java"
sha=$(git -C "$root" rev-parse --short "$1")
wt="${TMPDIR:-/tmp}/nupa-ab-$sha"
[ -d "$wt" ] || git -C "$root" worktree add --detach -q "$wt" "$sha"
(cd "$wt" && mvn -B -q -o compile -pl device-uio,stack-l2,stack-ip)
(cd "$root" && mvn -B -q -o package -pl bench -am -DskipTests)
dirs() { echo "$1/device-uio/target/classes:$1/stack-l2/target/classes:$1/stack-ip/target/classes"; }
for _ in $(seq "${3:-3}"); do
  "$java" --enable-native-access=ALL-UNNAMED -cp "$root/bench/target/benchmarks.jar" dev.nupa.bench.BuildAbBench \
    dev.nupa.bench.UdpEchoCore "${2:-on}" "$(dirs "$wt")" "$(dirs "$root")" "$root/bench/target/benchmarks.jar"
done
echo "(A = $sha in $wt; remove it with: git worktree remove $wt)"
