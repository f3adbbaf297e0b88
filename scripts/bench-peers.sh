#!/usr/bin/env bash
# make bench-peers: the everyday verbs of coffer timed against pass, gopass
# and keepassxc-cli (Debian's packages, installed by `make deps-peers`), on
# the same generated items, in the same run, whole-process medians with
# hyperfine. Ratios are against coffer's own numbers in this run.
#   scripts/bench-peers.sh path/to/release/coffer
# BENCH_PEER_ITEMS (default 1000) items per store; BENCH_RUNS runs per verb.
#
# Every store holds the same items bench/item-N (a password and a username).
# pass and gopass share one store format (a .gpg file per entry, one gpg key
# with no passphrase, so gpg-agent never prompts); keepassxc-cli reads a
# .kdbx made by importing a KeePass XML file (it has no session: every call
# unlocks the database, with the smallest KDF keepassxc-cli creates, 100 ms);
# coffer uses a session (`eval "$(coffer unlock)"`).
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench-peers.sh path/to/release/coffer}")"
N="${BENCH_PEER_ITEMS:-1000}"
RUNS="${BENCH_RUNS:-30}"
for tool in pass gopass keepassxc-cli gpg hyperfine; do
  command -v "$tool" >/dev/null 2>&1 || { echo "bench-peers: $tool is not installed; run make deps-peers" >&2; exit 1; }
done

DIR="$(mktemp -d /tmp/coffer-bench-peers.XXXXXX)"
cleanup() { gpgconf --kill gpg-agent >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
export HOME="$DIR/home" XDG_DATA_HOME="$DIR/home/.local/share" XDG_CONFIG_HOME="$DIR/home/.config" XDG_RUNTIME_DIR="$DIR/run"
export GNUPGHOME="$DIR/gnupg" PASSWORD_STORE_DIR="$DIR/home/.password-store"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$GNUPGHOME"; chmod 700 "$XDG_RUNTIME_DIR" "$GNUPGHOME"
unset COFFER_VAULT COFFER_PASSPHRASE COFFER_SESSION
printf 'bench passphrase\n' > "$DIR/pass"; chmod 600 "$DIR/pass"

echo "bench-peers: $N items, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "versions: $(pass version | grep -o 'v[0-9.]*' | head -1) pass, $(gopass version 2>/dev/null | head -1), keepassxc-cli $(keepassxc-cli --version 2>/dev/null), $("$COFFER" --version) coffer"

# --- one gpg key, no passphrase ------------------------------------------------
gpg --batch --quiet --passphrase '' --quick-gen-key "bench <bench@example.invalid>" default default never 2>/dev/null
KEY="$(gpg --list-keys --with-colons 2>/dev/null | awk -F: '/^fpr/ {print $10; exit}')"

# --- pass: the store, filled by one gpg call per entry ----------------------------
pass init "$KEY" >/dev/null
start=$(date +%s.%N)
for i in $(seq 1 "$N"); do
  mkdir -p "$PASSWORD_STORE_DIR/bench"
  printf 'pw-%s-%s\nusername: user%s\n' "$i" "$RANDOM$RANDOM" "$i" |
    gpg --batch --quiet --yes --encrypt --recipient "$KEY" --output "$PASSWORD_STORE_DIR/bench/item-$i.gpg"
done
echo "pass store filled in $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s"

# --- gopass: Debian's gopass reads the same store through $PASSWORD_STORE_DIR -----

# --- keepassxc-cli: a database imported from KeePass XML ---------------------------
python3 - "$N" "$DIR/kp.xml" <<'PY'
import sys, random, html
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write('<?xml version="1.0" encoding="UTF-8"?>\n<KeePassFile><Meta><Generator>bench</Generator></Meta><Root><Group><Name>Root</Name><Group><Name>bench</Name>\n')
    for i in range(1, n + 1):
        f.write(f'<Entry><String><Key>Title</Key><Value>item-{i}</Value></String>'
                f'<String><Key>UserName</Key><Value>user{i}</Value></String>'
                f'<String><Key>Password</Key><Value ProtectInMemory="True">pw-{i}-{random.getrandbits(32)}</Value></String></Entry>\n')
    f.write('</Group></Group></Root></KeePassFile>\n')
PY
printf 'bench passphrase\nbench passphrase\n' | keepassxc-cli import -p -t 100 "$DIR/kp.xml" "$DIR/kp.kdbx" >/dev/null 2>&1
KPX() { echo "printf 'bench passphrase\\n' | keepassxc-cli $* 2>/dev/null"; }

# --- coffer: the same items under a session ---------------------------------------
"$COFFER" init --passphrase-file "$DIR/pass" 2>/dev/null
eval "$("$COFFER" unlock --passphrase-file "$DIR/pass" --timeout 2h 2>/dev/null)"
export COFFER_SESSION
# coffer-bench numbers items from 0, the others from 1: bench/item-$MID exists in all.
"$(dirname "$COFFER")/coffer-bench" fill --passphrase-file "$DIR/pass" --prefix bench/item- "$N" 2>/dev/null
MID=$(( N / 2 ))

hf() {  # label, then commands (shell strings); prints median and ratio to the first
  local label="$1"; shift
  hyperfine --style none --warmup 3 --runs "$RUNS" --export-json "$DIR/hf.json" "$@" >/dev/null 2>"$DIR/hf.err" || {
    echo "  $label: skipped: $(grep -m1 -i 'error\|failed\|non-zero' "$DIR/hf.err")"; return; }
  python3 - "$DIR/hf.json" "$label" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
base = res[0]["median"]
names = ["coffer", "pass", "gopass", "keepassxc-cli"]
cells = []
for name, r in zip(names, res):
    cells.append(f"{name} {r['median']*1000:7.1f} ms ({r['median']/base:4.1f}x)")
print(f"  {sys.argv[2]:22s} " + " | ".join(cells))
PY
}

echo "medians over $RUNS runs (ratio to coffer):"
hf "show one entry" \
  "$COFFER get bench/item-$MID" \
  "pass show bench/item-$MID" \
  "gopass show bench/item-$MID" \
  "$(KPX show -s -a Password "$DIR/kp.kdbx" bench/item-$MID)"
hf "list all entries" \
  "$COFFER ls" \
  "pass ls" \
  "gopass ls" \
  "$(KPX ls -R -f "$DIR/kp.kdbx")"
if "$COFFER" find --help 2>&1 | grep -q "USAGE: coffer find"; then COFFER_FIND="$COFFER find item-4"; else COFFER_FIND="$COFFER ls"; echo "  (this coffer has no find: its row times ls)"; fi
hf "find 'item-4'" \
  "$COFFER_FIND" \
  "pass find item-4" \
  "gopass find item-4" \
  "$(KPX search "$DIR/kp.kdbx" item-4)"
# Inserting: each run adds a new entry (a counter file keeps names unique).
echo 0 > "$DIR/ctr"
next='n=$(($(cat '"$DIR"'/ctr)+1)); echo $n > '"$DIR"'/ctr'
hf "insert one entry" \
  "sh -c '$next; printf \"sk-new\\n\" | $COFFER add new/c\$n --type api-key >/dev/null 2>&1'" \
  "sh -c '$next; printf \"pw\\n\" | pass insert -e new/p\$n >/dev/null'" \
  "sh -c '$next; printf \"pw\\n\" | gopass insert -f new/g\$n >/dev/null'" \
  "sh -c '$next; printf \"bench passphrase\\npw\\n\" | keepassxc-cli add -p $DIR/kp.kdbx new-k\$n >/dev/null 2>&1'"
