#!/bin/busybox sh
# The guest's /init: mounts the kernel's file systems, finds the ivshmem device (vendor 1af4, device 1110),
# enables it and reads the fabric through its BAR2 with fabric-peek, then powers off.
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
echo "nupa-guest: up, kernel $(uname -r)"
found=0
for d in /sys/bus/pci/devices/*; do
  if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then
    found=1
    echo 1 > "$d/enable"
    echo "nupa-guest: ivshmem at $(basename "$d")"
    /bin/fabric-peek "$d/resource2"
  fi
done
[ "$found" = 1 ] || echo "nupa-guest: no ivshmem device"
echo "nupa-guest: done"
poweroff -f
