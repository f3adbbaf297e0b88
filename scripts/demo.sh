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
printf 'sk-demo-0123456789abcdefghijklmnopqrstuvwxyzAB' | "$COFFER" add work/openai --type api-key --source openai --tag ai "${P[@]}"
printf '$ printf %%s "hunter2" | coffer add personal/github --type login --field username=octocat --url https://github.com\n'
printf 'hunter2' | "$COFFER" add personal/github --type login --field username=octocat --url https://github.com "${P[@]}"

step "List (names and types only; nothing secret)"
run "$COFFER" ls "${P[@]}"

step "Use a secret in a script"
printf '$ export OPENAI_API_KEY="$(coffer get work/openai)"\n'
OPENAI_API_KEY="$("$COFFER" get work/openai "${P[@]}")"
echo "OPENAI_API_KEY has ${#OPENAI_API_KEY} characters"

step "Edit, then look at the history"
printf 'sk-demo-rotated-abcdefghijklmnopqrstuvwxyz0123' | "$COFFER" edit work/openai --secret key --expires 90d "${P[@]}"
run "$COFFER" history work/openai "${P[@]}"

step "Nothing readable on disk"
if strings "$XDG_DATA_HOME/coffer/vault.coffer" | grep -q -e openai -e hunter2; then
  echo "FAIL: plaintext found in the vault file"; exit 1
else
  echo "strings vault.coffer | grep openai  → nothing"
fi

step "Unlock once for this shell; later commands need no passphrase"
printf '$ eval "$(coffer unlock --timeout 5m)"\n'
eval "$("$COFFER" unlock --timeout 5m "${P[@]}")"
run "$COFFER" status
run "$COFFER" get work/openai --field key >/dev/null && echo "(got the key without a passphrase)"

step "Secrets into programs, never through argv"
printf '$ OPENAI_API_KEY=coffer://work/openai coffer run --mask -- sh -c '"'"'echo "key is $OPENAI_API_KEY"'"'"'\n'
OPENAI_API_KEY=coffer://work/openai "$COFFER" run --mask -- sh -c 'echo "key is $OPENAI_API_KEY"'
printf 'api_key: {{ coffer://work/openai }}\nuser: {{ coffer://personal/github/username }}\n' > "$DEMO/config.tpl"
run "$COFFER" inject -i "$DEMO/config.tpl" -o "$DEMO/config.yml"
echo "config.yml mode: $(stat -c %a "$DEMO/config.yml")"

step "Check that a project's API keys are ready"
cat > "$DEMO/requirements.json" <<'JSON'
{"version": 1, "sources": [
  {"id": "openai", "name": "OpenAI", "type": "api-key", "required": true,
   "registrationURL": "https://platform.openai.com/api-keys", "format": {"prefix": "sk-", "minLength": 20}},
  {"id": "crossref", "name": "Crossref", "type": "email", "required": false,
   "description": "Polite-pool access with an email."}]}
JSON
run "$COFFER" check --requirements "$DEMO/requirements.json" || true

step "A second machine: export a bundle, clone it there"
run "$COFFER" export --out "$DEMO/laptop.bundle"
run "$COFFER" inspect "$DEMO/laptop.bundle"
DESK="$DEMO/desktop.coffer"
run "$COFFER" clone "$DEMO/laptop.bundle" --vault "$DESK" "${P[@]}"

step "Both machines edit the same item at once, then sync through a shared folder"
SYNC="$DEMO/Sync"; mkdir -p "$SYNC"
printf 'laptop-password' | "$COFFER" edit personal/github --secret password
"$COFFER" edit personal/github --field username=octocat-laptop
printf 'desktop-password' | "$COFFER" edit personal/github --secret password --vault "$DESK" "${P[@]}"
"$COFFER" edit personal/github --tag shared --vault "$DESK" "${P[@]}"
run "$COFFER" sync "$SYNC"
run "$COFFER" sync "$SYNC" --vault "$DESK" "${P[@]}"
run "$COFFER" sync "$SYNC"
echo "Different fields merged (username from the laptop, tag from the desktop); the password is a conflict:"
run "$COFFER" conflicts
run "$COFFER" resolve personal/github --field password --keep 1
run "$COFFER" sync "$SYNC"
run "$COFFER" sync "$SYNC" --vault "$DESK" "${P[@]}"
run "$COFFER" conflicts --vault "$DESK" "${P[@]}"

run "$COFFER" lock

step "Done"
