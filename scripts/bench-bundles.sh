#!/usr/bin/env bash
# Bundle benchmarks (issue 4): export, import into an empty vault, clone,
# peak RSS, full and delta sizes, at 10,000 and 100,000 items.
#
#   scripts/bench-bundles.sh path/to/release/coffer [sizes...]
#
# Vaults are built with the `coffer-bench fill` (one transaction);
# everything measured is a real command. Argon2id uses 19 MiB / 2 passes /
# 1 lane (OWASP's floor) so that the unlock does not dominate; the default
# 256 MiB KDF adds its own memory and ~0.5 s to every command that unlocks.
set -euo pipefail
COFFER="${1:?usage: bench-bundles.sh path/to/coffer [sizes...]}"
BENCH="$(dirname "$COFFER")/coffer-bench"
shift
SIZES=("${@:-10000 100000}")
read -r -a SIZES <<<"${SIZES[*]}"
RUNS="${RUNS:-3}"
W="$(mktemp -d /tmp/coffer-bench-bundles.XXXXXX)"
trap 'rm -rf "$W"' EXIT
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION
export COFFER_PASSPHRASE="bench passphrase"
KDF=(--kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1)

median() { # hyperfine json -> median seconds
  python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$1"
}
rss() { # command... -> peak RSS in MB (one run)
  /usr/bin/time -f '%M' -o "$W/time" "$@" >/dev/null 2>&1
  echo "$(( $(tail -1 "$W/time") / 1024 ))"
}
hf() { # name prepare command
  hyperfine -N --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null 2>&1 \
    || hyperfine --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null
  median "$W/$1.json"
}

printf '%-8s %-10s %-8s %-10s %-8s %-10s %-8s %-10s %-12s %-10s\n' \
  items export_s exp_MB import_s imp_MB clone_s cln_MB full_MB delta10_B delta_imp_s
for N in "${SIZES[@]}"; do
  D="$W/n$N"; mkdir -p "$D"
  A="$D/a.coffer"
  "$COFFER" init --vault "$A" "${KDF[@]}" >/dev/null 2>&1
  "$COFFER" export --vault "$A" --out "$D/empty.cb" 2>/dev/null
  "$COFFER" clone "$D/empty.cb" --vault "$D/empty.coffer" >/dev/null 2>&1
  "$BENCH" fill --vault "$A" "$N" 2>/dev/null

  t_export=$(hf "export$N" "rm -f $D/full.cb" "$COFFER export --vault $A --out $D/full.cb")
  m_export=$(rss "$COFFER" export --vault "$A" --out "$D/full.cb")
  full_bytes=$(stat -c %s "$D/full.cb")

  t_import=$(hf "import$N" "cp $D/empty.coffer $D/b.coffer" "$COFFER import --vault $D/b.coffer $D/full.cb")
  cp "$D/empty.coffer" "$D/b.coffer"
  m_import=$(rss "$COFFER" import --vault "$D/b.coffer" "$D/full.cb")

  t_clone=$(hf "clone$N" "rm -f $D/c.coffer" "$COFFER clone --vault $D/c.coffer $D/full.cb")
  rm -f "$D/c.coffer"
  m_clone=$(rss "$COFFER" clone --vault "$D/c.coffer" "$D/full.cb")

  # Delta: the receiver (b, which imported the full bundle) writes its
  # summary; 10 items change on a; a exports only those.
  "$COFFER" summary --vault "$D/b.coffer" --out "$D/b.sum" 2>/dev/null
  for i in 0 1 2 3 4 5 6 7 8 9; do
    "$COFFER" edit --vault "$A" "bench/item-$i" --field "key=sk-changed-$i" >/dev/null 2>&1
  done
  "$COFFER" export --vault "$A" --since "$D/b.sum" --out "$D/delta.cb" 2>/dev/null
  delta_bytes=$(stat -c %s "$D/delta.cb")
  t_delta=$(hf "delta$N" "cp $D/b.coffer $D/b2.coffer" "$COFFER import --vault $D/b2.coffer $D/delta.cb")

  printf '%-8s %-10s %-8s %-10s %-8s %-10s %-8s %-10s %-12s %-10s\n' \
    "$N" "$t_export" "$m_export" "$t_import" "$m_import" "$t_clone" "$m_clone" \
    "$(python3 -c "print('%.1f' % ($full_bytes/1e6))")" "$delta_bytes" "$t_delta"
  rm -rf "$D"
done
