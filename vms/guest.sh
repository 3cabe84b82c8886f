#!/usr/bin/env bash
# Guests for NUPA's VM tests, from Debian's packages: a kernel (unpacked from its .deb, not installed), a
# busybox initramfs with fabric-peek, and QEMU under software emulation (no KVM needed).
#
#   vms/guest.sh build DIR [--java]   kernel and initramfs into DIR (kept: a second build reuses the kernel);
#                                     --java: also a second initramfs with a trimmed Java runtime (jlink) and the
#                                     node's jars from node/target (./nupa build first), for `run --java`
#   vms/guest.sh many DIR FABRIC N [--doorbells] [run's options and KEY=VALUE ...]
#                                     boots N guests at once, each line of their consoles prefixed "guestK: ";
#                                     GUEST in a KEY=VALUE stands for K (0..N-1), K:KEY=VALUE is guest K's alone,
#                                     and each NIC gets its own MAC; --doorbells: an ivshmem server for their
#                                     run --doorbell while they run; K:serve=1: guest K serves the others and
#                                     is sent "stop" on a command channel once they have powered off;
#                                     returns when all have powered off, non-zero if one failed
#   vms/guest.sh run DIR FABRIC [--bridge BR] [--java] [--mac MAC] [--doorbell SOCKET] [--control SOCKET] [KEY=VALUE ...]
#                                     boots one guest whose ivshmem-plain device is backed by the fabric file
#                                     FABRIC, prints the guest's console, and returns when the guest powers off.
#                                     --doorbell: an ivshmem-doorbell device instead, from the ivshmem server on
#                                     SOCKET, on a q35 machine with an IOMMU, bound to vfio-pci in the guest
#                                     (nupa's --device vfio:BDF: interrupts between guests);
#                                     --bridge: a virtio-net NIC whose TAP joins bridge BR (in this namespace);
#                                     --control: a command channel, the guest's ttyS1 on a Unix socket that QEMU
#                                     listens on (lines go with `send`): "stop" ends the guest's nupa runs
#                                     (SIGTERM); after them, KEY=VALUE runs that tool (ping, pingpong, rping,
#                                     perftest) and "stop" powers the guest off (vms/init.sh, docs/vms.md);
#                                     KEY=VALUE pairs reach the guest's /init as nupa.KEY=VALUE on the kernel's
#                                     command line: ip=A.B.C.D/LEN, route=NET/LEN,GW, ping=HOST, and
#                                     pingpong=HOST,ITERS,SIZE (Soft-RoCE's ibv_rc_pingpong) and
#                                     perftest=RUN;RUN... (perftest's ib_* tools over Soft-RoCE) and
#                                     mwcheck=HOST,PORT (vms/mw-check.c: memory windows over Soft-RoCE) and
#                                     rping=ARG,ARG... (rdma_cm's rping), nupa=ARG,ARG... (the nupa command, with
#                                     --java; vms/init.sh), uio=1 (the ivshmem device to uio_pci_generic, UIO
#                                     standing for its /dev/uioN in nupa=). --java: the Java initramfs too, and 1 GiB
#                                     of memory
#   vms/guest.sh send SOCKET LINE     sends LINE to the guest whose command channel is SOCKET (run --control) and
#                                     waits until the guest has taken it (it echoes what it takes)
#   vms/guest.sh server DIR SOCKET FABRIC
#                                     the ivshmem server (vms/ivshmem-server.c, built into DIR): hands FABRIC and
#                                     an eventfd a guest to each ivshmem-doorbell device that connects to SOCKET
#
# Needs qemu-system-x86, busybox-static, cpio, gcc and apt-get download (Debian bookworm); libibverbs-dev and
# librdmacm-dev for mw-check.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The guest's network: virtio over PCI (the kernel has neither built in); Linux Soft-RoCE, with the CRC-32
# the ICRC needs (its crypto driver is asked for by name, not a module dependency); rdma_cm's user access.
# VFIO for an ivshmem-doorbell device (run --doorbell), UIO for an ivshmem-plain one (uio=1).
MODULES="virtio_pci virtio_net crc32_generic rdma_rxe ib_uverbs rdma_ucm vfio_iommu_type1 vfio_pci uio_pci_generic"
# RDMA's user side, where the host has it (apt-get install ibverbs-utils ibverbs-providers iproute2).
RDMA_BINARIES="/usr/bin/ibv_rc_pingpong /usr/bin/ibv_devinfo /usr/bin/rdma"
RDMA_PROVIDER=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
# perftest's tools and rdma_cm's rping, where the host has them (apt-get install perftest rdmacm-utils); glibc's
# thread exit loads libgcc_s, which ldd does not list.
PERFTEST_BINARIES="/usr/bin/ib_write_lat /usr/bin/ib_send_lat /usr/bin/ib_read_lat /usr/bin/ib_atomic_lat /usr/bin/ib_write_bw
  /usr/bin/ib_send_bw /usr/bin/ib_read_bw"
