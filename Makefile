# Coffer — build, test, install, demo, bench.
# On a fresh Debian machine: `make demo` and `make test` do all set-up.

PREFIX ?= /usr/local
SWIFT ?= swift
# libxml2-dev, zlib1g-dev and liblzma-dev hold the static libraries the
# release build links (STATIC_LIBS below).
APT_PACKAGES := libsodium-dev libargon2-dev libsystemd-dev libgmp-dev libsqlite3-dev libxml2-dev zlib1g-dev liblzma-dev pkg-config python3 python3-jsonschema

.PHONY: help-topics format format-check all deps deps-interop deps-peers bench-peers man build release release-check test test-interop test-faults check-layers install uninstall demo bench docs clean fuzz

all: build

# Installs the system libraries (and Python's jsonschema, used by tests to
# validate --json output) when missing. Idempotent.
deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "make deps: installing$$missing"; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "make deps: error: apt-get not found; install$$missing with your package manager" >&2; exit 1; \
	fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=""; \
	elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; \
	else echo "make deps: error: need root to install$$missing; run: sudo apt-get install$$missing" >&2; exit 1; fi; \
	$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null || { \
	  echo "make deps: error: apt-get could not install$$missing" >&2; exit 1; }

# Real programs the interoperability and fault-injection suites drive
# (pass with pass-otp, gopass and gpg, keepassxc-cli, git, an X server and clipboard, Syncthing,
# strace, the Secret Service clients; libsecret-1-dev, gcc and make build git's libsecret credential
# helper, which Debian ships as source only). Installed only for `make test-interop` / `make test-faults`.
INTEROP_APT_PACKAGES := pass pass-extension-otp gopass gnupg keepassxc python3-pykeepass git xvfb xclip syncthing strace faketime expect zsh fish openssh-client openssh-server dbus-daemon dbus-bin libsecret-tools python3-secretstorage python3-keyring libsecret-1-dev gcc make

deps-interop:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(INTEROP_APT_PACKAGES)"

build: deps
	$(SWIFT) build

# The Swift runtime and Foundation linked statically: start-up drops from
# ~30 ms to ~12 ms (no dynamic symbol resolution of libswiftCore/Foundation),
# which is most of a `coffer get` with a session (docs/benchmarks-sessions.md).
# A position-dependent executable (-no-pie) needs no relative relocations at
# start-up: the loader's work drops by a quarter (84,786 relocations, ~170 page
# faults less; docs/benchmarks.md).
# Every library but libc, libm, libgcc_s and libsodium linked statically too
# (SQLite, libargon2, libxml2 with zlib and liblzma, libstdc++): each shared
# library costs the loader its mapping and symbol relocations on every start,
# and libxml2.so alone brought ICU 72 and libstdc++ with it; about 1.1 ms of
# CPU per `coffer get` (docs/benchmarks-cli.md, "Start-up").
# scripts/static-libs.sh links the .a files into STATIC_LIBS, searched before
# /usr/lib (through PKG_CONFIG_PATH: see the script), and writes the build
# flags for what it found into STATIC_LIBS/flags; Sources/CXMLICU forwards
# libxml2's ICU calls to Foundation's ICU. STATIC_LINK=0 links them shared.
# A security update of SQLite, libxml2, zlib, liblzma or libargon2 reaches
# this binary only by rebuilding it (`make release-check` prints the
# versions linked).
STATIC_LIBS := $(CURDIR)/.build/static-libs
STATIC_LINK ?= 1
# -disable-concrete-type-metadata-mangled-name-accessors: code compiled here
# gets the metadata of a concrete generic type (a Dictionary keyed by one of
# our types, a Set<String>) from its accessor, with the conformances passed
# in, instead of demangling its name at run time, which makes the runtime
# check each generic requirement by scanning all ~7,300 protocol
# conformance records of the binary (about 30 µs a look-up; a fifth of a
# `coffer get`'s own time; docs/benchmarks.md, issue 28).
# --no-export-dynamic: -static-stdlib links with -export-dynamic, which puts
# every public symbol of our modules and GRDB (~19,700) in the dynamic
# symbol table; the Swift runtime's start-up calls dladdr on the executable
# twice (Backtrace.cpp's runtime path), and dladdr scans that table linearly,
# touching 1.6 MB of it: 1.2 ms of a 4.3 ms `coffer get`. Nothing loads
# symbols from the executable (libsystemd is dlopen'ed RTLD_LOCAL and calls
# none of ours); scripts/release-check.sh keeps the table small.
RELEASE_FLAGS ?= --static-swift-stdlib -Xlinker -no-pie -Xlinker --no-export-dynamic -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors

release: deps
ifeq ($(STATIC_LINK),1)
	@bash scripts/static-libs.sh $(STATIC_LIBS) "$(SWIFT)"
	PKG_CONFIG_PATH="$(STATIC_LIBS)/pkgconfig$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}" $(SWIFT) build -c release $(RELEASE_FLAGS) $$(cat $(STATIC_LIBS)/flags)
else
	$(SWIFT) build -c release $(RELEASE_FLAGS)
endif

# The release binary as linked: no static library left shared, the same
# Argon2id keys and KeePass XML decoding as the debug build (run by CI).
release-check: release
	$(SWIFT) build --product coffer
	@bash scripts/release-check.sh "$$($(SWIFT) build -c release $(RELEASE_FLAGS) --show-bin-path)/coffer" "$$($(SWIFT) build --show-bin-path)/coffer"

