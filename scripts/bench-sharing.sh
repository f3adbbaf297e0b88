#!/usr/bin/env bash
# Shared vaults (issue 29; docs/sharing.md, docs/benchmarks.md):
#
#   scripts/bench-sharing.sh path/to/release/coffer
#
# 1. Sealing. Three vaults with the same 500 items: one without members;
#    one whose owner is its only member (identity kept in the vault), so its
#    bundles seal the master key to one X25519 key and are signed (bundle
#    format 6); one shared by 50 members, its owner one of them. `coffer
#    export` of each with a shell session (no Argon2id), medians of $RUNS
#    runs in turn. Sealing's cost is the third less the second; signing's
#    (a publication counter written, BLAKE2b-512 of the file, one Ed25519
#    signature) the second less the first.
#      target: sealing to 50 members adds <= 5 ms to an export
#    `coffer get` and `coffer add` in the first and the third, in turn.
#      target: get and add unchanged by sharing
# 2. Verifying. The same $LARGE items (default 100,000) exported unsigned
#    (before the vault had members) and signed (its one member), each
#    cloned into an empty vault, $ROUNDS rounds in turn (cheap KDF, same for
#    both: only the bundle's checks differ).
#      target: verifying signatures adds <= 10 % to a 100,000-item import
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench-sharing.sh path/to/release/coffer}")"
BENCH="$(dirname "$COFFER")/coffer-bench"
RUNS="${RUNS:-30}"
MEMBERS="${MEMBERS:-50}"
LARGE="${LARGE:-100000}"
ROUNDS="${ROUNDS:-3}"
W="$(mktemp -d /tmp/coffer-bench-sharing.XXXXXX)"
trap 'rm -rf "$W"' EXIT
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION COFFER_IDENTITY_FILE
export COFFER_PASSPHRASE="bench passphrase"
KDF=(--kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1)

echo "sharing: export sealed to $MEMBERS members, clone of $LARGE signed items; machine $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -x "$BENCH" ] || { echo "  coffer-bench not built next to coffer; skipped"; exit 0; }

# A vault shared by `count` members, the first of them its owner.
share() { # $1 vault, $2 count
  "$COFFER" members add --vault "$1" owner "$("$COFFER" identity new --vault "$1" --name owner 2>/dev/null)" >/dev/null 2>&1
  for i in $(seq 2 "$2"); do
    id=$("$COFFER" identity new --name "m$i" --out "$W/$(basename "$1")-m$i.identity" 2>/dev/null)
    "$COFFER" members add --vault "$1" "m$i" "$id" >/dev/null 2>&1
  done
}

"$COFFER" init --vault "$W/plain.coffer" "${KDF[@]}" >/dev/null 2>&1
"$BENCH" fill --vault "$W/plain.coffer" 500 >/dev/null 2>&1
"$COFFER" export --vault "$W/plain.coffer" --out "$W/plain.cb" >/dev/null 2>&1
"$COFFER" clone --vault "$W/one.coffer" "$W/plain.cb" >/dev/null 2>&1
share "$W/one.coffer" 1
"$COFFER" clone --vault "$W/shared.coffer" "$W/plain.cb" >/dev/null 2>&1
share "$W/shared.coffer" "$MEMBERS"
eval "$("$COFFER" unlock --vault "$W/plain.coffer" 2>/dev/null)"; PLAIN_SESSION="$COFFER_SESSION"
eval "$("$COFFER" unlock --vault "$W/one.coffer" 2>/dev/null)"; ONE_SESSION="$COFFER_SESSION"
eval "$("$COFFER" unlock --vault "$W/shared.coffer" 2>/dev/null)"; SHARED_SESSION="$COFFER_SESSION"
unset COFFER_SESSION

# One replica writes the items, exports them, becomes the vault's only
# member and exports again: the same versions, unsigned then signed (a
# member's bundle carries its own replica's writes; docs/sharing.md,
# "Forwarded versions").
"$COFFER" init --vault "$W/large.coffer" "${KDF[@]}" >/dev/null 2>&1
"$BENCH" fill --vault "$W/large.coffer" "$LARGE" >/dev/null 2>&1
"$COFFER" export --vault "$W/large.coffer" --out "$W/large-unsigned.cb" >/dev/null 2>&1
share "$W/large.coffer" 1
"$COFFER" export --vault "$W/large.coffer" --out "$W/large-signed.cb" >/dev/null 2>&1

PYTHONPATH="$(dirname "$0")" python3 - "$COFFER" "$W" "$RUNS" "$PLAIN_SESSION" "$ONE_SESSION" "$SHARED_SESSION" "$MEMBERS" "$LARGE" "$ROUNDS" <<'PY'
import os, statistics, sys
import benchlib
coffer, w, runs, plain, one, shared = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
members, large, rounds = int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
base = dict(os.environ)

def run(argv, env):
    """Wall and CPU seconds of one run; a failure ends the benchmark."""
    wall, cpu, code = benchlib.spawn_timed(argv, env)
    if code != 0:
        sys.exit(f"bench-sharing: {' '.join(argv[1:3])}: exit {code}")
    return wall, cpu

