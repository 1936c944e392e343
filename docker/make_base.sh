#!/usr/bin/env bash
# Make a local Debian bookworm base image (for machines that cannot pull from a registry):
#   debootstrap --variant=minbase bookworm <dir> <mirror>; tar | docker import - local/debian:bookworm
# Usage: docker/make_base.sh [image]      (default local/debian:bookworm)
# Mirror: $PAPERLAB_DEBIAN_MIRROR, else the one apt uses on this machine, else http://deb.debian.org/debian.
set -euo pipefail
IMAGE="${1:-local/debian:bookworm}"
DOCKER="${DOCKER:-docker}"
die() { echo "make_base: $*" >&2; exit 1; }

if $DOCKER image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "make_base: $IMAGE already exists"; exit 0
fi
[ "$(id -u)" = 0 ] || die "debootstrap needs root (run as root, or make the base elsewhere and docker load it)"
command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"

mirror="${PAPERLAB_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  # deb822 sources (URIs: ...) or one-line sources (deb URL bookworm main); the first Debian archive wins.
  mirror=$( (grep -h -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}';
             grep -h -E '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}') \
           | grep -E '/debian/?$' | head -1 || true)
fi
mirror="${mirror:-http://deb.debian.org/debian}"
security="${PAPERLAB_DEBIAN_SECURITY_MIRROR:-}"
if [ -z "$security" ]; then
  security=$( (grep -h -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}';
               grep -h -E '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}') \
             | grep -E '/debian-security/?$' | head -1 || true)
fi

dir=$(mktemp -d /tmp/paperlab-base.XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo "make_base: debootstrap --variant=minbase bookworm $dir $mirror"
start=$(date +%s)
debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.log" 2>&1 \
  || { tail -20 "$dir.log" >&2; die "debootstrap failed (log above; set PAPERLAB_DEBIAN_MIRROR to a reachable mirror)"; }
rm -f "$dir.log"
# Updates and (when apt here has one) the security archive, as in Debian's own images; no apt caches.
{ echo "deb ${mirror%/} bookworm main"; echo "deb ${mirror%/} bookworm-updates main"
  [ -z "$security" ] || echo "deb ${security%/} bookworm-security main"; } > "$dir/etc/apt/sources.list"
rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
tar -C "$dir" -c . | $DOCKER import -c 'CMD ["bash"]' - "$IMAGE" >/dev/null
echo "make_base: $IMAGE made in $(( $(date +%s) - start )) s"
