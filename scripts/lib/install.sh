# Sourced by scripts/test.sh, scripts/suites/*.sh and the build scripts: how the test command
# installs what it needs, and how a suite waits for an install that test.sh started in the
# background. Every install is skipped when what it installs is already there.

# cargo_install_tool CRATE VERSION [BIN] [cargo install options...]
# Installs a Rust tool from crates.io when BIN (default: CRATE) is missing or is not VERSION.
# Built without link-time optimisation, with 16 codegen units and opt-level 1, whatever the
# tool's own release profile says: a test tool runs for seconds here, and its fat-LTO single-unit
# release build (cargo-deny's, wasm-bindgen-cli's) took 4-5 minutes of a fresh machine's two cores.
cargo_install_tool() {
  local crate=$1 version=$2 bin=${3:-$1}
  shift 3 || shift $#
  if command -v "$bin" >/dev/null && "$bin" --version 2>/dev/null | grep -qwF -- "$version"; then
    return 0
  fi
  echo "installing $crate $version (a quick release build: opt-level 1, no LTO)"
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=false \
    cargo install "$crate" --version "$version" "$@"
}

# apt_install [--no-install-recommends] PACKAGE...: the Debian packages that are not installed
# yet, after one update.
apt_install() {
  local missing=() p flags=()
  if [ "${1:-}" = --no-install-recommends ]; then flags+=("$1"); shift; fi
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Another apt (the machine's own updates, say) is waited for rather than failed on.
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${flags[@]}" "${missing[@]}" >/dev/null
}

# npm_ci DIR: `npm ci` in DIR when its node_modules is missing or older than its lockfile.
npm_ci() {
  if [ ! -f "$1/node_modules/.package-lock.json" ] || [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]; then
    (cd "$1" && npm ci --no-audit --no-fund)
  fi
}

# Background installs. test.sh starts an install with `background NAME command...` and runs a
# suite only after `await_background NAME` for each install the suite needs; the install's log
# goes to $PROTEUS_BACKGROUND/NAME.log. A suite run alone (no $PROTEUS_BACKGROUND) waits for
# nothing and installs what it needs itself, as it does anyway when a background install failed.
background() {
  local name=$1
  shift
  : >"$PROTEUS_BACKGROUND/$name.log"
  (
    start=$SECONDS
    set +e
    ( set -e; "$@" ) >"$PROTEUS_BACKGROUND/$name.log" 2>&1
    status=$?
    echo "$status $((SECONDS - start))" >"$PROTEUS_BACKGROUND/$name.done"
  ) &
}

await_background() {
  local name=$1 start=$SECONDS status seconds
  [ -n "${PROTEUS_BACKGROUND:-}" ] && [ -f "$PROTEUS_BACKGROUND/$name.log" ] || return 0
  while [ ! -f "$PROTEUS_BACKGROUND/$name.done" ]; do sleep 1; done
  read -r status seconds <"$PROTEUS_BACKGROUND/$name.done"
  if [ "$status" = 0 ]; then
    echo "(install $name: done in ${seconds} s in the background; waited $((SECONDS - start)) s for it)"
  else
    echo "(install $name failed in the background after ${seconds} s; the suite installs what it needs itself. Its log:)"
    tail -20 "$PROTEUS_BACKGROUND/$name.log"
  fi
}
