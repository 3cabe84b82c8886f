#!/bin/busybox sh
# The guest's /init: mounts the kernel's file systems, finds the ivshmem device (vendor 1af4, device 1110),
# enables it and reads the fabric through its BAR2 with fabric-peek, runs what the kernel's command line asks
# (nupa.KEY=VALUE: nupa, uio, vfio, control, ip, route, ping, pingpong, rping, perftest, mwcheck; vms/guest.sh lists them), then
# the tools its command channel asks for, if it has one, then powers off.
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /tmp
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
echo "nupa-guest: up, kernel $(uname -r)"
ip link set lo up
# vfio_iommu_type1 without interrupt remapping (QEMU's intel-iommu here has none) needs allow_unsafe_interrupts.
for m in $(cat /lib/modules/order); do
  opt=""; [ "$m" = vfio_iommu_type1 ] && opt=allow_unsafe_interrupts=1
  insmod "/lib/modules/$m.ko" $opt || echo "nupa-guest: insmod $m failed"
done
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^nupa\.$1=//p"; }
found=0
for d in /sys/bus/pci/devices/*; do
  if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then
    found=1
    echo 1 > "$d/enable"
    bdf=$(basename "$d")
    echo "nupa-guest: ivshmem at $bdf"
    /bin/fabric-peek "$d/resource2"
    # uio=1: the device goes to uio_pci_generic, for nupa's --device uio:/dev/uioN.
    if [ "$(arg uio)" = 1 ]; then
      echo uio_pci_generic > "$d/driver_override"
      echo "$bdf" > /sys/bus/pci/drivers_probe
      uio=$(ls "$d/uio" 2>/dev/null | head -n 1)
      if [ -n "$uio" ]; then
        echo "nupa-guest: $bdf on uio_pci_generic as /dev/$uio"
      else
        echo "nupa-guest: $bdf could not be bound to uio_pci_generic"
      fi
    fi
    # An ivshmem-doorbell device (run --doorbell) goes to vfio-pci, for nupa's --device vfio:BDF.
    if [ "$(arg vfio)" = 1 ]; then
      echo vfio-pci > "$d/driver_override"
      echo "$bdf" > /sys/bus/pci/drivers_probe
      if [ -e "$d/iommu_group" ] && [ "$(basename "$(readlink "$d/driver")")" = vfio-pci ]; then
        echo "nupa-guest: $bdf on vfio-pci, IOMMU group $(basename "$(readlink "$d/iommu_group")")"
      else
        echo "nupa-guest: $bdf could not be bound to vfio-pci"
      fi
    fi
  fi
done
[ "$found" = 1 ] || echo "nupa-guest: no ivshmem device"
# The command channel (guest.sh run --control SOCKET): lines from the host on the second serial port. While nupa
# runs, "stop" ends the one going on with SIGTERM (a node prints its counters and leaves the fabric) and skips those
# still to come; then the channel's lines ask for tools (below) until "stop".
channel=""
if [ "$(arg control)" = 1 ] && [ -e /dev/ttyS1 ]; then
  # Echo: each byte the guest takes goes back, so that a sender knows its line arrived whole (QEMU drops what a
  # sender that hangs up left unread).
  stty -F /dev/ttyS1 raw echo 2>/dev/null
  channel=/dev/ttyS1
  echo "nupa-guest: command channel on ttyS1"
fi
# The nupa command on Java (run --java), one run after another: nupa=RUN;RUN..., each RUN its arguments joined by
# commas, IVSHMEM standing for the device's PCI address and UIO for its /dev/uioN (uio=1): ping,--device,pci:IVSHMEM,...
# is a fabric node in the guest, on the BAR the host's file backs.
np=$(arg nupa | sed "s/IVSHMEM/$bdf/g; s|UIO|/dev/$uio|g")
if [ -n "$np" ]; then
  reader=""
  if [ -n "$channel" ]; then # meanwhile, "stop" on the channel ends the run going on
    (while read -r cmd; do
      [ "$cmd" = stop ] && { touch /tmp/nupa.stop; [ -f /tmp/nupa.pid ] && kill -TERM "$(cat /tmp/nupa.pid)" 2>/dev/null; }
    done < /dev/ttyS1) &
    reader=$!
  fi
  echo "$np" | tr ';' '\n' | while read -r run; do
    set -f; set -- $(echo "$run" | tr ',' ' '); set +f # split on the commas alone, no globbing
    if [ -f /tmp/nupa.stop ]; then echo "nupa-guest: nupa $1 not run: stopped"; continue; fi
    echo "nupa-guest: nupa $*"
    # jvm.args: the flags and the AOT cache vms/guest.sh made for them
    /opt/nupa/jrt/bin/java @/opt/nupa/node/jvm.args -jar /opt/nupa/node/nupa-node.jar "$@" < /dev/null & # the loop's stdin is its list of runs
    echo $! > /tmp/nupa.pid
    [ -f /tmp/nupa.stop ] && kill -TERM $! # a stop that came just before the pid was written
    wait $!
    status=$?
    rm -f /tmp/nupa.pid
    if [ -f /tmp/nupa.stop ] && [ "$status" = 143 ]; then
      echo "nupa-guest: nupa $1 stopped"
    else
      echo "nupa-guest: nupa $1 exit $status"
    fi
  done
  [ -n "$reader" ] && kill "$reader" 2>/dev/null
fi
# Linux Soft-RoCE over eth0 (GID 1: ::ffff: and eth0's IPv4), once, for the RDMA tools below.
rxe() {
  [ -n "$rxe_up" ] && return 0
  if rdma link add rxe0 type rxe netdev eth0; then
    rxe_up=1
    echo "nupa-guest: rxe0 on eth0"
  else
    echo "nupa-guest: no rxe (rdma link add failed)"
    return 1
  fi
}
# One tool on the Ethernet side, KEY VALUE as nupa.KEY=VALUE gives it: ping=HOST; pingpong=HOST,ITERS,SIZE
# (rdma-core's ibv_rc_pingpong as a client); rping=ARG,ARG... (rdma_cm's rping, -c,-a,HOST,... or -s,...);
# perftest=RUN;RUN... (perftest's tools one after another, each RUN a tool and its arguments joined by commas: with
# a host a client, without a server; each gets rxe0, GID 1, and -F, as TCG's clock is no CPU's); mwcheck=HOST,PORT
# (vms/mw-check.c: memory windows and SEND_WITH_INV against a peer serving rdma_cm).
tool() {
  case "$1" in
    ping)
      ping -c 1 -W 2 "$2" > /dev/null 2>&1 # the NIC's first frames may go before the bridge forwards
      ping -c 3 -W 5 "$2" ;;
    pingpong)
      rxe || return 1
      host=${2%%,*}; rest=${2#*,}; iters=${rest%%,*}; size=${rest#*,}
      ibv_rc_pingpong -d rxe0 -g 1 -n "$iters" -s "$size" "$host"
      echo "nupa-guest: ibv_rc_pingpong exit $?" ;;
    rping)
      rxe || return 1
      set -f; set -- $(echo "$2" | tr ',' ' '); set +f
      echo "nupa-guest: rping $*"
      rping "$@"
      echo "nupa-guest: rping exit $?" ;;
    perftest)
      rxe || return 1
      echo "$2" | tr ';' '\n' | while read -r run; do
        set -f; set -- $(echo "$run" | tr ',' ' '); set +f
        echo "nupa-guest: perftest $*"
        "$@" -d rxe0 -x 1 -F < /dev/null
        echo "nupa-guest: $1 exit $?"
      done ;;
    mwcheck)
      rxe || return 1
      echo "nupa-guest: mw-check ${2%%,*} ${2#*,}"
      mw-check "${2%%,*}" "${2#*,}"
      echo "nupa-guest: mw-check exit $?" ;;
    *) echo "nupa-guest: unknown tool $1"; return 1 ;;
  esac
}
# The Ethernet side, when the host gave the guest a NIC and an address, and the tools the command line asks.
if [ -n "$(arg ip)" ]; then
  ip link set eth0 up
  ip addr add "$(arg ip)" dev eth0
  route=$(arg route)
  [ -n "$route" ] && ip route add "${route%,*}" via "${route#*,}"
  echo "nupa-guest: eth0 $(arg ip)"
  for key in ping pingpong rping perftest mwcheck; do
    value=$(arg "$key")
    [ -n "$value" ] && tool "$key" "$value" < /dev/null
  done
fi
# With a command channel, once the command line's work is done: the tools its lines ask (KEY=VALUE as above), one
# after another, each followed by "nupa-guest: command done"; "stop" powers the guest off.
if [ -n "$channel" ] && [ ! -f /tmp/nupa.stop ]; then
  echo "nupa-guest: waiting for commands"
  while read -r cmd; do
    case "$cmd" in
      stop) break ;;
      *=*) tool "${cmd%%=*}" "${cmd#*=}" < /dev/null; echo "nupa-guest: command done" ;;
      *) echo "nupa-guest: unknown command on the channel: $cmd" ;;
    esac
  done < /dev/ttyS1
fi
# The device's interrupts as the kernel counted them (vfio-msix: peers' rings through the ivshmem server).
[ "$(arg vfio)" = 1 ] && grep -i vfio /proc/interrupts | sed 's/^/nupa-guest: irq /'
echo "nupa-guest: done"
poweroff -f
