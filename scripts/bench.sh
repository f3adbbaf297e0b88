#!/usr/bin/env bash
# make bench: every benchmark, on the release binary given as $1.
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench.sh path/to/release/coffer}")"
cd "$(dirname "$0")"
echo "coffer bench on $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ); medians of whole-process runs"
python3 bench-foundation.py "$COFFER"
for b in bench-*.sh; do
  [ -e "$b" ] || continue
  # Peers need their own packages: `make bench-peers` runs that one.
  [ "$b" = bench-peers.sh ] && continue
  bash "$b" "$COFFER"
done
