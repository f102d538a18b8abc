#!/usr/bin/env bash
# Runs an aarch64 Linux program on this x86_64 machine under qemu-user (Debian's qemu-user):
#
#   scripts/aarch64-run.sh PROGRAM [ARGS...]
#
# The program and every aarch64 program it starts (a test that runs itself again in a child
# process, Node's child processes) run under qemu-aarch64: in a user and mount namespace of its
# own, this script mounts a private binfmt_misc (Linux 6.7 and later give each user namespace
# its own) and registers qemu-aarch64 there, so the machine's binfmt_misc is never touched and
# nothing is left registered when the program ends. Used as cargo's runner for the target
# (CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER, scripts/lib/aarch64.sh) and to run Debian's
# arm64 Node.
#
# QEMU_LD_PREFIX: the aarch64 root the programs' dynamic loader and libraries come from
# (default: Debian's cross libc, /usr/aarch64-linux-gnu).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 PROGRAM [ARGS...]" >&2; exit 2; }
export QEMU_LD_PREFIX=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}
qemu=$(command -v qemu-aarch64) || { echo "qemu-aarch64 is missing (Debian: qemu-user)" >&2; exit 1; }

if [ "${PROTEUS_AARCH64_NS:-}" != 1 ]; then
  # unshare maps the caller to root inside; files it writes keep the caller's owner outside.
  PROTEUS_AARCH64_NS=1 exec unshare --user --map-root-user --mount -- "$0" "$@"
fi
mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
# An ELF64, little-endian, executable or shared object (the mask lets ET_EXEC and ET_DYN through),
# for EM_AARCH64 (183): Debian's qemu-user-binfmt entry for aarch64.
magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
printf '%s' ":qemu-aarch64:M::$magic:$mask:$qemu:" >/proc/sys/fs/binfmt_misc/register
unset PROTEUS_AARCH64_NS
exec "$@"
