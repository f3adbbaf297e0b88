#!/usr/bin/env bash
# Incremental sync: snapshots and segments (issue 30).
#
#   scripts/bench-segments.sh path/to/release/coffer [items...]
#
# For each vault size (default 10,000 and 100,000 items): replica A synced
# into a folder (its snapshot), replica B cloned from it. Measured:
#  1. `coffer sync` on A right after one edit (an edit made with `coffer
#     edit` before each run): the median time, and the bytes that sync adds
#     to the folder (new files, median and mean over the runs; a run that
#     merges segments or compacts writes more). Targets: <= 30 ms and
#     <= 16 KB at 10,000 items, <= 60 ms at 100,000.
#  2. `coffer sync` with nothing new. Target <= 15 ms.
#  1b, 2b. Both again with a shell session (`coffer unlock`): no Argon2id
#     per command, and the session's integrity stamp (docs/key-hierarchy.md)
#     spares the whole-vault check after coffer's own writes.
#  3. (first size only) a git repository: A syncs with `sync --git` after
#     each of EDITS (default 100) edits; the growth of the bare remote's
#     objects per edit. Target <= 20 KB on average.
#  4. (first size only) `coffer clone DIR` from A's snapshot plus the
#     segments of 100 publications, against `coffer clone` of one full
#     bundle of the same state. Target <= 1.2x.
# Argon2id uses 19 MiB / 2 passes / 1 lane so that unlocking does not
# dominate (as in bench-sync.sh).
set -euo pipefail
COFFER="${1:?usage: bench-segments.sh path/to/coffer [items...]}"
shift
SIZES=("${@:-10000 100000}")
# shellcheck disable=SC2206
SIZES=(${SIZES[*]})
BENCH="$(dirname "$COFFER")/coffer-bench"
RUNS="${RUNS:-15}"
EDITS="${EDITS:-100}"
# EXTRAS=0 leaves out parts 3 and 4 (git growth, clone DIR).
W="$(mktemp -d /tmp/coffer-bench-seg.XXXXXX)"
trap 'rm -rf "$W"' EXIT
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION
export COFFER_PASSPHRASE="bench passphrase"
KDF=(--kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1)
ms() { python3 -c 'import json,sys; print("%.1f" % (1000*json.load(open(sys.argv[1]))["results"][0]["median"]))' "$1"; }
folder_bytes() { find "$1" -maxdepth 1 -name '*.coffer-bundle' -printf '%s\n' | awk '{s+=$1} END {print s+0}'; }
# Bytes of the files in $1 that are not listed in $2 (names before).
new_bytes() { find "$1" -maxdepth 1 -name '*.coffer-bundle' -printf '%f %s\n' | sort > "$W/after.lst"
  join -v1 "$W/after.lst" "$2" | awk '{s+=$2} END {print s+0}'; }

