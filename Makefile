# Coffer — build, test, install, demo, bench.
# On a fresh Debian machine: `make demo` and `make test` do all set-up.

PREFIX ?= /usr/local
SWIFT ?= swift
APT_PACKAGES := libsodium-dev libargon2-dev libsqlite3-dev pkg-config python3 python3-jsonschema

.PHONY: all deps build release test check-layers install uninstall demo bench clean

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

build: deps
	$(SWIFT) build

# The Swift runtime and Foundation linked statically: start-up drops from
# ~30 ms to ~12 ms (no dynamic symbol resolution of libswiftCore/Foundation),
# which is most of a `coffer get` with a session (docs/benchmarks-sessions.md).
RELEASE_FLAGS ?= --static-swift-stdlib

release: deps
	$(SWIFT) build -c release $(RELEASE_FLAGS)

test: deps check-layers
	$(SWIFT) build
	$(SWIFT) test

# Fails when a target imports a module its layer must not (docs/architecture.md).
check-layers:
	@bash scripts/check-layers.sh

install: release
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 .build/release/coffer $(DESTDIR)$(PREFIX)/bin/coffer

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/coffer

demo: build
	@bash scripts/demo.sh "$$($(SWIFT) build --show-bin-path)/coffer"

bench: release
	@bash scripts/bench.sh "$$($(SWIFT) build -c release $(RELEASE_FLAGS) --show-bin-path)/coffer"

clean:
	rm -rf .build
