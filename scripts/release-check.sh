#!/usr/bin/env bash
# Checks the release binary the way it is linked (Makefile RELEASE_FLAGS):
#   scripts/release-check.sh path/to/release/coffer path/to/debug/coffer
# 1. No shared library the release build links statically is loaded at run
#    time (only libc, libm, libgcc_s, libsodium and the loader remain).
# 2. Argon2id from the static libargon2 derives the same key as the debug
#    build's shared one, both ways: a vault made by one build opens with
#    the same passphrase in the other (and not with another passphrase).
# 3. libxml2 linked statically, with its ICU calls going to Foundation's
#    ICU (Sources/CXMLICU), reads KeePass XML in UTF-8, UTF-16, ISO-8859-1,
#    ISO-8859-15 and SCSU exactly as the debug build's shared libxml2 does.
#    Its dynamic symbol table is small (no -export-dynamic: start-up cost).
# 4. With ICU's data trimmed (scripts/icu-trim.py), what goes through
#    Foundation's ICU prints alike in both builds, under a non-English
#    locale and a far time zone: dates, expiry spans, diacritic- and
#    case-insensitive search, sizes, JSON.
set -euo pipefail
REL="$(realpath "${1:?usage: release-check.sh RELEASE_COFFER DEBUG_COFFER}")"
DBG="$(realpath "${2:?usage: release-check.sh RELEASE_COFFER DEBUG_COFFER}")"
DIR="$(mktemp -d /tmp/coffer-release-check.XXXXXX)"
trap 'rm -rf "$DIR"' EXIT
export HOME="$DIR/home" XDG_DATA_HOME="$DIR/home/.local/share" XDG_CONFIG_HOME="$DIR/home/.config" XDG_RUNTIME_DIR="$DIR/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_PASSPHRASE COFFER_SESSION
fail() { echo "release-check: FAIL: $*" >&2; exit 1; }

# 1. What the loader maps.
libs="$(ldd "$REL" | awk '{print $1}' | sed -E 's#.*/##; s/\.so.*//' | sort -u | tr '\n' ' ')"
echo "release-check: shared libraries: $libs"
for lib in libxml2 libicuuc libicudata libsqlite3 libargon2 libstdc++ liblzma libz libgmp libsystemd; do
  case " $libs " in *" $lib "*) fail "the release binary still loads $lib.so (is its .a in .build/static-libs? see scripts/static-libs.sh)";; esac
done

# The dynamic symbol table: built without -export-dynamic (Makefile
# RELEASE_FLAGS), it holds the few hundred symbols the loader needs, not
# every public Swift symbol; the runtime's dladdr at start-up scans it.
if command -v readelf >/dev/null 2>&1; then
  dynsyms="$(readelf --dyn-syms -W "$REL" | grep -c ' FUNC \| OBJECT ' || true)"
  echo "release-check: dynamic symbols: $dynsyms"
  [ "$dynsyms" -le 2000 ] || fail "the release binary exports $dynsyms dynamic symbols (linked with -export-dynamic? see RELEASE_FLAGS in the Makefile)"
else
  echo "release-check: readelf not installed; dynamic symbol table not checked"
fi

# The libraries frozen into the binary: a security update of one of them
# needs a rebuild of Coffer.
echo "release-check: linked statically from: $(dpkg-query -W -f='${Package} ${Version}, ' libsqlite3-dev libxml2-dev zlib1g-dev liblzma-dev  libargon2-dev libgmp-dev 2>/dev/null | sed 's/, $//')"

# 2. The same key from both builds' Argon2id (default parameters: 4 lanes).
printf 'release check passphrase\n' > "$DIR/pass"; printf 'another passphrase\n' > "$DIR/wrong"
chmod 600 "$DIR/pass" "$DIR/wrong"
check_pair() { # $1 makes the vault, $2 reads it; $3 names the vault
  local vault="$DIR/pair-$3.coffer"
  "$1" init --vault "$vault" --passphrase-file "$DIR/pass" >/dev/null 2>&1 || fail "init with $1"
  printf 's3cret-value\n' | "$1" add svc/token --vault "$vault" --passphrase-file "$DIR/pass" >/dev/null 2>&1 \
    || fail "add with $1"
  got="$("$2" get svc/token --vault "$vault" --passphrase-file "$DIR/pass" 2>&1)" || fail "$2 cannot open a vault made by $1: $got"
  [ "$got" = "s3cret-value" ] || fail "$2 read a different value from a vault made by $1"
  if "$2" get svc/token --vault "$vault" --passphrase-file "$DIR/wrong" >/dev/null 2>&1; then
    fail "$2 opened a vault made by $1 with the wrong passphrase"
  fi
}
check_pair "$REL" "$DBG" release-made
check_pair "$DBG" "$REL" debug-made
echo "release-check: Argon2id: a vault made by either build opens in the other"

