#!/usr/bin/env bash
# The chat in two real terminals (tmux, driven with send-keys and read with capture-pane):
# alice and bob type to each other and each sees the other's lines. No relay runs beforehand:
# the first client runs one in its own process; when alice leaves with Ctrl-C, bob's client
# takes the relay over, keeps what bob types for alice, and alice gets it when she is back.
# The chat's Rust tests (relay + clients on 127.0.0.1, the 1000-message backlog, forged and
# replayed requests) run with every other Rust test in the rust suite. Installs tmux when it is
# missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=../lib/install.sh
. scripts/lib/install.sh
apt_install tmux

echo "== cargo build -p proteus-chat"
cargo build --locked -p proteus-chat
TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
BIN="$TARGET_DIR/debug/proteus-chat"

WORK=$(mktemp -d)
OUT="$TARGET_DIR/chat-transcript"
mkdir -p "$OUT"
TMUX_SOCKET="$WORK/tmux.sock"
t() { tmux -S "$TMUX_SOCKET" "$@"; }
cleanup() { t kill-server 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

# A free port on 127.0.0.1 for the relay the first client will start.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
  || echo $((20000 + RANDOM % 20000)))
RELAY="127.0.0.1:$PORT"
chat() { echo "$BIN $1 $2 --relay $RELAY --data $WORK/data"; }

passed=0
failed=0
check() { # description, command...
  local what=$1; shift
  if "$@"; then
    passed=$((passed + 1)); echo "ok   $what"
  else
    failed=$((failed + 1)); echo "FAIL $what"
  fi
}
screen() { t capture-pane -p -J -S - -t "$1"; }
# Waits until the terminal of $1 shows a line containing $2.
shows() {
  local deadline=$((SECONDS + ${3:-30}))
  until screen "$1" | grep -qF -- "$2"; do
    if [ $SECONDS -ge $deadline ]; then
      echo "---- $1's terminal:"; screen "$1"; echo "----"
      return 1
    fi
    sleep 0.2
  done
}
type_line() { t send-keys -t "$1" -l -- "$2"; t send-keys -t "$1" Enter; }

t -f /dev/null new-session -d -s alice -x 120 -y 40 "$(chat alice bob)"
t set-option -g remain-on-exit on
check "alice's client starts the relay in its own process" shows alice "this process runs it now"
check "alice's chat is ready" shows alice "alice ↔ bob, end-to-end encrypted"
t new-session -d -s bob -x 120 -y 40 "$(chat bob alice)"
check "bob's chat is ready" shows bob "bob ↔ alice, end-to-end encrypted"

type_line alice "hello bob, this is alice"
check "bob sees alice's line" shows bob "alice: hello bob, this is alice"
type_line bob "hi alice! bob here"
check "alice sees bob's line" shows alice "bob: hi alice! bob here"
type_line alice "how are the keys?"
check "bob sees alice's second line" shows bob "alice: how are the keys?"
type_line bob "ratcheting nicely"
check "alice sees bob's second line" shows alice "bob: ratcheting nicely"

type_line alice "/fingerprint"
type_line bob "/fingerprint"
check "alice sees the fingerprints" shows alice "* you (alice):"
check "bob sees the fingerprints" shows bob "* you (bob):"
fp() { screen "$1" | grep -F -- "$2" | tail -1 | sed 's/.*:  //'; }
same_fp() { [ -n "$(fp alice '* you (alice):')" ] && [ "$(fp alice '* you (alice):')" = "$(fp bob '* alice:  ')" ] \
  && [ "$(fp bob '* you (bob):')" = "$(fp alice '* bob:  ')" ]; }
check "each shows the other's fingerprint as the other shows its own" same_fp

# Alice leaves with Ctrl-C; her relay goes with her and bob's client takes it over.
t send-keys -t alice C-c
check "Ctrl-C closes alice's client cleanly" shows alice "* bye"
check "bob's client takes the relay over" shows bob "this process runs it now"
type_line bob "are you there? (sent while you were away)"
type_line bob "/status"
check "bob's line is queued at the relay" shows bob "* outbox: 0 waiting"

# Alice comes back in the same terminal: her queue is decrypted with the batch API.
screen alice > "$OUT/alice-before-restart.txt"
t respawn-pane -k -t alice "$(chat alice bob)"
t clear-history -t alice
check "alice gets the message sent while she was away" shows alice "bob: are you there? (sent while you were away)"
check "alice's backlog is timed" shows alice "queued message from 1 sender decrypted in"
type_line alice "back again"
check "bob sees alice's line after her restart" shows bob "alice: back again"

type_line alice "/quit"
type_line bob "/quit"
check "alice quits" shows alice "* bye"
check "bob quits" shows bob "* bye"

screen alice > "$OUT/alice.txt"
screen bob > "$OUT/bob.txt"
echo
echo "---- alice's terminal, first run ($OUT/alice-before-restart.txt)"
grep -v '^$' "$OUT/alice-before-restart.txt" || true
echo "---- alice's terminal, after her restart ($OUT/alice.txt)"; grep -v '^$' "$OUT/alice.txt" || true
echo "---- bob's terminal ($OUT/bob.txt)"; grep -v '^$' "$OUT/bob.txt" || true
echo
echo "tmux: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
