#!/usr/bin/env bash
# Fails when a target imports a module its layer must not use.
# The allowed imports per target are the layering of docs/architecture.md;
# Package.swift alone does not enforce it, because Swift lets a target
# import any module its dependencies depend on.
set -euo pipefail
cd "${CHECK_LAYERS_ROOT:-$(dirname "$0")/..}"

# target: allowed modules (besides the platform: Foundation, FoundationEssentials, Glibc, Musl, Dispatch).
declare -A ALLOWED=(
  [CofferCrypto]="CSodium CArgon2 CGMP Crypto _CryptoExtras"
  [CofferSystem]="CofferCrypto CCofferSys"
  [CofferSync]="CofferCrypto"
  [CofferStore]="CofferSync CofferCrypto GRDB SQLite3 GRDBSQLite"
  [CofferKit]="CofferCrypto CofferSystem CofferSync CofferStore"
  [CofferInterop]="CofferKit CofferCrypto CofferSystem ZIPFoundation CZlib FoundationXML"
  [CofferSecretService]="CofferKit CofferSystem CofferCrypto CSystemd"
  [coffer]="CofferKit CofferInterop CofferSecretService CofferSystem CofferCrypto CofferSync ArgumentParser"
  [CofferBenchSupport]="CofferKit CofferStore CofferSync CofferCrypto GRDB"
  [coffer-bench]="CofferBenchSupport CofferKit CofferSystem CofferCrypto ArgumentParser"
)
PLATFORM="Foundation FoundationEssentials Glibc Musl Dispatch Synchronization"

status=0
for dir in Sources/*/; do
  target="$(basename "$dir")"
  case "$target" in CSodium|CArgon2|CGMP|CCofferSys|CSystemd|CXMLICU) continue ;; esac
  if [[ -z "${ALLOWED[$target]+set}" ]]; then
    echo "check-layers: Sources/$target is not in scripts/check-layers.sh; add its allowed imports (and draw it in docs/architecture.md)" >&2
    status=1
    continue
  fi
  allowed=" ${ALLOWED[$target]} $PLATFORM "
  while IFS=: read -r file line text; do
    module="$(sed -E 's/^[[:space:]]*(@_exported[[:space:]]+|@preconcurrency[[:space:]]+)?((public|package|internal|private|fileprivate)[[:space:]]+)?import[[:space:]]+(class |struct |enum |func |protocol |typealias |var |let )?([A-Za-z0-9_]+).*/\5/' <<<"$text")"
    if [[ "$allowed" != *" $module "* ]]; then
      echo "check-layers: $file:$line: $target must not import $module" >&2
      status=1
    fi
  done < <(grep -rnE '^[[:space:]]*(@_exported[[:space:]]+|@preconcurrency[[:space:]]+)?((public|package|internal|private|fileprivate)[[:space:]]+)?import[[:space:]]+((class|struct|enum|func|protocol|typealias|var|let)[[:space:]]+)?[A-Za-z0-9_.]+[[:space:]]*(//.*)?$' "$dir" --include='*.swift' || true)
done
# SQL lives in CofferStore, which reads every row through SafeRow (a
# damaged row is exit 65, never a trap): CofferKit hands it a
# StoreConnection and runs no statement of its own. A string literal that
# starts like an SQL statement is refused (comments are skipped).
while IFS=: read -r file line _; do
  echo "check-layers: $file:$line: CofferKit must not hold SQL; add a query to Sources/CofferStore (Queries) and call it" >&2
  status=1
