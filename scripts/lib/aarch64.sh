# Sourced by scripts/suites/arm64.sh, scripts/test.sh and ffi/uniffi/scripts/build.sh: building
# for linux-arm64 (aarch64-unknown-linux-gnu) on an x86_64 Debian machine with Debian's cross
# toolchain, and running what was built under qemu-user (scripts/aarch64-run.sh). Each install is
# skipped when what it installs is there. Needs scripts/lib/install.sh sourced first.

AARCH64_TARGET=aarch64-unknown-linux-gnu
# Runs an aarch64 program under qemu (an absolute path: the callers change directories).
AARCH64_RUN=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/aarch64-run.sh
# Debian's arm64 Node (bookworm: 18.20), unpacked with its libraries into a root of its own,
# outside the repository; run with QEMU_LD_PREFIX pointing at it.
AARCH64_NODE_ROOT=${PROTEUS_AARCH64_NODE_ROOT:-/var/lib/proteus-aarch64-node}

# The cross compiler and linker (with the arm64 libc to link against) and qemu-user. Without the
# packages apt recommends: qemu-user recommends qemu-user-binfmt, which would register qemu with
# the machine's binfmt_misc; scripts/aarch64-run.sh registers it in a namespace of its own.
aarch64_install_system() {
  apt_install --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
}

aarch64_install_target() {
  rustup target list --installed | grep -qx "$AARCH64_TARGET" || rustup target add "$AARCH64_TARGET"
}

# Debian bookworm's nodejs for arm64 and the packages it depends on, fetched with apt-get download
# through an apt configuration of its own (an arm64-only source list, lists and cache under the
# root): the machine's apt sources, architectures and dpkg database stay as they are. Each
# package is unpacked with dpkg -x into the root; nothing is installed.
aarch64_install_node() {
  local root=$AARCH64_NODE_ROOT
  [ -x "$root/usr/bin/node" ] && return 0
  echo "fetching Debian's arm64 nodejs into $root"
  local apt=$root.apt
  rm -rf "$root" "$apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/preferences.d" "$apt/debs"
  cat >"$apt/sources.list" <<EOF
deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
EOF
  : >"$apt/status"
  local opts=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
    -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts="$apt/preferences.d"
    -o Dir::State::Lists="$apt/lists" -o Dir::State::Status="$apt/status"
    -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" -qq update
  # nodejs and everything it depends on (an empty status file: nothing counts as installed).
  local packages
  packages=$(apt-cache "${opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances nodejs | grep -v -e '^ ' -e '^<' | sort -u)
  # shellcheck disable=SC2086
  (cd "$apt/debs" && apt-get "${opts[@]}" -qq download $packages)
  mkdir -p "$root.tmp"
  local deb
  for deb in "$apt"/debs/*.deb; do dpkg -x "$deb" "$root.tmp"; done
  mv "$root.tmp" "$root"
  rm -rf "$apt"
  QEMU_LD_PREFIX=$root "$AARCH64_RUN" "$root/usr/bin/node" --version
}

# The arm64 Node under qemu: aarch64_node ARGS... (child processes it starts run under qemu too).
aarch64_node() {
  QEMU_LD_PREFIX=$AARCH64_NODE_ROOT "$AARCH64_RUN" "$AARCH64_NODE_ROOT/usr/bin/node" "$@"
}

# Cargo's linker and runner for the target, and the C compiler of the crates that build C
# (bundled SQLite, ring). The rest of the environment is left alone.
aarch64_env() {
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=$AARCH64_RUN
  export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
  export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
}

# check_elf FILE MACHINE: FILE is an ELF of MACHINE (readelf's name: AArch64, or
# "Advanced Micro Devices X86-64") whose LOAD segments are all aligned to 16 KB or more (what
# Android 15+ requires of arm64 libraries; GNU ld's aarch64 default is 64 KB, x86-64's 4 KB, so
# only aarch64 files are held to it). Prints the alignments.
check_elf() {
  local file=$1 machine=$2 got aligns
  got=$(readelf -hW "$file" | awk -F': *' '/Machine:/ { print $2 }')
  [ "$got" = "$machine" ] || { echo "$file: machine $got, expected $machine" >&2; return 1; }
  aligns=$(readelf -lW "$file" | awk '$1 == "LOAD" { print $NF }')
  [ -n "$aligns" ] || { echo "$file: no LOAD segment" >&2; return 1; }
  echo "$file: $got, LOAD segments aligned to $(echo $aligns)"
  if [ "$machine" = AArch64 ]; then
    local a
    for a in $aligns; do
      [ $((a)) -ge 16384 ] || { echo "$file: a LOAD segment is aligned to $a, below 16 KB" >&2; return 1; }
    done
  fi
}
