# kinesis-shards: build, test and demo. `make test` and `make demo` do all the
# set-up on a fresh machine (Go modules, the emulators' npm packages).

GO       ?= go
BIN      ?= bin/kinesis-shards
EMU_DIR  := testdata/emulator
# npm ci writes this file last; it is newer than the lock once installed.
EMU_MARK := $(EMU_DIR)/node_modules/.package-lock.json
PKG      := github.com/kinesis-shards/kinesis-shards
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -s -w -X $(PKG)/cmd.version=$(VERSION) -X $(PKG)/cmd.commit=$(COMMIT) -X $(PKG)/cmd.date=$(DATE)
TEST_TIMEOUT ?= 30m
FUZZTIME ?= 30s

.PHONY: all build test test-kinesalite test-kinesis-mock lint fmt vet fuzz bench demo emulator clean docs release-check soak

GORELEASER ?= $(GO) run github.com/goreleaser/goreleaser/v2@v2.15.1
# Pinned, through go run: fetched once from the module proxy, then built
# from the module cache.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    ?= $(GO) run golang.org/x/tools/cmd/deadcode@v0.52.0

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

# The emulators (kinesis-mock and kinesalite) from the pinned lock file.
emulator: $(EMU_MARK)

$(EMU_MARK): $(EMU_DIR)/package.json $(EMU_DIR)/package-lock.json
	cd $(EMU_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# Every test. The commands run against the tool's own fake Kinesis (and
# fake DynamoDB), served by each test binary on a loopback port, so only Go
# is needed; the parity suite compares the fake with kinesis-mock and
# kinesalite, which is what the npm packages are installed for.
test:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory emulator; \
	else echo "npm not found: the parity suite will skip (every other test needs only Go)"; fi
	$(GO) test -timeout $(TEST_TIMEOUT) ./...

# The tests that talk to an emulator, against kinesis-mock or kinesalite
# instead of the fake (tests skip what a backend cannot do). EMULATOR_PKGS
# narrows them (CI: kinesalite on the packages that talk to an emulator).
EMULATOR_PKGS ?= ./...
test-kinesalite: emulator
	KINESIS_SHARDS_TEST_BACKEND=kinesalite $(GO) test -timeout $(TEST_TIMEOUT) $(EMULATOR_PKGS)
test-kinesis-mock: emulator
	KINESIS_SHARDS_TEST_BACKEND=kinesis-mock $(GO) test -timeout $(TEST_TIMEOUT) $(EMULATOR_PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

# gofmt, go vet, go mod tidy, staticcheck and deadcode (code no test or
# command reaches); what CI runs before the tests.
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	$(STATICCHECK) ./...
	@out=$$($(DEADCODE) -test ./...); if [ -n "$$out" ]; then echo "dead code:"; echo "$$out"; exit 1; fi

# Each fuzz target for FUZZTIME; anything found is kept under testdata/fuzz.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

BENCH_FLAGS ?=

# docs/BENCHMARKS.md: Go benchmarks, the binary against a loopback stub and the
# emulators, next to the AWS CLI (~13 min; BENCH_FLAGS=-quick: ~3 min).
# Needs node (make emulator), the AWS CLI and taskset.
bench: emulator
	$(GO) run ./internal/tools/bench $(BENCH_FLAGS)

# Starts a local Kinesis (kinesis-shards local; EMULATOR=kinesis-mock for
# the node emulator), runs the tool against it, stops it.
EMULATOR ?= local
demo: build $(if $(filter kinesis-mock,$(EMULATOR)),emulator)
	$(GO) run ./internal/tools/demo -bin $(BIN) -emulator $(EMULATOR)

# Man pages (docs/man) and the Markdown command reference (docs/reference),
# generated from the command tree; TestDocsUpToDate fails when they are stale.
docs:
	$(GO) run ./internal/tools/gendocs -out docs

# Validates .goreleaser.yaml and builds a local snapshot of every target into
# dist/ (nothing is published). goreleaser reads the git remote's URL without
# contacting it; a checkout without a remote gets the project's, so the
# snapshot's --version still carries the commit.
release-check:
	@git ls-remote --get-url >/dev/null 2>&1 || { \
	  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url \
	    GIT_CONFIG_VALUE_0=https://github.com/kinesis-shards/kinesis-shards.git; }; \
	set -e; $(GORELEASER) check; $(GORELEASER) release --snapshot --clean

# Ten minutes of writes, reshards, faults and tail restarts against
# kinesis-mock; writes the figures into docs/RELIABILITY.md. Not in CI.
SOAK_DURATION ?= 10m
soak: emulator build
	$(GO) run ./internal/tools/soak -bin $(BIN) -duration $(SOAK_DURATION)

clean:
	rm -rf bin dist build
