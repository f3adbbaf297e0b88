#!/usr/bin/env bash
# The main job, end to end, in a throw-away directory.
set -euo pipefail
COFFER="${1:?usage: demo.sh path/to/coffer}"
DEMO="$(mktemp -d /tmp/coffer-demo.XXXXXX)"
trap 'rm -rf "$DEMO"' EXIT
export HOME="$DEMO/home" XDG_DATA_HOME="$DEMO/home/.local/share" XDG_RUNTIME_DIR="$DEMO/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_PASSPHRASE COFFER_SESSION
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

printf 'correct horse battery staple\n' > "$DEMO/passphrase"
chmod 600 "$DEMO/passphrase"
# Small KDF settings keep the demo fast; real vaults use the defaults.
P=(--passphrase-file "$DEMO/passphrase")

step "Create a vault (Argon2id-protected; file 0600 in a 0700 folder)"
run "$COFFER" init "${P[@]}" --kdf-memory 32M --kdf-iterations 2 --kdf-parallelism 1

step "Store credentials; secrets come from stdin, never from argv"
printf '$ printf %%s "sk-…" | coffer add work/openai --type api-key --source openai --tag ai\n'
printf 'sk-demo-0123456789abcdefghijklmnop' | "$COFFER" add work/openai --type api-key --source openai --tag ai "${P[@]}"
printf '$ printf %%s "hunter2" | coffer add personal/github --type login --field username=octocat --url https://github.com\n'
printf 'hunter2' | "$COFFER" add personal/github --type login --field username=octocat --url https://github.com "${P[@]}"

step "List (names and types only; nothing secret)"
run "$COFFER" ls "${P[@]}"

step "Use a secret in a script"
printf '$ export OPENAI_API_KEY="$(coffer get work/openai)"\n'
OPENAI_API_KEY="$("$COFFER" get work/openai "${P[@]}")"
echo "OPENAI_API_KEY has ${#OPENAI_API_KEY} characters"

step "Edit, then look at the history"
printf 'sk-demo-rotated-abcdefghijklmnopqrstuv' | "$COFFER" edit work/openai --secret key --expires 90d "${P[@]}"
run "$COFFER" history work/openai "${P[@]}"

step "Nothing readable on disk"
if strings "$XDG_DATA_HOME/coffer/vault.coffer" | grep -q -e openai -e hunter2; then
  echo "FAIL: plaintext found in the vault file"; exit 1
else
  echo "strings vault.coffer | grep openai  → nothing"
fi

step "Done"
