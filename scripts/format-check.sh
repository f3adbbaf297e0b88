#!/usr/bin/env bash
# Fails when `make format` would change a Swift file, or when swift-format's
# lint rules (.swift-format) find something formatting does not fix.
# Formats a copy of the files in a temporary folder and compares it with the
# tree: `swift format lint --strict` alone passes files that `format` still
# rewrites (it does not report the blank line `format` puts between the
# imports and the first declaration).
# Usage: scripts/format-check.sh "SWIFT" PATH... (the Makefile's FORMAT_PATHS).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
swift="$1"; shift

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
find "$@" -name '*.swift' -type f -print0 | xargs -0 -r cp --parents -t "$scratch"
(cd "$scratch" && $swift format format -i -r --parallel --configuration "$root/.swift-format" "$@")

status=0
changed="$(cd "$scratch" && find . -name '*.swift' -type f | sed 's|^\./||' | sort | while read -r f; do
  cmp -s "$f" "$root/$f" || echo "$f"
done)"
if [[ -n "$changed" ]]; then
  while read -r f; do
    diff -u --label "a/$f" --label "b/$f" "$root/$f" "$scratch/$f" || true
  done <<<"$changed" | head -n 100 >&2 || true
  echo "format-check: $(wc -l <<<"$changed") file(s) not formatted (the diff above shows the first 100 lines); run \`make format\` and commit the result:" >&2
  sed 's/^/  /' <<<"$changed" >&2
  status=1
fi
if ! $swift format lint -r --parallel --strict --configuration .swift-format "$@"; then
  echo "format-check: swift format lint --strict found the problems above; \`make format\` fixes the layout ones, the others are fixed by hand (CONTRIBUTING.md, Formatting)" >&2
  status=1
fi
if [[ $status -eq 0 ]]; then echo "format-check: every Swift file is formatted as .swift-format says"; fi
exit $status
