#!/usr/bin/env python3
"""The release build's ICU data, trimmed to what coffer can use.

    scripts/icu-trim.py LIB_FOUNDATIONICU_A OUT_DIR

Foundation links ICU's whole data package into every static binary as one
symbol (`icudtNN_dat`, 34 MB of ICU 76: the locale data of ~800 locales,
their collations, dictionaries for Thai and Chinese word breaking, 200 legacy
code pages). coffer prints English text, sorts with Swift's `<`, formats dates
as ISO 8601 in UTC and reads XML in UTF-8, UTF-16 or a common single-byte
code page. This script writes OUT_DIR/icudata.o: the same package format
(ICU's "CmnD" common data: header, then a name-sorted table of contents, then
the items) holding only the items below, as the symbol `coffer_icu_data`, and
OUT_DIR/symbol, the library's name for its data (`icudt76_dat`). The link
defines that name as ours (`--defsym`) before it reads the library, so the
library's member holding the whole data is never pulled in
(scripts/static-libs.sh; docs/architecture.md, "How the release binary is
linked"). Any item looked up
and not found makes ICU fall back to its root data, as for a locale it does
not know; `make release-check` compares the release binary's output with the
debug build's (which uses the full data) on dates, search and XML decoding.
"""
import os
import re
import struct
import subprocess
import sys

MEMBER = "icu_packaged_data.cpp.o"
# Locales whose data is kept (with ICU's root, its index and shared pools).
KEEP_LOCALES = {"root", "en", "en_US", "en_US_POSIX", "en_001", "en_150", "en_GB"}
LOCALE = re.compile(r"^[a-z]{2,3}(_[A-Za-z0-9]+)*$")
# Legacy code pages an XML or CSV export may use (ICU converts UTF-8, UTF-16,
# UTF-32, US-ASCII and ISO-8859-1 without data).
KEEP_CONVERTERS = {
    "ibm-5348_P100-1997.cnv",  # windows-1252
    "ibm-5346_P100-1998.cnv",  # windows-1250
    "ibm-5347_P100-1998.cnv",  # windows-1251
    "ibm-923_P100-1998.cnv",  # ISO-8859-15
    "ibm-912_P100-1995.cnv",  # ISO-8859-2
    "ibm-1252_P100-2000.cnv",
}
# Whole categories coffer never uses: transliteration (no StringTransform),
# spelled-out numbers, and word-break dictionaries for scripts without spaces.
DROP_DIRS = {"translit", "rbnf"}


def keep(name):
    """Whether one item (its name without the package prefix) stays."""
    parts = name.split("/")
    base, ext = os.path.splitext(parts[-1])
    if len(parts) > 1 and parts[0] in DROP_DIRS:
        return False
    if ext == ".dict":
        return False
    if ext == ".cnv":
        return parts[-1] in KEEP_CONVERTERS
    if ext == ".res" and LOCALE.match(base) and base not in {"res_index", "pool"}:
        return base in KEEP_LOCALES
    if len(parts) > 1 and parts[0] == "coll" and ext == ".icu":
        return True
    return True


def read_package(data):
    header_size = struct.unpack_from("<H", data, 0)[0]
    if data[2:4] != b"\xda\x27" or data[12:16] != b"CmnD":
        sys.exit("icu-trim: not an ICU common data package")
    count = struct.unpack_from("<I", data, header_size)[0]
    entries = []
    for i in range(count):
        name_off, data_off = struct.unpack_from("<II", data, header_size + 4 + 8 * i)
        start = header_size + name_off
        name = data[start:data.index(b"\0", start)].decode()
        entries.append((name, data_off))
    ends = sorted(off for _, off in entries) + [len(data) - header_size]
    items = []
    for name, off in entries:
        end = next(e for e in ends if e > off)
        items.append((name, data[header_size + off:header_size + end]))
    return data[:header_size], items


def write_package(header, items):
    count = len(items)
    names = b""
    name_offsets = []
    toc_size = 4 + 8 * count
    for name, _ in items:
        name_offsets.append(toc_size + len(names))
        names += name.encode() + b"\0"
    body_start = toc_size + len(names)
    body_start += (-body_start) % 16
    body = b""
    data_offsets = []
    for _, blob in items:
        data_offsets.append(body_start + len(body))
        body += blob
        body += b"\0" * ((-len(body)) % 16)
    toc = struct.pack("<I", count)
    for n, d in zip(name_offsets, data_offsets):
        toc += struct.pack("<II", n, d)
    padded = toc + names
    padded += b"\0" * (body_start - len(padded))
    return header + padded + body


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    library, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    subprocess.run(["ar", "x", os.path.abspath(library), MEMBER], cwd=out, check=True)
    member = os.path.join(out, MEMBER)
    symbols = subprocess.run(["nm", member], capture_output=True, text=True, check=True).stdout
    symbol = next(line.split()[-1] for line in symbols.splitlines() if line.split()[-1].startswith("icudt"))
    full = os.path.join(out, "full.dat")
    subprocess.run(["objcopy", "-O", "binary", "-j", ".rodata", member, full], check=True)
    header, items = read_package(open(full, "rb").read())
    prefix = items[0][0].split("/")[0] + "/"
    kept = [(n, b) for n, b in items if keep(n[len(prefix):])]
    trimmed = write_package(header, kept)
    # Checks the writer against the reader: same names and bytes.
    if read_package(trimmed)[1] != kept:
        sys.exit("icu-trim: the trimmed package does not read back")
    dat = os.path.join(out, "icudata.dat")
    open(dat, "wb").write(trimmed)
    obj = os.path.join(out, "icudata.o")
    mangled = "_binary_" + re.sub(r"[^A-Za-z0-9]", "_", dat) + "_start"
    subprocess.run(
        ["objcopy", "-I", "binary", "-O", "elf64-x86-64", "-B", "i386:x86-64",
         "--rename-section", ".data=.rodata,alloc,load,readonly,data,contents",
         "--set-section-alignment", ".data=16",
         "--redefine-sym", f"{mangled}=coffer_icu_data",
         "--strip-symbol", mangled.replace("_start", "_end"), "--strip-symbol", mangled.replace("_start", "_size"),
         dat, obj], check=True)
    open(os.path.join(out, "symbol"), "w").write(symbol + "\n")
    os.remove(member)
    os.remove(full)
    print(f"icu-trim: {symbol}: {len(kept)} of {len(items)} items, "
          f"{len(trimmed) / 1048576:.1f} MB of {sum(len(b) for _, b in items) / 1048576:.1f} MB -> {obj}")


if __name__ == "__main__":
    main()
