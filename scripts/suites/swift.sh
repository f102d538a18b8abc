#!/usr/bin/env bash
# Swift bindings (UniFFI) tested with XCTest on a real Swift toolchain. Debian 12 has no Swift;
# Debian 13's `swiftlang` (Swift 6) runs in a debootstrap chroot outside the repo, which this
# script sets up when it is missing (about 3.4 GB, 2-3 minutes) and reuses afterwards: the mounts are checked on every run.
#
# The package (ffi/uniffi/swift) gets the generated Proteus.swift and ProteusFFI.h, links the
# native library built by ffi/uniffi/scripts/build.sh, and `swift test` runs inside the chroot,
# which sees the repo at the same path through a bind mount. `swift.sh --prepare` only sets the
# chroot up.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
root=${PROTEUS_SWIFT_ROOT:-/var/lib/proteus-swift-trixie}
mirror=${PROTEUS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
swift_pkg=ffi/uniffi/swift

unmount_all() {
  # Everything mounted below the chroot, deepest first.
  findmnt -rn -o TARGET | grep -F "$root/" | sort -r | while read -r m; do umount -l "$m"; done
}

mount_all() {
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  mkdir -p "$root$repo"
  mountpoint -q "$root$repo" || mount --bind "$repo" "$root$repo"
}

ensure_chroot() {
  if [ -f "$root/.proteus-ready" ]; then
    return
  fi
  echo "== setting up the Swift toolchain: Debian 13 (trixie) chroot in $root"
  local start=$SECONDS
  if [ -e "$root" ]; then
    # An earlier setup did not finish: start over (never following a mount into the repo).
    unmount_all
    rm -rf --one-file-system "$root"
  fi
  # shellcheck source=../lib/install.sh
  . scripts/lib/install.sh
  apt_install debootstrap
  debootstrap --variant=minbase trixie "$root" "$mirror" >/dev/null
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount_all
  chroot "$root" apt-get update -qq
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    swiftlang libc6-dev libgcc-14-dev libstdc++-14-dev >/dev/null
  touch "$root/.proteus-ready"
  echo "== Swift toolchain ready in $((SECONDS - start)) s"
}

ensure_chroot
# --prepare: only set the toolchain up (the test command does it in the background).
[ "${1:-}" != --prepare ] || exit 0
mount_all
# The repo's mount is this run's; /proc stays for the next one.
trap 'umount -l "$root$repo" 2>/dev/null || true' EXIT
chroot "$root" swift --version 2>&1 | sed -n 1p

bash ffi/uniffi/scripts/build.sh

echo "== the committed generated sources are current"
# The package is consumed from git, so Proteus.swift and ProteusFFI.h are committed; a change to
# the Rust API must come with them regenerated (copy them from target/uniffi/swift/).
stale=0
for f in Proteus/Proteus.swift ProteusFFI/ProteusFFI.h; do
  if ! cmp -s "target/uniffi/swift/$(basename "$f")" "$swift_pkg/Sources/$f"; then
    echo "stale: $swift_pkg/Sources/$f differs from target/uniffi/swift/$(basename "$f")"
    stale=1
  fi
done
[ "$stale" = 0 ] || { echo "regenerate: cp target/uniffi/swift/{Proteus.swift,ProteusFFI.h} into the package"; exit 1; }
if grep -n unsafeFlags "$swift_pkg/Package.swift"; then
  echo "Package.swift uses unsafeFlags: no other package could depend on it"
  exit 1
fi

echo "== swift test (XCTest)"
# The build directories stay inside the chroot, out of the repo, one set per checkout (named by a
# hash of its path): two checkouts testing at once on one machine share the chroot, and a shared
# directory let one run delete the consumer package while the other compiled it (swiftc crashed).
# The module map links the library by name: LIBRARY_PATH finds it at link time, LD_LIBRARY_PATH
# at run time.
tag=$(printf %s "$repo" | sha256sum | cut -c1-12)
work=/var/tmp/proteus-swift-$tag
libs="$repo/target/release"
chroot "$root" env HOME=/root LIBRARY_PATH="$libs" LD_LIBRARY_PATH="$libs" \
  bash -c "cd '$repo/$swift_pkg' && swift test --scratch-path $work/build 2>&1"

echo "== a consumer package outside the repository, depending on the Proteus package"
rm -rf "$root$work/consumer"
mkdir -p "$root$work"
cp -r "$swift_pkg/consumer" "$root$work/consumer"
chroot "$root" env HOME=/root LIBRARY_PATH="$libs" LD_LIBRARY_PATH="$libs" PROTEUS_SWIFT_PACKAGE="$repo/$swift_pkg" \
  bash -c "cd $work/consumer && swift run --scratch-path $work/consumer-build Consumer 2>&1"
