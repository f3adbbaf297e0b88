#!/usr/bin/env bash
# Issue 28's targets, whole-process medians in one run (docs/benchmarks.md):
#   scripts/bench-newcomer.sh path/to/release/coffer
# At $BENCH_ITEMS items (default 10000) with a session:
#   get                      <= 2x a static Swift program that prints a line
#   ls, find                 <= 20 ms warm and right after an add or an edit
#   add                      <= 8 ms
#   no-op sync               <= 15 ms
#   stripped binary          <= 50 MB
# `pass show` of one entry (gpg, no passphrase) runs in the same run when pass
# and gpg are installed (`make deps-peers`).
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench-newcomer.sh path/to/release/coffer}")"
BENCH="$(dirname "$COFFER")/coffer-bench"
ITEMS="${BENCH_ITEMS:-10000}"
RUNS="${BENCH_RUNS:-30}"
DIR="$(mktemp -d /tmp/coffer-bench-newcomer.XXXXXX)"
cleanup() { command -v gpgconf >/dev/null 2>&1 && GNUPGHOME="$DIR/gnupg" gpgconf --kill gpg-agent >/dev/null 2>&1; rm -rf "$DIR"; }
trap cleanup EXIT
export HOME="$DIR/home" XDG_DATA_HOME="$DIR/home/.local/share" XDG_CONFIG_HOME="$DIR/home/.config" XDG_RUNTIME_DIR="$DIR/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_PASSPHRASE COFFER_SESSION
printf 'bench passphrase\n' > "$DIR/pass"; chmod 600 "$DIR/pass"

echo "newcomer targets (issue 28): $ITEMS items, load average $(cut -d' ' -f1-3 /proc/loadavg)"
command -v hyperfine >/dev/null 2>&1 || { echo "  hyperfine not installed; skipped"; exit 0; }
[ -x "$BENCH" ] || { echo "  coffer-bench not built next to coffer; skipped"; exit 0; }

strip -o "$DIR/coffer-stripped" "$COFFER"
echo "  binary: $(($(stat -c %s "$COFFER") / 1048576)) MB as built, $(($(stat -c %s "$DIR/coffer-stripped") / 1048576)) MB stripped (target <= 50)"

# The floor of any Swift program: print one line, runtime linked statically.
printf 'print("hello")\n' > "$DIR/hello.swift"
swiftc -O -static-stdlib "$DIR/hello.swift" -o "$DIR/hello" 2>/dev/null || { echo "  swiftc failed; skipped"; exit 0; }

"$COFFER" init --passphrase-file "$DIR/pass" 2>/dev/null
"$BENCH" fill "$ITEMS" --passphrase-file "$DIR/pass" >/dev/null 2>&1
eval "$("$COFFER" unlock --passphrase-file "$DIR/pass" --timeout 2h 2>/dev/null)"
export COFFER_SESSION
printf 'hunter2\n' | "$COFFER" add personal/github --type login --field username=octo 2>/dev/null
mkdir -p "$DIR/sync"
"$COFFER" sync "$DIR/sync" >/dev/null 2>&1

PASS_CMD=()
if command -v pass >/dev/null 2>&1 && command -v gpg >/dev/null 2>&1; then
  export GNUPGHOME="$DIR/gnupg" PASSWORD_STORE_DIR="$DIR/home/.password-store"
  mkdir -p "$GNUPGHOME"; chmod 700 "$GNUPGHOME"
  gpg --batch --quiet --passphrase '' --quick-gen-key "bench <bench@example.invalid>" default default never 2>/dev/null
  KEY="$(gpg --list-keys --with-colons 2>/dev/null | awk -F: '/^fpr/ {print $10; exit}')"
  pass init "$KEY" >/dev/null
  printf 'hunter2\n' | pass insert -e personal/github >/dev/null
  PASS_CMD=(pass show personal/github)
fi

# One hyperfine run under a title: each command's median, and its ratio to
# the static hello's (measured first, kept in $DIR/hello.ms).
hf() {
  local title="$1"; shift
  echo "  $title:"
  hyperfine -N --style basic --warmup 3 --runs "$RUNS" --export-json "$DIR/hf.json" "$@" >/dev/null 2>&1
  python3 - "$DIR/hf.json" "$COFFER" "$DIR" <<'PY'
import json, os, sys
hello_file = os.path.join(sys.argv[3], "hello.ms")
for r in json.load(open(sys.argv[1]))["results"]:
    ms = r["median"] * 1000
    cmd = r["command"].replace(sys.argv[2], "coffer").replace(sys.argv[3], "$TMP")
    if cmd == "$TMP/hello":
        open(hello_file, "w").write(str(ms))
    ratio = f"  {ms / float(open(hello_file).read()):.2f}x hello" if os.path.exists(hello_file) else ""
    print(f"    {cmd[:56]:56s} median {ms:8.2f} ms{ratio}")
PY
}
hf "start-up (target: get <= 2x hello)" "$DIR/hello" "$COFFER --version" "$COFFER get personal/github" ${PASS_CMD[@]+"${PASS_CMD[*]}"}
# The same, each command once per round in turn (every command sees the
# same load), with the CPU time each used: the figure to trust on a busy
# machine (docs/benchmarks.md).
echo "  start-up, interleaved ($RUNS rounds; ratios to hello):"
python3 "$(dirname "$0")/interleaved-runs.py" "$RUNS" "hello=$DIR/hello" "coffer --version=$COFFER --version" "coffer get NAME=$COFFER get personal/github"
hf "listing, warm (target <= 20 ms)" "$COFFER ls" "$COFFER find github"
# Right after a write: each run's --prepare writes through the session (the
# write appends its listing delta, docs/key-hierarchy.md).
hf "listing right after an edit (target <= 20 ms)" --prepare "$COFFER edit personal/github --field note=x" "$COFFER ls" "$COFFER find github"
hf "listing right after an add (target <= 20 ms)" --prepare "bash -c '$COFFER add bench/new-\$RANDOM\$RANDOM --type note --field notes=x'" "$COFFER ls"
hf "add (target <= 8 ms)" --prepare "bash -c '$COFFER rm bench/new 2>/dev/null; true'" "$COFFER add bench/new --type note --field notes=x"
hf "no-op sync (target <= 15 ms)" "$COFFER sync $DIR/sync"