def format_of(path):
    with open(path, "rb") as f:
        return int.from_bytes(f.read(10)[8:10], "big")

interleaved = benchlib.interleaved

# 1. Sealing to members.
out = {name: f"{w}/out-{name}.cb" for name in ("plain", "one", "shared")}
rows = interleaved([
    ("export, no members", [coffer, "export", "--vault", f"{w}/plain.coffer", "--out", out["plain"]], dict(base, COFFER_SESSION=plain)),
    ("export, 1 member, signed", [coffer, "export", "--vault", f"{w}/one.coffer", "--out", out["one"]], dict(base, COFFER_SESSION=one)),
    (f"export, {members} members, signed", [coffer, "export", "--vault", f"{w}/shared.coffer", "--out", out["shared"]], dict(base, COFFER_SESSION=shared)),
], runs, 2)
assert format_of(out["one"]) == 6 and format_of(out["shared"]) == 6, "the members' bundles are not format 6"
(l0, (w0, c0)), (l1, (w1, c1)), (l2, (w2, c2)) = rows.items()
for label, (wall, cpu) in rows.items():
    print(f"  {label:40} wall {wall:7.2f} ms   CPU {cpu:7.2f} ms")
print(f"  signing adds {w1 - w0:.2f} ms wall, {c1 - c0:.2f} ms CPU to an export")
print(f"  sealing to {members} members instead of 1 adds {w2 - w1:.2f} ms wall, {c2 - c1:.2f} ms CPU "
      f"(target <= 5 ms): {'met' if w2 - w1 <= 5 else 'MISSED'}")

# get and add in a vault without members and in the shared one.
counter = iter(range(10**9))
def add(vault, session):
    return [coffer, "add", "--vault", f"{w}/{vault}.coffer", f"new/{vault}-{next(counter)}", "--type", "note", "--field", "notes=x"]
rows = {}
for label, argv_of in [("get", lambda v: [coffer, "get", "--vault", f"{w}/{v}.coffer", "bench/item-250"])]:
    rows.update(interleaved([(f"{label}, no members", argv_of("plain"), dict(base, COFFER_SESSION=plain)),
                             (f"{label}, {members} members", argv_of("shared"), dict(base, COFFER_SESSION=shared))], runs, 2))
# add: a new name each run (interleaved() runs a fixed argv, so run by hand).
wall = {"add, no members": [], f"add, {members} members": []}
for r in range(runs + 2):
    for label, vault, session in [("add, no members", "plain", plain), (f"add, {members} members", "shared", shared)]:
        t, _ = run(add(vault, session), dict(base, COFFER_SESSION=session))
        if r >= 2: wall[label].append(t)
for label, times in wall.items():
    rows[label] = (statistics.median(times) * 1000, float("nan"))
for label, (wall_ms, cpu_ms) in rows.items():
    print(f"  {label:40} wall {wall_ms:7.2f} ms" + (f"   CPU {cpu_ms:7.2f} ms" if cpu_ms == cpu_ms else ""))
g0, g1 = rows["get, no members"][0], rows[f"get, {members} members"][0]
a0, a1 = rows["add, no members"][0], rows[f"add, {members} members"][0]
print(f"  sharing changes get by {100 * (g1 / g0 - 1):+.1f} % and add by {100 * (a1 / a0 - 1):+.1f} % (target: unchanged)")

# 2. Verifying a signed import.
assert format_of(f"{w}/large-signed.cb") == 6 and format_of(f"{w}/large-unsigned.cb") < 6
def fresh(label):
    for suffix in ("", "-wal", "-shm"):
        try: os.remove(f"{w}/target.coffer{suffix}")
        except FileNotFoundError: pass
rows = interleaved([
    (f"clone of {large} items, unsigned", [coffer, "clone", "--vault", f"{w}/target.coffer", f"{w}/large-unsigned.cb"], base),
    (f"clone of {large} items, signed", [coffer, "clone", "--vault", f"{w}/target.coffer", f"{w}/large-signed.cb"], base),
], rounds, 1, fresh)
import subprocess
listed = subprocess.run([coffer, "ls", "--vault", f"{w}/target.coffer"], env=base, capture_output=True).stdout.count(b"\n")
assert listed >= large, f"the clone of the signed bundle holds {listed} items, not {large}"
(l0, (w0, c0)), (l1, (w1, c1)) = rows.items()
print(f"  {l0:40} wall {w0:7.0f} ms   CPU {c0:7.0f} ms")
print(f"  {l1:40} wall {w1:7.0f} ms   CPU {c1:7.0f} ms")
print(f"  verifying signatures adds {100 * (w1 / w0 - 1):+.1f} % wall, {100 * (c1 / c0 - 1):+.1f} % CPU to the import "
      f"(target <= 10 %): {'met' if w1 / w0 <= 1.10 else 'MISSED'}")
PY