# 3. KeePass XML in four encodings, read by both builds.
xml() { # $1 encoding name in the declaration
  printf '<?xml version="1.0" encoding="%s"?>\n<KeePassFile><Root><Group><Name>Root</Name>' "$1"
  printf '<Entry><String><Key>Title</Key><Value>caf\xc3\xa9 \xe2\x82\xac</Value></String>'
  printf '<String><Key>Password</Key><Value>p\xc3\xa4ss</Value></String></Entry></Group></Root></KeePassFile>\n'
}
xml UTF-8 > "$DIR/utf8.xml"
xml UTF-16 | iconv -f UTF-8 -t UTF-16 > "$DIR/utf16.xml"
xml ISO-8859-15 | iconv -f UTF-8 -t ISO-8859-15 > "$DIR/latin9.xml"
xml ISO-8859-1 | sed 's/ \xe2\x82\xac//' | iconv -f UTF-8 -t ISO-8859-1 > "$DIR/latin1.xml"
# SCSU: an encoding glibc's iconv lacks, so libxml2 asks ICU for it (the
# path through Sources/CXMLICU). In SCSU's initial state, ASCII and U+0080
# to U+00FF are single bytes equal to ISO-8859-1's.
xml SCSU | sed 's/ \xe2\x82\xac//' | iconv -f UTF-8 -t ISO-8859-1 > "$DIR/scsu.xml"
for f in utf8 utf16 latin9 latin1 scsu; do
  case "$f" in latin1|scsu) name="café" ;; *) name="café €" ;; esac
  for build in "$REL" "$DBG"; do
    vault="$DIR/xml-$f-$RANDOM$RANDOM.coffer"
    "$build" init --vault "$vault" --passphrase-file "$DIR/pass" --kdf-memory 19M --kdf-iterations 2 >/dev/null 2>&1 \
      || fail "init for $f"
    "$build" import --vault "$vault" --from keepass-xml "$DIR/$f.xml" --passphrase-file "$DIR/pass" >/dev/null 2>"$DIR/err" \
      || fail "$build could not import $f.xml: $(cat "$DIR/err")"
    value="$("$build" get "$name" --vault "$vault" --passphrase-file "$DIR/pass" 2>"$DIR/err")" \
      || fail "$build: $f.xml did not give an item named '$name': $(cat "$DIR/err")"
    [ "$value" = "päss" ] || fail "$build: $f.xml gave '$name' a different password"
  done
done
echo "release-check: KeePass XML in UTF-8, UTF-16, ISO-8859-15, ISO-8859-1 and SCSU read alike by both builds"
# 4. ICU's data: trimmed unless COFFER_FULL_ICU=1, and both builds print alike.
if nm "$REL" 2>/dev/null | grep ' coffer_icu_data$' >/dev/null; then
  echo "release-check: ICU data: trimmed (scripts/icu-trim.py)"
elif [ "${COFFER_FULL_ICU:-0}" != 1 ]; then
  fail "the release binary links ICU's whole data; scripts/icu-trim.py did not take (see scripts/static-libs.sh)"
fi
vault="$DIR/icu.coffer"
"$REL" init --vault "$vault" --passphrase-file "$DIR/pass" --kdf-memory 19M --kdf-iterations 2 >/dev/null 2>&1 || fail "init for the ICU check"
add() { "$REL" add --vault "$vault" --passphrase-file "$DIR/pass" "$@" >/dev/null 2>&1 <<< "v" || fail "add $*"; }
add "personal/Café-Crème" --type note --expires 2001-02-03 --tag Ärger
add "work/ÉTÉ-key" --type api-key --expires 30d --source openai
add "日本/鍵" --type login --field username=ÖSTERREICH --url https://exämple.org
for args in "ls" "ls --json" "ls --expiring 60d" "ls --expired" "find cafe" "find CAFÉ" "find ete" "find österreich" "find 鍵" \
  "show personal/Café-Crème" "show work/ÉTÉ-key --json" "history work/ÉTÉ-key" "ls --tree"; do
  for build in REL DBG; do
    # shellcheck disable=SC2086
    LANG=de_DE.UTF-8 LC_ALL=de_DE.UTF-8 TZ=Pacific/Kiritimati "${!build}" $args --vault "$vault" --passphrase-file "$DIR/pass" \
      > "$DIR/out-$build" 2>&1 || true
  done
  # Timestamps of the last change differ only by when each ran: none here, both read the same file.
  cmp -s "$DIR/out-REL" "$DIR/out-DBG" || fail "'coffer $args' prints differently in the release build: $(diff "$DIR/out-REL" "$DIR/out-DBG" | head -5)"
done
echo "release-check: dates, spans, search and JSON print alike under de_DE and UTC+14 with the trimmed ICU data"
echo "release-check: ok"
