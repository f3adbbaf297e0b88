#!/usr/bin/env bash
# KDBX benchmarks (issue 25): `coffer import --from kdbx` of a 10,000-entry
# KDBX 4 database (Argon2d 64 MiB, KeePassXC's default memory; made by
# pykeepass, or by coffer's own writer when pykeepass is missing) into an
# empty vault, next to `keepassxc-cli export --format xml` of the same file
# in the same run (and of 100,000 entries: LARGE, with time -v's peak
# RSS); and `coffer export --format kdbx` of 10,000 items, next
# to `coffer export --format json --plaintext` of the same vault. Median
# seconds (hyperfine) and peak RSS.
#
#   scripts/bench-kdbx.sh path/to/release/coffer [sizes...]
#
# The vault's own Argon2id uses 19 MiB / 2 passes / 1 lane, as in
# bench-interop.sh; the database's KDF is the file's.
set -euo pipefail
COFFER="${1:?usage: bench-kdbx.sh path/to/coffer [sizes...]}"
shift
SIZES=("${@:-10000}")
read -r -a SIZES <<<"${SIZES[*]}"
RUNS="${RUNS:-3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
W="$(mktemp -d /tmp/coffer-bench-kdbx.XXXXXX)"
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION
export COFFER_PASSPHRASE="bench passphrase" QT_QPA_PLATFORM=offscreen
trap 'rm -rf "$W"' EXIT
KDF=(--kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1)
printf 'dbpw\n' >"$W/dbpw"

median() { python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$1"; }
rss() { /usr/bin/time -f '%M' -o "$W/time" "$@" >/dev/null 2>&1; echo "$(( $(tail -1 "$W/time") / 1024 ))"; }
hf() { # name prepare command
  hyperfine -N --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null 2>&1 \
    || hyperfine --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null
  median "$W/$1.json"
}
fresh="rm -f $W/v.coffer; $COFFER init --vault $W/v.coffer ${KDF[*]} >/dev/null 2>&1"

# A KDBX 4, Argon2d 64 MiB database of N entries shaped like
# gen-keepass-xml.py's (100 groups; title, user, password, URL, notes, one
# protected custom string).
# pykeepass's add_entry slows down with every entry (100,000 take more
# than 40 minutes): above 20,000 entries the file is made by coffer.
make_kdbx() { # n out
  if [ "$1" -le 20000 ] && /usr/bin/python3 -c 'import pykeepass' 2>/dev/null; then
    /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
from pykeepass import create_database
n, out = int(sys.argv[1]), sys.argv[2]
kp = create_database(out, password='dbpw')  # KDBX 4.0, Argon2d, 64 MiB
per = max(1, n // 100)
for g in range(0, n, per):
    grp = kp.add_group(kp.root_group, 'group-%d' % (g // per))
    for i in range(g, min(n, g + per)):
        e = kp.add_entry(grp, 'entry-%d' % i, 'user%d@example.com' % i, 'pw-%d-secret' % i,
                         url='https://site%d.example.com/login' % i, notes='note for entry %d' % i, force_creation=True)
        e.set_custom_property('api token', 'tok-%d' % i)
kp.save()
PY
    echo "pykeepass (Argon2d 64 MiB)"
  else
    python3 "$HERE/gen-keepass-xml.py" "$1" "$W/gen.xml"
    bash -c "$fresh"
    "$COFFER" import --vault "$W/v.coffer" --from keepass-xml "$W/gen.xml" >/dev/null 2>&1
    "$COFFER" export --vault "$W/v.coffer" --format kdbx --out "$2" --target-passphrase-file "$W/dbpw" >/dev/null 2>&1
    echo "coffer's writer (Argon2id 64 MiB)"
  fi
}

echo
echo "import --from kdbx into an empty vault (median of $RUNS, peak RSS) vs keepassxc-cli export --format xml"
printf '%-8s %-10s %-8s %-28s %s\n' entries import_s RSS_MB keepassxc-cli_export_s made_by
for n in "${SIZES[@]}"; do
  by=$(make_kdbx "$n" "$W/k$n.kdbx")
  t=$(hf "ki$n" "$fresh" "$COFFER import --vault $W/v.coffer --from kdbx $W/k$n.kdbx --source-passphrase-file $W/dbpw")
  bash -c "$fresh"
  m=$(rss "$COFFER" import --vault "$W/v.coffer" --from kdbx "$W/k$n.kdbx" --source-passphrase-file "$W/dbpw")
  base="-"
  if command -v keepassxc-cli >/dev/null; then
    base=$(hf "kc$n" "true" "bash -c 'keepassxc-cli export -q -f xml $W/k$n.kdbx <$W/dbpw >/dev/null'")
  fi
  printf '%-8s %-10s %-8s %-28s %s\n' "$n" "$t" "$m" "$base" "$by"
done

# The large target (issue 25: 100,000 entries, <= 10 s, <= 250 MB peak):
# the file is made once in this run's temporary folder; peak RSS from
# /usr/bin/time -v. LARGE=0 leaves it out.
LARGE="${LARGE:-100000}"
if [ "$LARGE" -gt 0 ]; then
  echo
  echo "import --from kdbx of $LARGE entries into an empty vault (median of $RUNS; peak RSS from time -v) vs keepassxc-cli export --format xml"
  printf '%-8s %-10s %-8s %-10s %-28s %s\n' entries import_s RSS_MB CPU_s keepassxc-cli_export_s made_by
  by=$(make_kdbx "$LARGE" "$W/k$LARGE.kdbx")
  t=$(hf "ki$LARGE" "$fresh" "$COFFER import --vault $W/v.coffer --from kdbx $W/k$LARGE.kdbx --source-passphrase-file $W/dbpw")
  bash -c "$fresh"
  /usr/bin/time -v -o "$W/timev" "$COFFER" import --vault "$W/v.coffer" --from kdbx "$W/k$LARGE.kdbx" --source-passphrase-file "$W/dbpw" >/dev/null 2>&1
  m=$(( $(awk -F': ' '/Maximum resident set size/ {print $2}' "$W/timev") / 1024 ))
  cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u+s}' "$W/timev")
  base="-"
  if command -v keepassxc-cli >/dev/null; then
    base=$(hf "kc$LARGE" "true" "bash -c 'keepassxc-cli export -q -f xml $W/k$LARGE.kdbx <$W/dbpw >/dev/null'")
  fi
  printf '%-8s %-10s %-8s %-10s %-28s %s\n' "$LARGE" "$t" "$m" "$cpu" "$base" "$by"
fi

echo
echo "export --format kdbx of N items (median of $RUNS, peak RSS) vs export --format json --plaintext"
printf '%-8s %-10s %-8s %-14s\n' items kdbx_s RSS_MB json_s
for n in "${SIZES[@]}"; do
  python3 "$HERE/gen-keepass-xml.py" "$n" "$W/e$n.xml"
  bash -c "$fresh"
  "$COFFER" import --vault "$W/v.coffer" --from keepass-xml "$W/e$n.xml" >/dev/null 2>&1
  t=$(hf "ke$n" "rm -f $W/out.kdbx" "$COFFER export --vault $W/v.coffer --format kdbx --out $W/out.kdbx --target-passphrase-file $W/dbpw")
  m=$(rss "$COFFER" export --vault "$W/v.coffer" --format kdbx --out "$W/out.kdbx" --target-passphrase-file "$W/dbpw")
  j=$(hf "kj$n" "rm -f $W/out.json" "$COFFER export --vault $W/v.coffer --format json --plaintext --out $W/out.json")
  printf '%-8s %-10s %-8s %-14s\n' "$n" "$t" "$m" "$j"
done
