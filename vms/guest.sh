#!/usr/bin/env bash
# Guests for NUPA's VM tests, from Debian's packages: a kernel (unpacked from its .deb, not installed), a
# busybox initramfs with fabric-peek, and QEMU under software emulation (no KVM needed).
#
#   vms/guest.sh build DIR            kernel and initramfs into DIR (kept: a second build reuses the kernel)
#   vms/guest.sh run DIR FABRIC       boots one guest whose ivshmem-plain device is backed by the fabric file
#                                     FABRIC, prints the guest's console, and returns when the guest powers off
#
# Needs qemu-system-x86, busybox-static, cpio, gcc and apt-get download (Debian bookworm).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "vms/guest.sh: $*" >&2; exit 1; }

build() {
  local dir=$1
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ ! -f "$dir/vmlinuz" ]; then
    local pkg
    pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    [ -n "$pkg" ] || die "no linux-image package found (apt-get update?)"
    rm -rf "$dir/deb" && mkdir -p "$dir/deb"
    (cd "$dir/deb" && apt-get download -q "$pkg" >/dev/null) || die "apt-get download $pkg failed"
    dpkg -x "$dir"/deb/*.deb "$dir/deb/x"
    cp "$dir"/deb/x/boot/vmlinuz-* "$dir/vmlinuz"
    rm -rf "$dir/deb"
  fi
  local root="$dir/initramfs"
  rm -rf "$root" && mkdir -p "$root/bin"
  cp "$(command -v busybox)" "$root/bin/busybox"
  file "$root/bin/busybox" 2>/dev/null | grep -q "statically linked" || [ ! -x /usr/bin/file ] \
    || die "busybox is not statically linked: apt-get install busybox-static"
  gcc -O2 -static -o "$root/bin/fabric-peek" "$here/fabric-peek.c"
  cp "$here/init.sh" "$root/init" && chmod +x "$root/init"
  (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1 > "$dir/initramfs.cpio.gz")
  rm -rf "$root"
}

run() {
  local dir=$1 fabric=$2
  [ -f "$dir/vmlinuz" ] && [ -f "$dir/initramfs.cpio.gz" ] || die "no guest in $dir: vms/guest.sh build $dir first"
  [ -f "$fabric" ] || die "no fabric file $fabric"
  # A PCI BAR is a power of two: grow the (sparse) file to the next one, which the fabric's nodes accept.
  local size
  size=$(stat -c %s "$fabric")
  size=$(python3 -c "import sys; n = int(sys.argv[1]); print(n if n & (n - 1) == 0 else 1 << n.bit_length())" "$size")
  truncate -s "$size" "$fabric"
  timeout "${GUEST_TIMEOUT:-120}" qemu-system-x86_64 -accel tcg -cpu max -m 256 -smp 1 -nographic -no-reboot -nic none \
    -kernel "$dir/vmlinuz" -initrd "$dir/initramfs.cpio.gz" -append "console=ttyS0 panic=-1 quiet loglevel=3" \
    -object "memory-backend-file,id=fabric,mem-path=$fabric,size=$size,share=on" \
    -device ivshmem-plain,memdev=fabric
}

case "${1:-}" in
  build) [ $# -eq 2 ] || die "usage: vms/guest.sh build DIR"; build "$2" ;;
  run) [ $# -eq 3 ] || die "usage: vms/guest.sh run DIR FABRIC"; run "$2" "$3" ;;
  *) die "usage: vms/guest.sh build DIR | run DIR FABRIC" ;;
esac
