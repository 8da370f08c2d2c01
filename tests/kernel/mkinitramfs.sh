#!/usr/bin/env bash
# mkinitramfs.sh OUT.cpio.gz KERNEL_DIR BIN_DIR [SHIM_DIR]
# Builds the test guest's initramfs: a static busybox, guest/init and guest/tests.sh, every file
# of BIN_DIR in /bin (static binaries), the dax_hmem and kmem modules of the kernel unpacked in
# KERNEL_DIR (decompressed: busybox insmod takes plain .ko), and, if given, the shim directory with
# the shared libraries its dynamically linked test programs need (found with ldd).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$1 KDIR=$2 BINS=$3 SHIM=${4:-}
BUSYBOX=/bin/busybox
file -L "$BUSYBOX" 2>/dev/null | grep -q dynamically && { echo "mkinitramfs: $BUSYBOX is not static (install busybox-static)" >&2; exit 1; }
ROOT=$(mktemp -d); trap 'rm -rf "$ROOT"' EXIT
mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,lib/modules}
cp "$BUSYBOX" "$ROOT/bin/busybox"
cp "$HERE/guest/init" "$ROOT/init"; chmod +x "$ROOT/init"
cp "$HERE/guest/tests.sh" "$ROOT/tests.sh"
for f in "$BINS"/*; do
  file -L "$f" | grep -qE 'statically linked|static-pie' || { echo "mkinitramfs: $f is not static" >&2; exit 1; }
  cp "$f" "$ROOT/bin/"
done
MODDIR=$(ls -d "$KDIR"/lib/modules/*/kernel/drivers/dax)
for m in hmem/dax_hmem kmem; do
  f=$(ls "$MODDIR/$m.ko"* | head -1); b=$(basename "$m")
  case $f in
    *.xz) xz -dc "$f" > "$ROOT/lib/modules/$b.ko" ;;
    *.zst) zstd -qdc "$f" > "$ROOT/lib/modules/$b.ko" ;;
    *.gz) gzip -dc "$f" > "$ROOT/lib/modules/$b.ko" ;;
    *) cp "$f" "$ROOT/lib/modules/$b.ko" ;;
  esac
done
if [ -n "$SHIM" ]; then
  mkdir -p "$ROOT/shim/lib"
  cp "$SHIM"/libtierkit_shim.so "$SHIM"/shim_test "$SHIM"/tkshim-dump "$ROOT/shim/"
  # the dynamic loader at its absolute path, the libraries in /shim/lib
  for f in "$SHIM"/libtierkit_shim.so "$SHIM"/shim_test "$SHIM"/tkshim-dump; do
    ldd "$f" | awk '/=>/ {print $3} /^\t\/.*ld-linux/ {print $1}' | while read -r lib; do
      [ -f "$lib" ] || continue
      case $lib in */ld-linux*) mkdir -p "$ROOT$(dirname "$lib")"; cp -L "$lib" "$ROOT$lib" ;; *) cp -L "$lib" "$ROOT/shim/lib/" ;; esac
    done
  done
  mkdir -p "$ROOT/lib64"; [ -e "$ROOT/lib64/ld-linux-x86-64.so.2" ] || cp -L /lib64/ld-linux-x86-64.so.2 "$ROOT/lib64/"
fi
(cd "$ROOT" && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null | gzip -1 > "$OUT")