first=1
for N in "${SIZES[@]}"; do
  D="$W/n$N"; mkdir -p "$D/dir"
  A="$D/a.coffer"; B="$D/b.coffer"
  "$COFFER" init --vault "$A" "${KDF[@]}" >/dev/null 2>&1
  "$BENCH" fill --vault "$A" "$N" 2>/dev/null
  "$COFFER" sync --vault "$A" "$D/dir" 2>/dev/null
  snapshot_kb=$(( $(folder_bytes "$D/dir") / 1024 ))
  "$COFFER" clone --vault "$B" "$D/dir" >/dev/null 2>&1
  "$COFFER" sync --vault "$B" "$D/dir" 2>/dev/null
  "$COFFER" sync --vault "$A" "$D/dir" 2>/dev/null

  # 1. sync after one edit: timed with hyperfine (the edit is the prepare
  # step), then the same cycle again by hand to count the bytes.
  i=0
  hyperfine -N --runs "$RUNS" --warmup 1 \
    --prepare "$COFFER edit --vault $A bench/item-7 --field note=edit-\$RANDOM" \
    --export-json "$W/edit.json" "$COFFER sync --vault $A $D/dir" >/dev/null 2>&1 \
  || hyperfine --runs "$RUNS" --warmup 1 \
    --prepare "$COFFER edit --vault $A bench/item-7 --field note=edit-\$RANDOM" \
    --export-json "$W/edit.json" "$COFFER sync --vault $A $D/dir" >/dev/null
  t_edit=$(ms "$W/edit.json")
  sizes=()
  for i in $(seq 1 "$RUNS"); do
    "$COFFER" edit --vault "$A" "bench/item-$((i * 13 % N))" --field "note=bytes-$i" 2>/dev/null
    find "$D/dir" -maxdepth 1 -name '*.coffer-bundle' -printf '%f %s\n' | sort > "$W/before.lst"
    "$COFFER" sync --vault "$A" "$D/dir" 2>/dev/null
    sizes+=("$(new_bytes "$D/dir" "$W/before.lst")")
  done
  read -r b_median b_mean <<<"$(printf '%s\n' "${sizes[@]}" | python3 -c 'import sys,statistics as s; v=[int(x) for x in sys.stdin]; print(int(s.median(v)), int(s.mean(v)))')"

  # 2. nothing new.
  hyperfine -N --runs 30 --warmup 3 --export-json "$W/noop.json" "$COFFER sync --vault $A $D/dir" >/dev/null
  t_noop=$(ms "$W/noop.json")
  # 1b, 2b. The same with a shell session (no Argon2id per command; the
  # session's integrity stamp spares the whole-vault check after coffer's
  # own writes: docs/key-hierarchy.md, "Integrity stamp").
  token=$("$COFFER" unlock --vault "$A" --shell sh 2>/dev/null | sed -n "s/^export COFFER_SESSION='\(.*\)';$/\1/p")
  t_edit_s=-; t_noop_s=-
  if [ -n "$token" ]; then
    ( export COFFER_SESSION="$token"; unset COFFER_PASSPHRASE
      "$COFFER" sync --vault "$A" "$D/dir" 2>/dev/null
      hyperfine -N --runs "$RUNS" --warmup 1 \
        --prepare "$COFFER edit --vault $A bench/item-9 --field note=s-\$RANDOM" \
        --export-json "$W/edit-s.json" "$COFFER sync --vault $A $D/dir" >/dev/null 2>&1 \
      || hyperfine --runs "$RUNS" --warmup 1 \
        --prepare "$COFFER edit --vault $A bench/item-9 --field note=s-\$RANDOM" \
        --export-json "$W/edit-s.json" "$COFFER sync --vault $A $D/dir" >/dev/null
      hyperfine -N --runs 30 --warmup 3 --export-json "$W/noop-s.json" "$COFFER sync --vault $A $D/dir" >/dev/null )
    t_edit_s=$(ms "$W/edit-s.json"); t_noop_s=$(ms "$W/noop-s.json")
    "$COFFER" lock --vault "$A" >/dev/null 2>&1 || true
  fi
  files=$(find "$D/dir" -maxdepth 1 -name '*.coffer-bundle' | wc -l)
  folder_kb=$(( $(folder_bytes "$D/dir") / 1024 ))

  echo "items=$N snapshot_KB=$snapshot_kb folder_KB_now=$folder_kb files_now=$files"
  printf '%-44s %12s %12s\n' benchmark measured target
  printf '%-44s %12s %12s\n' "sync after one edit (ms, median)" "$t_edit" "$([ "$N" -le 10000 ] && echo 30 || echo 60)"
  printf '%-44s %12s %12s\n' "bytes written by it (median / mean)" "$b_median / $b_mean" "16384"
  printf '%-44s %12s %12s\n' "sync, nothing new (ms, median)" "$t_noop" "15"
  printf '%-44s %12s %12s\n' "with a session: sync after one edit (ms)" "$t_edit_s" "$([ "$N" -le 10000 ] && echo 30 || echo 60)"
  printf '%-44s %12s %12s\n' "with a session: sync, nothing new (ms)" "$t_noop_s" "15"

  if [ "$first" = 1 ] && [ "${EXTRAS:-1}" = 1 ]; then
    first=0
    # 3. git: a bare remote, A's work tree; EDITS edits, each synced.
    G="$D/git"; mkdir -p "$G"
    git init -q --bare "$G/remote.git"
    git clone -q "$G/remote.git" "$G/a" 2>/dev/null
    git -C "$G/a" config user.email bench@localhost; git -C "$G/a" config user.name bench
    "$COFFER" sync --vault "$A" "$G/a" --git >/dev/null 2>&1
    before=$(du -sb "$G/remote.git/objects" | cut -f1)
    for i in $(seq 1 "$EDITS"); do
      "$COFFER" edit --vault "$A" "bench/item-$((i * 31 % N))" --field "note=git-$i" 2>/dev/null
      "$COFFER" sync --vault "$A" "$G/a" --git >/dev/null 2>&1
    done
    after=$(du -sb "$G/remote.git/objects" | cut -f1)
    commits=$(git -C "$G/remote.git" rev-list --count HEAD)
    per_edit_kb=$(python3 -c "print('%.1f' % (($after - $before) / $EDITS / 1024))")
    printf '%-44s %12s %12s\n' "git remote growth per edit (KB, $EDITS edits)" "$per_edit_kb" "20"

    # 4. clone DIR from a snapshot and 100 publications' segments, against
    # a clone of one full bundle of the same state.
    C="$D/clone"; mkdir -p "$C/dir"
    "$COFFER" init --vault "$C/a.coffer" "${KDF[@]}" >/dev/null 2>&1
    "$BENCH" fill --vault "$C/a.coffer" "$N" 2>/dev/null
    "$COFFER" sync --vault "$C/a.coffer" "$C/dir" 2>/dev/null
    for i in $(seq 1 100); do
      "$COFFER" edit --vault "$C/a.coffer" "bench/item-$((i * 17 % N))" --field "note=clone-$i" 2>/dev/null
      "$COFFER" sync --vault "$C/a.coffer" "$C/dir" 2>/dev/null
    done
    "$COFFER" export --vault "$C/a.coffer" --out "$C/full.coffer-bundle" 2>/dev/null
    seg_files=$(find "$C/dir" -maxdepth 1 -name '*.coffer-bundle' | wc -l)
    hyperfine -N --runs 5 --warmup 1 --prepare "rm -f $C/x.coffer" --export-json "$W/clone-one.json" \
      "$COFFER clone --vault $C/x.coffer $C/full.coffer-bundle" >/dev/null 2>&1
    hyperfine -N --runs 5 --warmup 1 --prepare "rm -f $C/x.coffer" --export-json "$W/clone-dir.json" \
      "$COFFER clone --vault $C/x.coffer $C/dir" >/dev/null 2>&1
    t_one=$(ms "$W/clone-one.json"); t_dir=$(ms "$W/clone-dir.json")
    printf '%-44s %12s %12s\n' "clone of one full bundle (ms)" "$t_one" ""
    printf '%-44s %12s %12s\n' "clone DIR, snapshot + $seg_files files (ms)" "$t_dir" "$(python3 -c "print('%.0f' % (1.2*$t_one))")"
    printf '%-44s %12s %12s\n' "  ratio" "$(python3 -c "print('%.2f' % ($t_dir/$t_one))")" "1.2"
    echo "  (git: $commits commits on the remote)"
  fi
  rm -rf "$D"
done