test: deps check-layers format-check
	$(SWIFT) build
	$(SWIFT) test

# Tests that drive real programs (suites named *InteropTests). Skipped by
# plain `make test`; bounded in time (docs/benchmarks.md lists the times).
test-interop: deps deps-interop
	$(SWIFT) build
	COFFER_INTEROP=1 $(SWIFT) test --filter InteropTests

# Crash and fault injection (suites named *FaultTests), bounded in trials.
test-faults: deps deps-interop
	$(SWIFT) build
	COFFER_FAULTS=1 $(SWIFT) test --filter FaultTests

# libFuzzer on the bundle reader for FUZZ_SECONDS (default 60; docs/reliability.md).
fuzz: deps
	bash scripts/fuzz.sh

# Fails when a target imports a module its layer must not (docs/architecture.md).
check-layers:
	@bash scripts/check-layers.sh

# The code's layout is swift-format's, with the committed .swift-format
# (CONTRIBUTING.md): `make format` rewrites in place, `make format-check`
# (run by `make test`) fails on any line `make format` would change (it
# formats a copy) or any `swift format lint --strict` finding.
FORMAT_PATHS = Sources Tests Examples Package.swift
format:
	$(SWIFT) format format -i -r --parallel $(FORMAT_PATHS)

format-check:
	@if ! $(SWIFT) format --version >/dev/null 2>&1; then \
	  echo "format-check: this Swift toolchain has no swift-format (it ships with Swift 6); not checked" >&2; \
	else \
	  bash scripts/format-check.sh "$(SWIFT)" $(FORMAT_PATHS); \
	fi

# The texts of `coffer help TOPIC`, from docs/ (HelpTopicCLITests fails
# when they are stale).
help-topics:
	python3 scripts/gen-help-topics.py

# The manual pages (coffer.1 and one per verb, coffer.sync.1…), generated from the command definitions by
# swift-argument-parser's generate-manual plugin, from a debug build: built
# in release mode (its default) it would overwrite the statically linked
# release binary that `make install` copies.
man:
	$(SWIFT) package --allow-writing-to-package-directory generate-manual --configuration debug --multi-page
	@echo "man pages: .build/plugins/GenerateManual/outputs/coffer/*.1 (one per verb)"

install: release man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 -s .build/release/coffer $(DESTDIR)$(PREFIX)/bin/coffer
	install -m 0644 .build/plugins/GenerateManual/outputs/coffer/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	@# git runs `git-credential-coffer` for `credential.helper coffer` (docs/git-credential.md).
	printf '#!/bin/sh\n# git credential helper: git config --global credential.helper coffer\nexec "%s" git-credential "$$@"\n' "$(PREFIX)/bin/coffer" > $(DESTDIR)$(PREFIX)/bin/git-credential-coffer
	chmod 0755 $(DESTDIR)$(PREFIX)/bin/git-credential-coffer
	@# coffer secret-service (docs/secret-service.md): a systemd user unit and a
	@# D-Bus activation file, both off until the user turns them on.
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/user $(DESTDIR)$(PREFIX)/share/coffer/dbus-1
	sed 's#@BINDIR@#$(PREFIX)/bin#' dist/coffer-secret-service.service > $(DESTDIR)$(PREFIX)/lib/systemd/user/coffer-secret-service.service
	sed 's#@BINDIR@#$(PREFIX)/bin#' dist/org.freedesktop.secrets.service > $(DESTDIR)$(PREFIX)/share/coffer/dbus-1/org.freedesktop.secrets.service
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/user/coffer-secret-service.service $(DESTDIR)$(PREFIX)/share/coffer/dbus-1/org.freedesktop.secrets.service

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/coffer $(DESTDIR)$(PREFIX)/bin/git-credential-coffer $(DESTDIR)$(PREFIX)/share/man/man1/coffer.1 \
	  $(DESTDIR)$(PREFIX)/share/man/man1/coffer.*.1 $(DESTDIR)$(PREFIX)/lib/systemd/user/coffer-secret-service.service \
	  $(DESTDIR)$(PREFIX)/share/coffer/dbus-1/org.freedesktop.secrets.service

demo: build
	@bash scripts/demo.sh "$$($(SWIFT) build --show-bin-path)/coffer"

bench: release
	@bash scripts/bench.sh "$$($(SWIFT) build -c release $(RELEASE_FLAGS) --show-bin-path)/coffer"

# The peers `make bench-peers` times coffer against.
deps-peers:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="pass gopass gnupg keepassxc hyperfine bc gnome-keyring"

# coffer's everyday verbs against pass, gopass and keepassxc-cli on the same
# items, in the same run (docs/benchmarks.md).
bench-peers: release deps-peers
	@bash scripts/bench-peers.sh "$$($(SWIFT) build -c release $(RELEASE_FLAGS) --show-bin-path)/coffer"

# CofferKit's DocC documentation (Sources/CofferKit/CofferKit.docc), as a
# static site in .build/docs; open .build/docs/index.html through a web
# server (python3 -m http.server -d .build/docs), or see docs/cofferkit.md.
docs: deps
	$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation --target CofferKit \
	  --output-path .build/docs --transform-for-static-hosting

clean:
	rm -rf .build
