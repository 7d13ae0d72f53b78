# imgcache: `make run` shows it working, `make test` proves it.
# Both install the Debian packages they need first (apt-get; sudo when not root).

SWIFT_DIR ?= /opt/swift/usr/bin
export PATH := $(SWIFT_DIR):$(PATH)
SWIFT ?= swift
PREFIX ?= /usr/local
DESTDIR ?=

# C libraries (headers for the build, shared objects loaded at run time, hiredis
# for Redis remote stores), nginx (and openssl for a test certificate; zsh and fish to try the completions; jq, man-db,
# file and curl, which the recipes in README.md and Docs/ use), redis-server for the tests and the demo, systemd (its
# analyzer and socket activator, for the server's units) and wrk (load on the server), and chromium
# (headless, to look at the pages fetch --html and list --html write), valgrind (instructions counted); moto's S3
# server and wsgidav (Python, scripts/pip-install.sh) for the S3 and WebDAV tests; hyperfine,
# wget, curl, aria2, GNU time, perf (system calls per URL), Pillow (the corpus, and the codec comparison) and
# vipsthumbnail for benchmarks.
BUILD_PACKAGES := libcurl4-openssl-dev libssl-dev libpng-dev libjpeg-dev libwebp-dev libgif-dev libhiredis-dev pkgconf \
	libavif-dev libheif-dev libjxl-dev libtiff-dev librsvg2-dev liblcms2-dev libarchive-dev libseccomp-dev
TEST_PACKAGES := nginx openssl zsh fish jq man-db file curl redis-server parallel strace libgs-common chromium valgrind binutils \
	systemd wrk debootstrap lintian
BENCH_PACKAGES := hyperfine wget curl aria2 time python3-pil libvips-tools linux-perf \
	libavif-bin libheif-examples libjxl-tools librsvg2-bin

RELEASE_BIN := .build/release/imgcache
# The version is ImgCache.version, the one `imgcache --version` prints.
VERSION := $(shell sed -n 's/.*static let version = "\(.*\)".*/\1/p' Sources/ImgCacheCore/ImgCache.swift)
DEB := .build/deb/imgcache_$(VERSION)-1_$(shell dpkg --print-architecture).deb
SERVE_BIN := .build/release/imgcache-serve
# The last commit that decoded in the imgcache process itself: `make bench` times thumbnails
# against it, to show what decode workers cost.
IN_PROCESS_BASELINE := b03c4aa

.PHONY: all deps test-deps bench-deps build test run install deb package-test generate bench fuzz soak clean

all: build

# Installs only what is missing, so it is a fast no-op on a ready machine.
deps:
	@scripts/apt-install.sh $(BUILD_PACKAGES) $(TEST_PACKAGES)

test-deps: deps
	@scripts/pip-install.sh

bench-deps: deps
	@scripts/apt-install.sh $(BENCH_PACKAGES)
	@scripts/pip-install.sh --bench
	@scripts/pip-install.sh --img2dataset

# A release binary with the Swift runtime linked in statically: it starts fast
# and runs on a machine without the toolchain. Without a $ORIGIN run path, the
# dynamic loader looks for libc and libstdc++ only where they are (about 40
# failed system calls less at every start).
build: deps
	$(SWIFT) build -c release --static-swift-stdlib --disable-local-rpath --product imgcache
	$(SWIFT) build -c release --static-swift-stdlib --disable-local-rpath --product imgcache-serve

# The fuzzer is built too (unoptimised) and run once over its corpus, so its
# targets cannot fall behind the code they drive. Then the release binary's work
# is counted in instructions (callgrind: the same count every run) and held to
# its limits, the numbers printed so that a change's cost shows in the log.
test: test-deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	scripts/fuzz.sh --build-only
	$(SWIFT) build -c release --static-swift-stdlib --disable-local-rpath --product imgcache
	scripts/count-instructions.sh $(RELEASE_BIN) --check
	$(MAKE) package-test

