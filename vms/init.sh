#!/bin/busybox sh
# The guest's /init: mounts the kernel's file systems, finds the ivshmem device (vendor 1af4, device 1110),
# enables it and reads the fabric through its BAR2 with fabric-peek, runs what the kernel's command line asks
# (nupa.KEY=VALUE: nupa, uio, vfio, control, ip, route, ping, pingpong, rping, perftest; vms/guest.sh lists them), then
# powers off.
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
# The command channel (guest.sh run --control SOCKET): lines from the host on the second serial port. "stop" ends
# the nupa run going on with SIGTERM (a node prints its counters and leaves the fabric) and skips those still to come.
if [ "$(arg control)" = 1 ] && [ -e /dev/ttyS1 ]; then
  stty -F /dev/ttyS1 raw -echo 2>/dev/null
  (while read -r cmd; do
    case "$cmd" in
      stop) touch /tmp/nupa.stop; [ -f /tmp/nupa.pid ] && kill -TERM "$(cat /tmp/nupa.pid)" 2>/dev/null ;;
      *) echo "nupa-guest: unknown command on the channel: $cmd" ;;
    esac
  done < /dev/ttyS1) &
  echo "nupa-guest: command channel on ttyS1"
fi
# The nupa command on Java (run --java), one run after another: nupa=RUN;RUN..., each RUN its arguments joined by
# commas, IVSHMEM standing for the device's PCI address and UIO for its /dev/uioN (uio=1): ping,--device,pci:IVSHMEM,...
# is a fabric node in the guest, on the BAR the host's file backs.
np=$(arg nupa | sed "s/IVSHMEM/$bdf/g; s|UIO|/dev/$uio|g")
if [ -n "$np" ]; then
  echo "$np" | tr ';' '\n' | while read -r run; do
    set -f; set -- $(echo "$run" | tr ',' ' '); set +f # split on the commas alone, no globbing
    if [ -f /tmp/nupa.stop ]; then echo "nupa-guest: nupa $1 not run: stopped"; continue; fi
    echo "nupa-guest: nupa $*"
    /opt/nupa/jrt/bin/java --enable-native-access=ALL-UNNAMED -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
      -Xmx256m -jar /opt/nupa/node/nupa-node.jar "$@" < /dev/null & # the loop's stdin is its list of runs
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
fi
# The Ethernet side, when the host gave the guest a NIC and an address.
if [ -n "$(arg ip)" ]; then
  ip link set eth0 up
  ip addr add "$(arg ip)" dev eth0
  route=$(arg route)
  [ -n "$route" ] && ip route add "${route%,*}" via "${route#*,}"
  echo "nupa-guest: eth0 $(arg ip)"
  if [ -n "$(arg ping)" ]; then
    # The NIC's first frames may go before the bridge forwards: a first try may be lost.
    ping -c 1 -W 2 "$(arg ping)" > /dev/null 2>&1
    ping -c 3 -W 5 "$(arg ping)"
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
  # rdma-core's ibv_rc_pingpong as a client.
  pp=$(arg pingpong)
  if [ -n "$pp" ] && rxe; then
    host=${pp%%,*}; rest=${pp#*,}; iters=${rest%%,*}; size=${rest#*,}
    ibv_rc_pingpong -d rxe0 -g 1 -n "$iters" -s "$size" "$host"
    echo "nupa-guest: ibv_rc_pingpong exit $?"
  fi
  # rdma_cm's rping with its arguments joined by commas (rping=-c,-a,HOST,-C,10,-v,-V, or -s for a server).
  rp=$(arg rping)
  if [ -n "$rp" ] && rxe; then
    set -f; set -- $(echo "$rp" | tr ',' ' '); set +f
    echo "nupa-guest: rping $*"
    rping "$@"
    echo "nupa-guest: rping exit $?"
  fi
  # perftest's tools, one run after another: perftest=RUN;RUN..., each RUN a tool and its arguments joined by
  # commas (with a host: a client; without: a server). Each gets rxe0, GID 1, and -F (TCG's clock is no CPU's).
  runs=$(arg perftest)
  if [ -n "$runs" ] && rxe; then
    echo "$runs" | tr ';' '\n' | while read -r run; do
      set -f; set -- $(echo "$run" | tr ',' ' '); set +f
      echo "nupa-guest: perftest $*"
      "$@" -d rxe0 -x 1 -F < /dev/null
      echo "nupa-guest: $1 exit $?"
    done
  fi
fi
# The device's interrupts as the kernel counted them (vfio-msix: peers' rings through the ivshmem server).
[ "$(arg vfio)" = 1 ] && grep -i vfio /proc/interrupts | sed 's/^/nupa-guest: irq /'
echo "nupa-guest: done"
poweroff -f
