#!/usr/bin/env bash
# fetch.sh - install what the real-kernel tests need, from Debian's own packages, and unpack the
# two guest kernels into a cache (nothing is installed on the host but qemu and busybox).
#   KCACHE: cache directory (default: <repo>/target/kernel-cache)
# Prints nothing on success but a line per kernel: "<flavour> <dir> <version>".
# `fetch.sh promtool` instead prints the path of a `promtool` (Prometheus' checker of metrics
# scrapes): the host's, else the one from Debian's `prometheus` package, unpacked into the cache
# alone (installing the package would also install and start a Prometheus server).
# Kernels:
#   612: linux-image-cloud-amd64 from bookworm-backports (6.12: DAMON sysfs, NUMA balancing)
#   61:  linux-image-cloud-amd64 from bookworm (6.1: memory tiers and demotion; no DAMON)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
KCACHE=${KCACHE:-$REPO/target/kernel-cache}
log() { printf '[fetch %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
mkdir -p "$KCACHE"
APTOPT=(); [ "$(id -u)" = 0 ] && APTOPT=(-o APT::Sandbox::User=root)

if [ "${1:-}" = promtool ]; then
  if command -v promtool >/dev/null 2>&1; then command -v promtool; exit 0; fi
  pt="$KCACHE/promtool/usr/bin/promtool"
  if [ ! -x "$pt" ]; then
    log "downloading Debian's prometheus package for its promtool"
    rm -rf "$KCACHE/dl-promtool" "$KCACHE/promtool"; mkdir -p "$KCACHE/dl-promtool" "$KCACHE/promtool"
    (cd "$KCACHE/dl-promtool" && { apt-get download -qq "${APTOPT[@]}" prometheus 2>/dev/null ||
      { $SUDO apt-get update -qq && apt-get download -qq "${APTOPT[@]}" prometheus; }; }) || die "cannot download the prometheus package"
    dpkg-deb --fsys-tarfile "$KCACHE"/dl-promtool/prometheus_*.deb | tar -x -C "$KCACHE/promtool" ./usr/bin/promtool
    rm -rf "$KCACHE/dl-promtool"
  fi
  "$pt" --version >/dev/null 2>&1 || die "$pt does not run"
  echo "$pt"
  exit 0
fi

# 1. host packages: the emulator, a static busybox for the guest, a C compiler for the static
#    test programs, and the decompressors for the kernel modules.
PKGS="qemu-system-x86 busybox-static gcc libc6-dev make xz-utils zstd cpio"
missing=$(for p in $PKGS; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"; done)
if [ -n "$missing" ]; then
  log "installing:" $missing
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# 2. bookworm-backports from the host's own Debian mirror (the 6.12 kernel lives there)
have_bpo() { grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; }
if ! have_bpo; then
  URI=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$URI" ] || URI=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$URI" ] || die "cannot find the Debian mirror URI to add bookworm-backports"
  log "adding bookworm-backports from $URI"
  printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$URI" |
    $SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
  $SUDO apt-get update -qq
fi

# 3. resolve the versioned image package behind linux-image-cloud-amd64 in each suite
resolve() {  # $1 = bpo|stable
  local ver
  if [ "$1" = bpo ]; then
    ver=$(apt-cache madison linux-image-cloud-amd64 | awk -F'|' '/backports/{gsub(/ /,"",$2); print $2; exit}')
  else
    ver=$(apt-cache madison linux-image-cloud-amd64 | awk -F'|' '!/backports/{gsub(/ /,"",$2); print $2; exit}')
  fi
  [ -n "$ver" ] || return 0
  apt-cache show "linux-image-cloud-amd64=$ver" | awk -F'[ ,]+' '/^Depends:/{for(i=2;i<=NF;i++) if ($i ~ /^linux-image-[0-9]/){print $i; exit}}'
}
unpack() {  # $1 = name (612|61), $2 = suite
  local dir="$KCACHE/$1"
  if [ -f "$dir/.ok" ]; then echo "$1 $dir $(cat "$dir/.ok")"; return; fi
  local pkg; pkg=$(resolve "$2")
  if [ -z "$pkg" ]; then $SUDO apt-get update -qq; pkg=$(resolve "$2"); fi
  [ -n "$pkg" ] || die "cannot resolve linux-image-cloud-amd64 in $2"
  log "downloading $pkg"
  rm -rf "$dir" "$KCACHE/dl-$1"; mkdir -p "$dir" "$KCACHE/dl-$1"
  (cd "$KCACHE/dl-$1" && apt-get download -qq "${APTOPT[@]}" "$pkg")
  local deb; deb=$(ls "$KCACHE/dl-$1"/*.deb)
  # the image, its config and the two dax modules that hot-add the slow node (not all 400 MB)
  dpkg-deb --fsys-tarfile "$deb" |
    tar -x -C "$dir" --wildcards './boot/vmlinuz-*' './boot/config-*' './lib/modules/*/kernel/drivers/dax/*'
  dpkg-deb -f "$deb" Version > "$dir/.ok.tmp"
  rm -rf "$KCACHE/dl-$1"
  mv "$dir/.ok.tmp" "$dir/.ok"
  echo "$1 $dir $(cat "$dir/.ok")"
}
for k in ${KERNELS:-612 61}; do
  case $k in
    612) unpack 612 bpo ;;
    61) unpack 61 stable ;;
    *) die "unknown kernel $k (612 or 61)" ;;
  esac
done
