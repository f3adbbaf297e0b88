#!/usr/bin/env bash
# Proves scripts/check-layers.sh catches what it promises to: on a copy of
# the sources it must pass, then fail (naming the file) once each
# deliberate violation is put in. Run by `make check-layers`.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

fresh_copy() {
  rm -rf "$scratch/tree"
  mkdir -p "$scratch/tree/Tests"
  cp -R Sources scripts "$scratch/tree/"
  cp -R Tests/CofferKitAPITests Tests/CofferTestSupport "$scratch/tree/Tests/"
}

run() { CHECK_LAYERS_ROOT="$scratch/tree" bash scripts/check-layers.sh 2>"$scratch/err" >/dev/null; }

fresh_copy
run || { echo "test-check-layers: check-layers fails on an untouched copy:" >&2; cat "$scratch/err" >&2; exit 1; }

failures=0
expect_refusal() {  # name, file to append to, line to append, text the refusal must contain
  local name="$1" file="$2" text="$3" expected="$4"
  fresh_copy
  printf '%s\n' "$text" >>"$scratch/tree/$file"
  if run; then
    echo "test-check-layers: $name: check-layers passed" >&2
    failures=$((failures + 1))
  elif ! grep -qF "$expected" "$scratch/err"; then
    echo "test-check-layers: $name: refusal does not say '$expected':" >&2
    cat "$scratch/err" >&2
    failures=$((failures + 1))
  fi
}

expect_refusal "GRDB imported by CofferKit" Sources/CofferKit/Coffer.swift \
  'import GRDB' "CofferKit must not import GRDB"
expect_refusal "SQL in CofferKit" Sources/CofferKit/Coffer.swift \
  'let leak = "SELECT itemId FROM item"' "Coffer.swift:"
expect_refusal "SQL in CofferKit (lower layer imported)" Sources/CofferKit/Vault.swift \
  '    let q = "DELETE FROM item WHERE 1"' "CofferKit must not hold SQL"
expect_refusal "the CLI's parser in CofferKit" Sources/CofferKit/Coffer.swift \
  'import ArgumentParser' "CofferKit must not import ArgumentParser"
expect_refusal "an API test importing a lower layer" Tests/CofferKitAPITests/Support.swift \
  'import CofferStore' "CofferKitAPITests may import only"
expect_refusal "an @testable API test" Tests/CofferKitAPITests/Support.swift \
  '@testable import CofferKit' "CofferKitAPITests may import only"

if [[ $failures -ne 0 ]]; then exit 1; fi
echo "test-check-layers: check-layers refuses each deliberate violation"
