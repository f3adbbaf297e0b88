#!/usr/bin/env bash
# Import benchmarks (issue 16): `coffer import --from keepass-xml` of a
# 10,000- and a 100,000-entry KeePass XML into an empty vault (median
# seconds, peak RSS), next to `keepassxc-cli import` of the same 10,000
# entries; and `coffer import --from pass` of a 1,000-entry pass store next
# to `pass show` of every entry, in the same run (both bounded by gpg).
#
#   scripts/bench-interop.sh path/to/release/coffer [sizes...]
#
# Argon2id uses 19 MiB / 2 passes / 1 lane, as in bench-bundles.sh.
set -euo pipefail
COFFER="${1:?usage: bench-interop.sh path/to/coffer [sizes...]}"
shift
SIZES=("${@:-10000 100000}")
read -r -a SIZES <<<"${SIZES[*]}"
RUNS="${RUNS:-3}"
PASS_ENTRIES="${PASS_ENTRIES:-1000}"
HERE="$(cd "$(dirname "$0")" && pwd)"
W="$(mktemp -d /tmp/coffer-bench-interop.XXXXXX)"
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION
export COFFER_PASSPHRASE="bench passphrase" QT_QPA_PLATFORM=offscreen
export GNUPGHOME="$W/gnupg" PASSWORD_STORE_DIR="$W/store"
trap 'gpgconf --kill all >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
KDF=(--kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1)

median() { python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$1"; }
rss() { /usr/bin/time -f '%M' -o "$W/time" "$@" >/dev/null 2>&1; echo "$(( $(tail -1 "$W/time") / 1024 ))"; }
hf() { # name prepare command
  hyperfine -N --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null 2>&1 \
    || hyperfine --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null
  median "$W/$1.json"
}
fresh="rm -f $W/v.coffer; $COFFER init --vault $W/v.coffer ${KDF[*]} >/dev/null 2>&1"

echo
echo "import --from keepass-xml into an empty vault (median of $RUNS, peak RSS)"
printf '%-8s %-10s %-8s %-22s\n' entries import_s RSS_MB keepassxc-cli_import_s
for n in "${SIZES[@]}"; do
  python3 "$HERE/gen-keepass-xml.py" "$n" "$W/k$n.xml"
  t=$(hf "kx$n" "$fresh" "$COFFER import --vault $W/v.coffer --from keepass-xml $W/k$n.xml")
  bash -c "$fresh"
  m=$(rss "$COFFER" import --vault "$W/v.coffer" --from keepass-xml "$W/k$n.xml")
  base="-"
  if command -v keepassxc-cli >/dev/null && [ "$n" -le 10000 ]; then
    printf 'pw\npw\n' >"$W/pw2"
    base=$(hf "kc$n" "rm -f $W/k.kdbx" "bash -c 'keepassxc-cli import -q -p -t 100 $W/k$n.xml $W/k.kdbx <$W/pw2'")
  fi
  printf '%-8s %-10s %-8s %-22s\n' "$n" "$t" "$m" "$base"
done

if command -v pass >/dev/null && command -v gpg >/dev/null; then
  echo
  echo "pass store of $PASS_ENTRIES entries (median of $RUNS): coffer import --from pass vs pass show of every entry"
  mkdir -p "$GNUPGHOME"; chmod 700 "$GNUPGHOME"
  printf '%%no-protection\nKey-Type: EDDSA\nKey-Curve: ed25519\nSubkey-Type: ECDH\nSubkey-Curve: cv25519\nName-Real: Bench\nName-Email: bench@coffer.invalid\nExpire-Date: 0\n%%commit\n' \
    | gpg --batch --quiet --gen-key
  pass init bench@coffer.invalid >/dev/null
  for i in $(seq 1 "$PASS_ENTRIES"); do
    d="$PASSWORD_STORE_DIR/group$((i % 20))"; mkdir -p "$d"
    printf 'pw-%s\nlogin: user%s\nurl: https://site%s.example\n' "$i" "$i" "$i" \
      | gpg --quiet --batch --yes --encrypt -r bench@coffer.invalid -o "$d/entry$i.gpg"
  done
  (cd "$PASSWORD_STORE_DIR" && find . -name '*.gpg' | sed 's|^\./||; s|\.gpg$||') >"$W/names"
  t=$(hf pass "$fresh" "$COFFER import --vault $W/v.coffer --from pass")
  s=$(hf passshow "true" "bash -c 'while read -r n; do pass show \"\$n\" >/dev/null; done <$W/names'")
  printf '%-24s %-10s\n' "coffer import --from pass" "$t" "pass show (each entry)" "$s"
else
  echo "pass/gpg not installed: pass store benchmark skipped (make deps-interop)"
fi