done < <(grep -rnE '"[[:space:]]*(SELECT|INSERT|UPDATE|DELETE|REPLACE|PRAGMA|CREATE|DROP|ALTER|WITH)[[:space:]]+[A-Za-z_*(]' Sources/CofferKit --include='*.swift' \
  | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
# One path for usage errors (docs/exit-codes.md): a command throws
# CofferError(.usage, …), never argument-parser's ValidationError, whose
# refusal would print in another shape (argument-parser's own parse errors
# are reworded in Coffer.usageError).
while IFS=: read -r file line _; do
  echo "check-layers: $file:$line: throw CofferError(.usage, …) with a hint, not ValidationError: usage errors have one shape" >&2
  status=1
done < <(grep -rnE '\bValidationError[[:space:]]*\(' Sources/coffer --include='*.swift' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
# CofferKit's API tests stand for an application: `import CofferKit` and
# the platform only, so a type the API needs but does not re-export fails.
# The shared test support (Tests/CofferTestSupport, used by every test
# target) is allowed beside it because it is held to the same rule: CofferKit
# and the platform only, never @testable, and it re-exports nothing.
check_test_imports() {  # folder, allowed modules, what to say
  local dir="$1" allowed=" $2 $PLATFORM " what="$3"
  while IFS=: read -r file line text; do
    module="$(sed -E 's/^[[:space:]]*(@testable[[:space:]]+|@_exported[[:space:]]+|@preconcurrency[[:space:]]+)?((public|package|internal|private|fileprivate)[[:space:]]+)?import[[:space:]]+(class |struct |enum |func |protocol |typealias |var |let )?([A-Za-z0-9_]+).*/\5/' <<<"$text")"
    if [[ "$allowed" != *" $module "* ]] || [[ "$text" == *@testable* ]] || [[ "$text" == *@_exported* ]]; then
      echo "check-layers: $file:$line: $what" >&2
      status=1
    fi
  done < <(grep -rnE '^[[:space:]]*(@testable[[:space:]]+|@_exported[[:space:]]+|@preconcurrency[[:space:]]+)?((public|package|internal|private|fileprivate)[[:space:]]+)?import[[:space:]]+((class|struct|enum|func|protocol|typealias|var|let)[[:space:]]+)?[A-Za-z0-9_.]+[[:space:]]*(//.*)?$' "$dir" --include='*.swift' || true)
}
check_test_imports Tests/CofferKitAPITests "CofferKit CofferTestSupport Testing" \
  "CofferKitAPITests may import only CofferKit, CofferTestSupport (not @testable or @_exported), Testing and the platform"
check_test_imports Tests/CofferTestSupport "CofferKit" \
  "CofferTestSupport may import only CofferKit (not @testable or @_exported) and the platform: CofferKitAPITests depends on it"
# CofferKit speaks to applications, not to one command line: its messages,
# hints and remedies name no `coffer` command and no command-line option
# (the CLI words them from CofferError.Remedy, Sources/coffer/ErrorWords.swift).
# Checked on every line that is not a comment: `coffer VERB` for a verb the
# CLI defines (or any backquoted `coffer …`), and `--option` anywhere but a
# string literal that is one option alone (an argument handed to git).
# PHRASES_ALLOWED are product text that looks like a command: the subject of
# the commits `sync --git` makes in the user's repository.
PHRASES_ALLOWED=("coffer sync: replica")
verbs="$(grep -rhoE 'commandName: "[a-z][a-z-]*"' Sources/coffer --include='*.swift' 2>/dev/null \
  | sed -E 's/.*"(.*)"/\1/' | grep -vx coffer | sort -u | paste -sd'|' || true)"
[[ -n "$verbs" ]] || verbs="ls|get|add|edit|init|unlock|sync|import|export|clone|verify|rekey"
while IFS= read -r hit; do
  file="${hit%%:*}"; rest="${hit#*:}"; line="${rest%%:*}"; text="${rest#*:}"
  [[ "$text" =~ ^[[:space:]]*// ]] && continue
  text="${text%% // *}"
  for phrase in "${PHRASES_ALLOWED[@]}"; do text="${text//"$phrase"/}"; done
  text="$(sed -E 's/"--[a-z][a-z0-9-]*"//g' <<<"$text")"
  if grep -qE "\`coffer[ …]|(^|[^a-z-])coffer ($verbs)([^a-z-]|$)" <<<"$text"; then
    echo "check-layers: $file:$line: CofferKit text names a coffer command; say what to do in words and as a CofferError.Remedy the CLI words (Sources/coffer/ErrorWords.swift)" >&2
    status=1
  elif grep -qE -- '--[a-z]' <<<"$text"; then
    echo "check-layers: $file:$line: CofferKit text names a command-line option; name the call's argument in words (CofferError.argument) and let the CLI word it (Sources/coffer/ErrorWords.swift)" >&2
    status=1
  fi
done < <(grep -rnE --include='*.swift' -e 'coffer|--[a-z]' Sources/CofferKit || true)
if [[ $status -eq 0 ]]; then echo "check-layers: every target imports only what its layer allows; CofferKit names no CLI command or option"; fi
exit $status
