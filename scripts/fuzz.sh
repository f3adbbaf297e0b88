#!/usr/bin/env bash
# Builds the libFuzzer target Fuzz/BundleReader with `swiftc -sanitize=fuzzer`
# (CofferCrypto and CofferSync compiled from source into it; CofferCrypto's
# files on swift-crypto or GMP — HMAC, KDBX, SSH keys, the Secret Service's
# DH — and the files that only they use are left out: the bundle reader needs
# none of them) and runs it for
# FUZZ_SECONDS (default 60) over the committed corpus Fuzz/BundleReader/corpus,
# seeded from the test kit. A crash leaves crash-* in .build/fuzz and fails.
# New corpus entries stay in .build/fuzz/corpus (commit a few by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
out=.build/fuzz
mkdir -p "$out/modules" "$out/corpus"
flags=(-sanitize=fuzzer -package-name coffer -parse-as-library -O -g -I Sources/CSodium -I Sources/CArgon2 -I "$out/modules")
if [ ! -x "$out/bundle-reader" ] || [ -n "$(find Sources/CofferCrypto Sources/CofferSync Fuzz/BundleReader -newer "$out/bundle-reader" -name '*.swift' | head -1)" ]; then
  echo "fuzz: building (swiftc -sanitize=fuzzer)…" >&2
  swiftc "${flags[@]}" -module-name CofferCrypto -emit-module -emit-module-path "$out/modules/CofferCrypto.swiftmodule" \
    -emit-library -static -o "$out/libCofferCrypto.a" $(grep -LE '^(internal |public |package )?import (Crypto|_CryptoExtras|CGMP)$|SSHPublicKey|SSHPrivateKey' Sources/CofferCrypto/*.swift)
  swiftc "${flags[@]}" -module-name CofferSync -emit-module -emit-module-path "$out/modules/CofferSync.swiftmodule" \
    -emit-library -static -o "$out/libCofferSync.a" Sources/CofferSync/*.swift
  swiftc "${flags[@]}" -module-name BundleReaderFuzz Fuzz/BundleReader/main.swift \
    "$out/libCofferSync.a" "$out/libCofferCrypto.a" -lsodium -largon2 -o "$out/bundle-reader"
fi
cp -n Fuzz/BundleReader/corpus/* "$out/corpus/" 2>/dev/null || true
cd "$out"
# -rss_limit_mb: a record may announce 64 MiB; -max_len bounds inputs.
./bundle-reader corpus -max_total_time="$seconds" -max_len=200000 -rss_limit_mb=2048 -print_final_stats=1 2>&1 | tee fuzz.log | grep -E "^#[0-9]+ +(INITED|DONE|pulse)|stat::|ERROR|crash|SUMMARY" >&2