RDMACM_BINARIES="/usr/bin/rping"
LIBGCC=/usr/lib/x86_64-linux-gnu/libgcc_s.so.1
die() { echo "vms/guest.sh: $*" >&2; exit 1; }

build() {
  local dir=$1 java=${2:-}
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ ! -f "$dir/vmlinuz" ] || [ ! -d "$dir/modules" ]; then
    local pkg
    pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    [ -n "$pkg" ] || die "no linux-image package found (apt-get update?)"
    rm -rf "$dir/deb" && mkdir -p "$dir/deb"
    (cd "$dir/deb" && apt-get download -q "$pkg" >/dev/null) || die "apt-get download $pkg failed"
    dpkg -x "$dir"/deb/*.deb "$dir/deb/x"
    cp "$dir"/deb/x/boot/vmlinuz-* "$dir/vmlinuz"
    rm -rf "$dir/modules" && mv "$dir"/deb/x/lib/modules/* "$dir/modules"
    rm -rf "$dir/deb"
  fi
  local root="$dir/initramfs"
  rm -rf "$root" && mkdir -p "$root/bin"
  cp "$(command -v busybox)" "$root/bin/busybox"
  file "$root/bin/busybox" 2>/dev/null | grep -q "statically linked" || [ ! -x /usr/bin/file ] \
    || die "busybox is not statically linked: apt-get install busybox-static"
  gcc -O2 -static -o "$root/bin/fabric-peek" "$here/fabric-peek.c"
  gcc -O2 -o "$dir/ivshmem-server" "$here/ivshmem-server.c"
  # The modules the guest loads, with what they depend on, in load order (read from each .ko's .modinfo: no kmod).
  mkdir -p "$root/lib/modules"
  python3 - "$dir/modules" "$root/lib/modules" $MODULES <<'PY'
import os, re, shutil, sys
src, dst, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
found = {}
for d, _, files in os.walk(src):
    for f in files:
        if f.endswith('.ko'):
            found[f[:-3].replace('-', '_')] = os.path.join(d, f)
def depends(name):
    m = re.search(rb'depends=([^\0]*)\0', open(found[name], 'rb').read())
    return [x.replace('-', '_') for x in m.group(1).decode().split(',') if x] if m else []
order = []
def visit(name):
    if name in order:
        return
    if name not in found:
        sys.exit('no module ' + name + ' in the kernel package')
    for d in depends(name):
        visit(d)
    order.append(name)
for w in wanted:
    visit(w)
for n in order:
    shutil.copy(found[n], os.path.join(dst, n + '.ko'))
open(os.path.join(dst, 'order'), 'w').write('\n'.join(order) + '\n')
PY
  # Programs with the libraries they load (ldd), and the rxe provider with its driver file.
  copy() {
    mkdir -p "$root$(dirname "$1")" && cp -L "$1" "$root$1"
    ldd "$1" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | while read -r lib; do
      [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"; }
    done
  }
  # A set of tools goes in whole, or not at all with a line saying which package would bring it.
  optional() {
    local b all=1
    for b in $1; do [ -e "$b" ] || all=0; done
    if [ "$all" = 1 ]; then
      for b in $1; do copy "$b"; done
    else
      echo "vms/guest.sh: no $2 on this host: the guest goes without $1" >&2
    fi
  }
  local have=1
  for b in $RDMA_BINARIES $RDMA_PROVIDER /etc/libibverbs.d/rxe.driver; do [ -e "$b" ] || have=0; done
  if [ "$have" = 1 ]; then
    for b in $RDMA_BINARIES $RDMA_PROVIDER; do copy "$b"; done
    mkdir -p "$root/etc/libibverbs.d" && cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
    [ -e "$LIBGCC" ] && copy "$LIBGCC"
    optional "$PERFTEST_BINARIES" "perftest"
    optional "$RDMACM_BINARIES" "rdmacm-utils"
    # mw-check (vms/mw-check.c): memory windows and SEND_WITH_INV against a peer, built against rdma-core's headers.
    if [ -e /usr/include/infiniband/verbs.h ] && [ -e /usr/include/rdma/rdma_cma.h ]; then
      mkdir -p "$root/usr/bin" && gcc -O2 -o "$root/usr/bin/mw-check" "$here/mw-check.c" -libverbs -lrdmacm
      ldd "$root/usr/bin/mw-check" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | while read -r lib; do copy "$lib"; done
    else
      echo "vms/guest.sh: no libibverbs-dev or librdmacm-dev on this host: the guest goes without mw-check" >&2
    fi
  else
    echo "vms/guest.sh: no ibverbs-utils, ibverbs-providers or rdma on this host: the guest has no RDMA tools" >&2
  fi
  cp "$here/init.sh" "$root/init" && chmod +x "$root/init"
  (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1 > "$dir/initramfs.cpio.gz")
  rm -rf "$root"
  [ "$java" = --java ] && build_java "$dir"
  # run --java boots both: the kernel unpacks one archive after the other.
  [ -f "$dir/java.cpio.gz" ] && cat "$dir/initramfs.cpio.gz" "$dir/java.cpio.gz" > "$dir/initrd-java.cpio.gz"
  return 0
}

# A second initramfs (the kernel unpacks one after the other): a jlink'd runtime of the modules the node uses, and
# the node's jars, under /opt/nupa.
build_java() {
  local dir=$1 jdk jar="$here/../node/target/nupa-node.jar"
  jdk=${JAVA_HOME:-$(ls -d /usr/lib/jvm/*25* 2>/dev/null | head -n 1)}
  [ -x "$jdk/bin/jlink" ] || die "no JDK 25 with jlink (set JAVA_HOME)"
  [ -f "$jar" ] || die "no $jar: build the project first (./nupa build)"
  local root="$dir/javaroot"
  rm -rf "$root" && mkdir -p "$root/opt/nupa/node"
  "$jdk/bin/jlink" --add-modules java.base,java.management,jdk.unsupported,java.logging,java.naming,jdk.management,java.net.http,java.xml \
    --strip-debug --no-man-pages --no-header-files --compress=zip-6 --generate-cds-archive --output "$root/opt/nupa/jrt"
  rm -f "$root/opt/nupa/jrt/lib/server/classes_nocoops.jsa" # a guest's heap is small: compressed oops
  cp "$jar" "$root/opt/nupa/node/" && cp -r "$here/../node/target/lib" "$root/opt/nupa/node/lib"
  aot_cache "$dir" "$root/opt/nupa"
  # The C libraries the runtime loads (the first initramfs may carry none).
  local f lib
  for f in "$root/opt/nupa/jrt/bin/java" "$root"/opt/nupa/jrt/lib/*.so "$root"/opt/nupa/jrt/lib/server/*.so; do
    ldd "$f" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | while read -r lib; do
      [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"; }
    done
  done
  (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1 > "$dir/java.cpio.gz")
  rm -rf "$root"
}

# The guests' JVM flags, one argument file (java @FILE) for the training run here and the runs in a guest. Under
# software emulation a JVM spends about a minute of each command loading and linking classes; an AOT cache (JEP 483)
# made here by a training run of the same runtime, flags and jars (a TCP check against a node) makes that a file to
# map. Where the cache does not fit the JVM says so and runs without it; where training fails the guests go without.
aot_cache() {
  local dir=$1 opt=$2 fabric pid i
  local java="$opt/jrt/bin/java" node="$opt/node"
  printf '%s\n' --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Xmx256m \
    > "$node/jvm.args"
  fabric=$(mktemp -u "/dev/shm/nupa-aot-XXXXXX")
  "$java" @"$node/jvm.args" -jar "$node/nupa-node.jar" node --fabric "$fabric" --address 3 --tcp-echo 7 \
    > "$dir/aot-node.log" 2>&1 &
  pid=$!
  for i in $(seq 120); do grep -q "nupa node:" "$dir/aot-node.log" && break; sleep 0.5; done
  if "$java" @"$node/jvm.args" -XX:AOTCacheOutput="$node/nupa.aot" -jar "$node/nupa-node.jar" tcp-check --fabric "$fabric" \
      --address 5 --connections 2 --bytes 100000 10.0.0.4 > "$dir/aot-train.log" 2>&1 && [ -f "$node/nupa.aot" ]; then
    echo "-XX:AOTCache=/opt/nupa/node/nupa.aot" >> "$node/jvm.args"
  else
    rm -f "$node/nupa.aot"
    echo "vms/guest.sh: no AOT cache for the guests' JVM (training failed: $dir/aot-train.log); they load classes as usual" >&2
  fi
  kill "$pid" 2>/dev/null || true # gone already where it failed to start
  wait "$pid" 2>/dev/null || true
  rm -f "$fabric"
}

run() {
  local dir=$1 fabric=$2
  shift 2
  local nic=(-nic none) args="" bridge="" initrd="$dir/initramfs.cpio.gz" memory=256 mac=52:54:00:12:34:56 doorbell="" control=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --bridge) bridge=$2; shift 2 ;;
      --mac) mac=$2; shift 2 ;;
      --doorbell) doorbell=$2; shift 2 ;;
      --control) control=$2; shift 2 ;;
      --java)
        [ -f "$dir/initrd-java.cpio.gz" ] || die "no Java in $dir: vms/guest.sh build $dir --java first"
        initrd="$dir/initrd-java.cpio.gz"; memory=1024; shift ;;
      *=*) args="$args nupa.$1"; shift ;;
      *) die "unknown run option $1" ;;
    esac
  done
  if [ -n "$bridge" ]; then
    # QEMU creates the TAP and runs this with its name: it joins the bridge before the guest's kernel is up.
    local up="$dir/ifup-$bridge.sh"
    local tmp
    tmp=$(mktemp "$up.XXXXXX")
    printf '#!/bin/sh\nip link set "$1" master %s && ip link set "$1" up\n' "$bridge" > "$tmp"
    chmod +x "$tmp" && mv "$tmp" "$up" # whole, also when guests start together
    nic=(-netdev "tap,id=n0,script=$up,downscript=no" -device "virtio-net-pci,netdev=n0,mac=$mac")
  fi
  [ -f "$dir/vmlinuz" ] && [ -f "$dir/initramfs.cpio.gz" ] || die "no guest in $dir: vms/guest.sh build $dir first"
  [ -f "$fabric" ] || die "no fabric file $fabric"
  # QEMU runs as this user and maps the file read-write: a fabric is its creator's alone (0600), so run as that
  # user, or create it with nupa fabric create --fabric-group G for a group this user is in.
  [ -r "$fabric" ] && [ -w "$fabric" ] || die "fabric file $fabric is not readable and writable by $(id -un) (ls -l $fabric)"
  # A PCI BAR is a power of two: grow the (sparse) file to the next one, which the fabric's nodes accept.
  local size
  size=$(stat -c %s "$fabric")
  size=$(python3 -c "import sys; n = int(sys.argv[1]); print(n if n & (n - 1) == 0 else 1 << n.bit_length())" "$size")
  truncate -s "$size" "$fabric"
  local machine=(-machine pc) ivshmem=(-object "memory-backend-file,id=fabric,mem-path=$fabric,size=$size,share=on"
    -device ivshmem-plain,memdev=fabric,addr=04.0)
  if [ -n "$doorbell" ]; then
    # VFIO needs an IOMMU: q35's intel-iommu (first, before the devices it translates), without interrupt
    # remapping (the guest loads vfio_iommu_type1 with allow_unsafe_interrupts). The server hands QEMU the file.
    [ -S "$doorbell" ] || die "no ivshmem server at $doorbell (vms/guest.sh server DIR SOCKET FABRIC)"
    machine=(-machine q35 -device intel-iommu)
    ivshmem=(-chardev "socket,path=$doorbell,id=ivs" -device ivshmem-doorbell,chardev=ivs,vectors=1,addr=04.0)
    args="$args intel_iommu=on nupa.vfio=1"
  fi
  local channel=()
  if [ -n "$control" ]; then
    # The command channel: the guest's second serial port (ttyS1) on a Unix socket QEMU listens on.
    channel=(-chardev "socket,id=ctl,path=$control,server=on,wait=off" -serial mon:stdio -serial chardev:ctl)
    args="$args nupa.control=1"
  fi
  timeout "${GUEST_TIMEOUT:-120}" qemu-system-x86_64 -accel tcg -cpu max "${machine[@]}" -m "$memory" -smp 1 -nographic -no-reboot \
    "${nic[@]}" "${channel[@]}" -kernel "$dir/vmlinuz" -initrd "$initrd" -append "console=ttyS0 panic=-1 quiet loglevel=3$args" "${ivshmem[@]}"
}

server() {
  local dir=$1 socket=$2 fabric=$3
  [ -x "$dir/ivshmem-server" ] || die "no ivshmem server in $dir: vms/guest.sh build $dir first"
  [ -f "$fabric" ] || die "no fabric file $fabric"
  exec "$dir/ivshmem-server" "$socket" "$fabric"
}

# Sends one line to a guest's command channel (run --control SOCKET) and waits until the guest echoes it back: QEMU
# drops what a sender that hangs up left unread.
send() {
  python3 -c 'import socket, sys
line = sys.argv[2].encode() + b"\n"
try:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(sys.argv[1])
    s.sendall(line)
    back = b""
    while line.strip() not in back:
        got = s.recv(4096)
        if not got:
            sys.exit(1)
        back += got
    s.close()
except OSError as e:
    sys.exit(str(e))' "$1" "$2" || { echo "guest.sh: the guest on $1 did not take $2" >&2; return 1; }
}

many() {
  local dir=$1 fabric=$2 n=$3 k status=0
  shift 3
  [ "$n" -ge 1 ] 2>/dev/null || die "many: N must be a number of guests, 1 or more"
  local pids=() extra=() servers=() channels=()
  if [ "${1:-}" = --doorbells ]; then
    shift
    [ -x "$dir/ivshmem-server" ] || die "no ivshmem server in $dir: vms/guest.sh build $dir first"
    local socket
    socket=$(mktemp -u "${TMPDIR:-/tmp}/nupa-ivshmem-XXXXXX")
    "$dir/ivshmem-server" "$socket" "$fabric" &
    ivshmem_pid=$!
    trap '[ -z "${ivshmem_pid:-}" ] || kill "$ivshmem_pid" 2>/dev/null' EXIT # also when many is stopped before its guests end
    trap 'exit 143' TERM INT
    for ((k = 0; k < 50; k++)); do [ -S "$socket" ] && break; sleep 0.1; done
    [ -S "$socket" ] || die "the ivshmem server did not come up on $socket"
    extra=(--doorbell "$socket")
  fi
  for ((k = 0; k < n; k++)); do
    local a=() x
    for x in "$@"; do
      if [[ "$x" =~ ^([0-9]+):(.*)$ ]]; then # K:KEY=VALUE is guest K's alone
        [ "${BASH_REMATCH[1]}" = "$k" ] && a+=("${BASH_REMATCH[2]//GUEST/$k}")
      else
        a+=("${x//GUEST/$k}")
      fi
    done
    # serve=1: guest K serves the others; once they have powered off, it is sent "stop" on its command channel.
    local b=() ctl=() serve=0
    for x in "${a[@]}"; do
      if [ "$x" = serve=1 ]; then serve=1; else b+=("$x"); fi
    done
    [ "$serve" = 1 ] && ctl=(--control "$(mktemp -u "${TMPDIR:-/tmp}/nupa-guest$k-XXXXXX")")
    (set -o pipefail; run "$dir" "$fabric" --mac "$(printf '52:54:00:4e:50:%02x' "$k")" "${extra[@]}" "${ctl[@]}" "${b[@]}" 2>&1 \
      | sed -u "s/^/guest$k: /") &
    if [ "$serve" = 1 ]; then servers+=($!); channels+=("${ctl[1]}"); else pids+=($!); fi
  done
  for k in "${pids[@]}"; do wait "$k" || status=1; done
  if [ ${#pids[@]} -gt 0 ]; then
    for k in "${channels[@]}"; do send "$k" stop || status=1; done
  fi
  for k in "${servers[@]}"; do wait "$k" || status=1; done
  for k in "${channels[@]}"; do rm -f "$k"; done
  [ -z "${ivshmem_pid:-}" ] || { kill "$ivshmem_pid" 2>/dev/null; wait "$ivshmem_pid" 2>/dev/null; ivshmem_pid=""; }
  return $status
}

case "${1:-}" in
  build) [ $# -eq 2 ] || [ $# -eq 3 ] && [ "${3:---java}" = --java ] || die "usage: vms/guest.sh build DIR [--java]"; build "$2" "${3:-}" ;;
  run) [ $# -ge 3 ] || die "usage: vms/guest.sh run DIR FABRIC [--bridge BR] [--java] [--mac MAC] [--doorbell SOCKET] [--control SOCKET] [KEY=VALUE ...]"
    shift; run "$@" ;;
  many) [ $# -ge 4 ] || die "usage: vms/guest.sh many DIR FABRIC N [--doorbells] [run's options] [KEY=VALUE ...]"; shift; many "$@" ;;
  server) [ $# -eq 4 ] || die "usage: vms/guest.sh server DIR SOCKET FABRIC"; shift; server "$@" ;;
  send) [ $# -eq 3 ] || die "usage: vms/guest.sh send SOCKET LINE"; send "$2" "$3" ;;
  *) die "usage: vms/guest.sh build DIR [--java] | run DIR FABRIC ... | many DIR FABRIC N ... | server DIR SOCKET FABRIC | send SOCKET LINE" ;;
esac
