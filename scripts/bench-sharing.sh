#!/usr/bin/env bash
# Shared vaults (issue 29; docs/sharing.md, docs/benchmarks.md):
#
#   scripts/bench-sharing.sh path/to/release/coffer
#
# Two vaults with the same 500 items, one of them with 50 members: every
# bundle of the second seals its master key to 50 X25519 keys
# (crypto_box_seal, bundle format 5). Measures, same run, with a shell
# session (no Argon2id):
#   coffer export of each vault (whole process, median)   target: sealing to 50 members adds <= 5 ms
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench-sharing.sh path/to/release/coffer}")"
BENCH="$(dirname "$COFFER")/coffer-bench"
RUNS="${RUNS:-30}"
MEMBERS="${MEMBERS:-50}"
W="$(mktemp -d /tmp/coffer-bench-sharing.XXXXXX)"
trap 'rm -rf "$W"' EXIT
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION
export COFFER_PASSPHRASE="bench passphrase"

echo "sharing: export sealed to $MEMBERS members; machine $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$COFFER" init --vault "$W/plain.coffer" --kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1 >/dev/null 2>&1
"$BENCH" fill --vault "$W/plain.coffer" 500 >/dev/null 2>&1
"$COFFER" export --vault "$W/plain.coffer" --out "$W/plain.cb" >/dev/null 2>&1
"$COFFER" clone --vault "$W/shared.coffer" "$W/plain.cb" >/dev/null 2>&1
for i in $(seq "$MEMBERS"); do
  id=$("$COFFER" identity new --name "m$i" --out "$W/m$i.identity" 2>/dev/null)
  "$COFFER" members add --vault "$W/shared.coffer" "m$i" "$id" >/dev/null 2>&1
done
eval "$("$COFFER" unlock --vault "$W/plain.coffer")"; PLAIN_SESSION="$COFFER_SESSION"
eval "$("$COFFER" unlock --vault "$W/shared.coffer")"; SHARED_SESSION="$COFFER_SESSION"
unset COFFER_PASSPHRASE COFFER_SESSION

PYTHONPATH="$(dirname "$0")" python3 - "$COFFER" "$W" "$RUNS" "$PLAIN_SESSION" "$SHARED_SESSION" "$MEMBERS" <<'PY'
import os, sys
import benchlib
coffer, w, runs, plain, shared, members = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
base = dict(os.environ)
rows = [
    benchlib.measure("export, no members (format 4)", [coffer, "export", "--vault", f"{w}/plain.coffer", "--out", f"{w}/out-plain.cb"],
                     dict(base, COFFER_SESSION=plain), runs=runs),
    benchlib.measure(f"export, sealed to {members} members (format 5)", [coffer, "export", "--vault", f"{w}/shared.coffer", "--out", f"{w}/out-shared.cb"],
                     dict(base, COFFER_SESSION=shared), runs=runs),
]
benchlib.report(rows, rows[0]["label"])
added = rows[1]["median_ms"] - rows[0]["median_ms"]
with open(f"{w}/out-shared.cb", "rb") as f:
    assert f.read(10)[8:10] == b"\x00\x05", "the shared vault's bundle is not format 5"
print(f"sealing to {members} members adds {added:.2f} ms to an export (target <= 5 ms): {'ok' if added <= 5 else 'MISSED'}")
PY
