#!/usr/bin/env bash
# Attachments through plaintext export and import (issue 16): a vault of
# N items each holding one attachment of S KiB of random bytes, against the
# same N items without attachments, in the same run (median seconds of
# whole-process runs, hyperfine):
#   export --format json (base64) and keepass-xml (Meta/Binaries),
#   import --from coffer-json of that export into an empty vault,
#   import --from 1password-1pux of N documents, against the same archive's
#   items without files.
#
#   scripts/bench-attachments.sh path/to/release/coffer [items] [KiB]
#
# Argon2id uses 19 MiB / 2 passes / 1 lane, as in bench-bundles.sh.
set -euo pipefail
COFFER="${1:?usage: bench-attachments.sh path/to/coffer [items] [KiB]}"
N="${2:-100}"
KIB="${3:-256}"
RUNS="${RUNS:-3}"
W="$(mktemp -d /tmp/coffer-bench-attach.XXXXXX)"
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION
export COFFER_PASSPHRASE="bench passphrase"
trap 'rm -rf "$W"' EXIT
KDF=(--kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1)

median() { python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$1"; }
hf() { # name prepare command
  hyperfine -N --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null 2>&1 \
    || hyperfine --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null
  median "$W/$1.json"
}
ratio() { python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print("%.2f" % (a / b) if b > 0 else "-")' "$1" "$2"; }

# Two vaults with the same N items; one item in `with` holds an attachment.
for v in with without; do "$COFFER" init --vault "$W/$v.coffer" "${KDF[@]}" >/dev/null 2>&1; done
python3 - "$W" "$N" "$KIB" <<'EOF'
import os, sys
w, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(f"{w}/files", exist_ok=True)
for i in range(n):
    with open(f"{w}/files/f{i}.bin", "wb") as f:
        f.write(os.urandom(kib * 1024))
EOF
eval "$("$COFFER" unlock --vault "$W/with.coffer" 2>/dev/null)"
for i in $(seq 0 $((N - 1))); do
  "$COFFER" add --vault "$W/with.coffer" "k/item$i" --type custom --field "user=u$i" --field "token=t$i" >/dev/null 2>&1
  "$COFFER" attach --vault "$W/with.coffer" "k/item$i" "$W/files/f$i.bin" >/dev/null 2>&1
done
"$COFFER" lock >/dev/null 2>&1 || true
eval "$("$COFFER" unlock --vault "$W/without.coffer" 2>/dev/null)"
for i in $(seq 0 $((N - 1))); do
  "$COFFER" add --vault "$W/without.coffer" "k/item$i" --type custom --field "user=u$i" --field "token=t$i" >/dev/null 2>&1
done
"$COFFER" lock >/dev/null 2>&1 || true
unset COFFER_SESSION

echo
echo "attachments: $N items, each with one ${KIB} KiB attachment, against the same items without (median of $RUNS)"
printf '%-34s %-10s %-10s %-6s\n' step with_s without_s ratio
row() { printf '%-34s %-10s %-10s %-6s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"; }
for v in with without; do
  eval "t_json_$v=$(hf "json-$v" "rm -f $W/$v.json" "$COFFER export --vault $W/$v.coffer --format json --plaintext --out $W/$v.json")"
  eval "t_xml_$v=$(hf "xml-$v" "rm -f $W/$v.xml" "$COFFER export --vault $W/$v.coffer --format keepass-xml --plaintext --out $W/$v.xml")"
  eval "t_imp_$v=$(hf "imp-$v" "rm -f $W/i.coffer; $COFFER init --vault $W/i.coffer ${KDF[*]} >/dev/null 2>&1" "$COFFER import --vault $W/i.coffer --from coffer-json $W/$v.json")"
done
row "export --format json" "$t_json_with" "$t_json_without"
row "export --format keepass-xml" "$t_xml_with" "$t_xml_without"
row "import --from coffer-json" "$t_imp_with" "$t_imp_without"
echo "  export sizes: json $(du -h "$W/with.json" | cut -f1) vs $(du -h "$W/without.json" | cut -f1), keepass-xml $(du -h "$W/with.xml" | cut -f1) vs $(du -h "$W/without.xml" | cut -f1)"

# A 1PUX archive of N document items with their files, and the same
# export.data zipped without files (every document is then a warning).
python3 - "$W" "$N" <<'EOF'
import json, sys, zipfile
w, n = sys.argv[1], int(sys.argv[2])
items = [{"uuid": f"i{i}", "categoryUuid": "006", "state": "active", "overview": {"title": f"doc{i}"},
          "details": {"notesPlain": "", "documentAttributes": {"fileName": f"f{i}.bin", "documentId": f"d{i}"}}} for i in range(n)]
data = json.dumps({"accounts": [{"attrs": {"accountName": "Bench"}, "vaults": [{"attrs": {"name": "V"}, "items": items}]}]})
for name, files in (("with", True), ("without", False)):
    z = zipfile.ZipFile(f"{w}/{name}.1pux", "w", compression=zipfile.ZIP_DEFLATED)
    z.writestr("export.data", data)
    if files:
        for i in range(n):
            z.write(f"{w}/files/f{i}.bin", f"files/d{i}__f{i}.bin")
    z.close()
EOF
for v in with without; do
  eval "t_pux_$v=$(hf "pux-$v" "rm -f $W/i.coffer; $COFFER init --vault $W/i.coffer ${KDF[*]} >/dev/null 2>&1" "$COFFER import --vault $W/i.coffer --from 1password-1pux $W/$v.1pux")"
done
row "import --from 1password-1pux" "$t_pux_with" "$t_pux_without"