# The Debian package (dpkg-deb), checked by lintian; its overrides are explained in
# packaging/debian/lintian-overrides.
deb: build
	scripts/make-deb.sh

# The package installed by apt in a new Debian 12 root (debootstrap) and used there.
package-test: deb
	lintian --fail-on error,warning --info $(DEB)
	scripts/package-test.sh $(DEB)

run: build
	scripts/demo.sh $(RELEASE_BIN)

install: build
	install -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(PREFIX)/share/man/man1" \
		"$(DESTDIR)$(PREFIX)/share/bash-completion/completions" \
		"$(DESTDIR)$(PREFIX)/share/zsh/site-functions" \
		"$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d"
	install -m 755 $(RELEASE_BIN) "$(DESTDIR)$(PREFIX)/bin/imgcache"
	install -m 755 $(SERVE_BIN) "$(DESTDIR)$(PREFIX)/bin/imgcache-serve"
	install -m 644 Docs/imgcache.1 "$(DESTDIR)$(PREFIX)/share/man/man1/imgcache.1"
	install -m 644 completions/imgcache.bash "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/imgcache"
	install -m 644 completions/_imgcache "$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_imgcache"
	install -m 644 completions/imgcache.fish "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/imgcache.fish"

# Rewrites the man page and completion scripts from the command table
# (a test fails when the committed ones differ from it).
generate: build
	$(RELEASE_BIN) help --man > Docs/imgcache.1
	$(RELEASE_BIN) completions bash > completions/imgcache.bash
	$(RELEASE_BIN) completions zsh > completions/_imgcache
	$(RELEASE_BIN) completions fish > completions/imgcache.fish

bench: build bench-deps test-deps
	$(SWIFT) build -c release --static-swift-stdlib --product imgcache-codec-bench
	scripts/bench.sh $(RELEASE_BIN) Docs/PERFORMANCE.md
	scripts/bench-downloads.sh $(RELEASE_BIN) Docs/PERFORMANCE.md 2000
	scripts/count-instructions.sh $(RELEASE_BIN) Docs/PERFORMANCE.md
	scripts/bench-remote.sh $(RELEASE_BIN) Docs/PERFORMANCE.md 2000
	scripts/bench-remote-faults.sh $(RELEASE_BIN) Docs/PERFORMANCE.md 500
	scripts/bench-cache.sh $(RELEASE_BIN) Docs/PERFORMANCE.md 100000
	scripts/bench-codecs.sh .build/release/imgcache-codec-bench Docs/PERFORMANCE.md 2000
	scripts/bench-formats.sh .build/release/imgcache-codec-bench Docs/PERFORMANCE.md 20
	scripts/bench-variants.sh $(RELEASE_BIN) Docs/PERFORMANCE.md 2000 .build/img2dataset/bin/img2dataset \
		"$$(scripts/build-baseline.sh $(IN_PROCESS_BASELINE))"
	scripts/bench-datasets.sh $(RELEASE_BIN) Docs/PERFORMANCE.md 2000 .build/img2dataset/bin/img2dataset
	scripts/bench-sites.sh $(RELEASE_BIN) Docs/PERFORMANCE.md 200
	scripts/bench-serve.sh $(RELEASE_BIN) Docs/PERFORMANCE.md 2000

# Random SIGKILLs across mixed commands for SOAK_SECONDS (not part of `make
# test`, which runs a few rounds); the result goes to Docs/SOAK.md.
SOAK_SECONDS ?= 300
soak: deps
	$(SWIFT) build --build-tests
	IMGCACHE_SOAK_SECONDS=$(SOAK_SECONDS) IMGCACHE_SOAK_REPORT=$(CURDIR)/Docs/SOAK.md \
		$(SWIFT) test --skip-build --filter SoakTests

# libFuzzer targets for the sniffer and each decoder, FUZZ_SECONDS each (not part
# of `make test`); crashers are kept under Tests/Fixtures/fuzz/crashers/.
FUZZ_SECONDS ?= 60
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

clean:
	rm -rf .build
