#!/usr/bin/env bash
# Daily-verb benchmarks (issue 17), whole-process medians with a session.
#   scripts/bench-verbs.sh path/to/release/coffer
# A vault of $BENCH_ITEMS generated items (default 10000, through
# coffer-bench fill) plus a login with username, url and totp; then:
#   1. coffer find TERM and coffer ls (and ls PREFIX/, ls --tree)  (target <= 25 ms at 10,000)
#   2. coffer otp / show / clip NAME against coffer get NAME       (target: within 2 ms of get)
# clip runs against a private Xvfb with xclip when both are installed.
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench-verbs.sh path/to/release/coffer}")"
BENCH="$(dirname "$COFFER")/coffer-bench"
ITEMS="${BENCH_ITEMS:-10000}"
RUNS="${BENCH_RUNS:-30}"
DIR="$(mktemp -d /tmp/coffer-bench-verbs.XXXXXX)"
XPID=""
# Each timed `clip` leaves a clearer sleeping for 45 s; end this run's
# (they would clear a display that no longer exists).
cleanup() { [ -n "$XPID" ] && kill -9 "$XPID" 2>/dev/null; pkill -f "^$COFFER clip-clear" 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
export HOME="$DIR/home" XDG_DATA_HOME="$DIR/home/.local/share" XDG_CONFIG_HOME="$DIR/home/.config" XDG_RUNTIME_DIR="$DIR/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_PASSPHRASE COFFER_SESSION
printf 'bench passphrase\n' > "$DIR/pass"; chmod 600 "$DIR/pass"

echo "coffer verbs: $ITEMS items, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$COFFER" init --passphrase-file "$DIR/pass" 2>/dev/null
[ -x "$BENCH" ] || { echo "  coffer-bench not built next to coffer; skipped"; exit 0; }
"$BENCH" fill "$ITEMS" --passphrase-file "$DIR/pass" >/dev/null 2>&1
eval "$("$COFFER" unlock --passphrase-file "$DIR/pass" --timeout 2h 2>/dev/null)"
export COFFER_SESSION
printf 'hunter2\n' | "$COFFER" add personal/github --type login --field username=octo --url https://github.com 2>/dev/null
printf 'otpauth://totp/GitHub:octo?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\n' | "$COFFER" edit personal/github --totp 2>/dev/null

hf() { hyperfine -N --style basic --warmup 3 --runs "$RUNS" --export-json "$DIR/hf.json" "$@" >/dev/null 2>&1
       python3 - "$DIR/hf.json" "$COFFER" "$DIR" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    cmd = r["command"].replace(sys.argv[2], "coffer").replace(sys.argv[3], "$TMP")
    print(f"  {cmd[:58]:58s} median {r['median']*1000:8.2f} ms  min {r['min']*1000:8.2f} ms")
PY
}
command -v hyperfine >/dev/null 2>&1 || { echo "  hyperfine not installed; skipped"; exit 0; }

echo "listing and search at $ITEMS items (with a session; the session's listing cache is fresh):"
hf "$COFFER ls" "$COFFER ls bench/" "$COFFER ls --tree" "$COFFER find github" "$COFFER find item-5000" "$COFFER find zzz-no-match"
# The first listing after a write reads every item record and rewrites
# the cache (docs/key-hierarchy.md, "Listing cache"): removing the cache
# before each run measures that.
echo "the first listing after a write (cache removed before each run):"
SESSION_ID="$(printf '%s' "$COFFER_SESSION" | cut -d. -f2)"
hf --prepare "rm -f $XDG_RUNTIME_DIR/coffer/$SESSION_ID.listing" "$COFFER ls" "$COFFER find github"
echo "one item (with a session):"
hf "$COFFER get personal/github" "$COFFER get personal/github --field username" "$COFFER show personal/github" "$COFFER otp personal/github"
if command -v Xvfb >/dev/null 2>&1 && command -v xclip >/dev/null 2>&1; then
  Xvfb :"$((200 + RANDOM % 500))" -nolisten tcp >/dev/null 2>&1 & XPID=$!
  sleep 1
  DISPLAY="$(tr '\0' '\n' < /proc/$XPID/cmdline | sed -n 2p)"; export DISPLAY
  # clip = get + the clipboard tool: xclip alone (reading the same value
  # from a file) in the same run shows which part is coffer's.
  printf 'hunter2' > "$DIR/value"
  hf "$COFFER get personal/github" "$COFFER clip personal/github --clear-after 0" "$COFFER clip personal/github" "xclip -selection clipboard -in $DIR/value"
else
  echo "  clip: Xvfb or xclip not installed; skipped"
fi
