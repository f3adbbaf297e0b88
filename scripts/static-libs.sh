#!/usr/bin/env bash
# Prepares the static link of the release build (docs/architecture.md,
# "How the release binary is linked"; docs/benchmarks-cli.md, "Start-up"):
#   scripts/static-libs.sh DIR [SWIFT]
# 1. DIR holds symbolic links to Debian's .a files and nothing else, so that
#    `-lxml2`, `-lsqlite3`, `-largon2`, `-lz`, `-llzma`, `-lgmp` and `-lstdc++` find
#    the static archive there before the shared library in /usr/lib. A
#    library whose .a is missing is left out with a note: the build then
#    links its shared library, which works but starts slower.
# 2. DIR must come first in the link's search path. SwiftPM puts the `-L`
#    of every dependency's pkg-config file before any `-Xswiftc -L`, and
#    ZIPFoundation's zlib.pc says `-L/usr/lib/<arch>`; so this writes
#    DIR/pkgconfig/zlib.pc naming DIR, which the Makefile puts first in
#    PKG_CONFIG_PATH for the release build.
# 3. DIR/flags: the swift build flags for what was found. When libxml2.a is
#    there: `-llzma` (its dependency) and the ICU forwarders of
#    Sources/CXMLICU, named with the ICU version suffix libxml2.a itself
#    calls (`ucnv_open_72` -> `_72`).
# 4. DIR/icu/icudata.o: Foundation's ICU data trimmed to what coffer uses
#    (scripts/icu-trim.py: 34 MB -> 5 MB of the binary), with the library's
#    name for it defined as ours (`--defsym`), so that the archive member
#    holding the full copy is never pulled into the link.
# `make release-check` fails if any of these libraries is still loaded as a
# shared library.
# libsystemd is not linked at all: `coffer secret-service` loads it with
# dlopen (Sources/CSystemd), as Debian ships no libsystemd.a.
# libsodium stays shared on purpose: libsodium.a and libargon2.a both
# define argon2_ctx, argon2id_hash_raw and other internals, and a static
# link of both would bind Coffer's Argon2id call to libsodium's copy (which
# Coffer does not use: it needs libargon2's parallel lanes). libsodium.so
# exports none of those names.
set -euo pipefail
DIR="${1:?usage: static-libs.sh DIR [SWIFT]}"
SWIFT_BIN="$(command -v "${2:-swift}" 2>/dev/null || true)"
mkdir -p "$DIR"
find "$DIR" -maxdepth 1 -type l -delete
ARCH="$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")"
CLANG=""
[ -n "$SWIFT_BIN" ] && CLANG="$(dirname "$(realpath "$SWIFT_BIN")")/clang"
for lib in libargon2.a libsqlite3.a libxml2.a libz.a liblzma.a libgmp.a libstdc++.a; do
  path=""
  for candidate in "/usr/lib/$ARCH/$lib" "/lib/$ARCH/$lib"; do
    [ -f "$candidate" ] && { path="$candidate"; break; }
  done
  if [ -z "$path" ] && [ -n "$CLANG" ] && [ -x "$CLANG" ]; then
    # libstdc++.a lives in GCC's folder; ask the compiler Swift links with.
    found="$("$CLANG" -print-file-name="$lib" 2>/dev/null || true)"
    [ -f "$found" ] && path="$found"
  fi
  if [ -n "$path" ]; then
    ln -sf "$path" "$DIR/$lib"
  else
    echo "static-libs: note: no $lib found; the release build links the shared library instead" >&2
  fi
done

mkdir -p "$DIR/pkgconfig"
cat > "$DIR/pkgconfig/zlib.pc" <<PC
Name: zlib
Description: zlib, linked statically into Coffer's release build (scripts/static-libs.sh)
Version: $(pkg-config --modversion zlib 2>/dev/null || echo 1)
Libs: -L$DIR -lz
Cflags:
PC

flags="-Xswiftc -L$DIR"
if [ -e "$DIR/libxml2.a" ]; then
  flags="$flags -Xlinker -llzma"
  # The ICU suffix libxml2.a was built against (empty: no ICU calls).
  suffix="$(nm -u "$DIR/libxml2.a" 2>/dev/null | grep -o 'ucnv_open_[0-9]*$' | head -1 | sed 's/^ucnv_open//' || true)"
  if [ -n "$suffix" ]; then
    flags="$flags -Xcc -DCOFFER_STATIC_LIBXML2 -Xcc -DCOFFER_ICU_SUFFIX=$suffix"
  elif nm -u "$DIR/libxml2.a" 2>/dev/null | grep -q ' ucnv_'; then
    echo "static-libs: error: libxml2.a calls ICU without a version suffix; Sources/CXMLICU cannot name its forwarders" >&2
    exit 1
  fi
fi
ICU_LIB=""
[ -n "$SWIFT_BIN" ] && ICU_LIB="$(dirname "$(realpath "$SWIFT_BIN")")/../lib/swift_static/linux/lib_FoundationICU.a"
if [ -n "$ICU_LIB" ] && [ -f "$ICU_LIB" ] && [ "${COFFER_FULL_ICU:-0}" != 1 ]; then
  if python3 "$(dirname "$0")/icu-trim.py" "$ICU_LIB" "$DIR/icu" >&2; then
    flags="$flags -Xlinker $DIR/icu/icudata.o -Xlinker --defsym=$(cat "$DIR/icu/symbol")=coffer_icu_data"
  else
    echo "static-libs: note: could not trim ICU's data (needs python3, ar, nm, objcopy); the whole data is linked" >&2
  fi
else
  echo "static-libs: note: Foundation's whole ICU data is linked (no lib_FoundationICU.a found, or COFFER_FULL_ICU=1)" >&2
fi
printf '%s\n' "$flags" > "$DIR/flags"
echo "static-libs: $(cd "$DIR" && ls *.a | tr '\n' ' ')"
