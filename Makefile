# Everything a developer or CI runs. Needs Go and a C compiler (cgo: SQLite,
# sd-journal); scripts/install-deps.sh installs the Debian packages it lacks.
GO      ?= go
# The Go release everything is built and tested with: go1.26.8 (the machine's)
# has reachable standard-library vulnerabilities (crypto/x509, net/http) that
# go1.27.3 fixes. The go command takes it from the module proxy on first use
# (about 76 MB, once per machine); a machine's own Go ignores go.mod's
# toolchain line under GOTOOLCHAIN=local, so it is set here for every target
# and every script and test a target starts.
export GOTOOLCHAIN := go1.27.3
BIN     := bin/analyzer
DB      ?= analyzer.db
LISTEN  ?= 127.0.0.1:8080
EXAMPLE := examples/dankserver-night-ladder.journal.json examples/dankclaw-day.journal.json

.PHONY: all build test bench fuzz demo explain clean deps test-deps vulncheck deb pgo schema

all: build

deps:
	scripts/install-deps.sh build

test-deps:
	scripts/install-deps.sh test

VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)
# gin's nomsgpack tag leaves out its MessagePack codec (ugorji/go), which no
# route uses: a quarter less text and ~6 MiB less resident memory per run
# (the kernel maps the binary's text in large folios).
TAGS    ?= nomsgpack

build: deps
	$(GO) build -tags "$(TAGS)" -ldflags "-X main.buildVersion=$(VERSION)" -o $(BIN) ./cmd/analyzer

# The main job on the bundled example: explain it, record it, serve the UI
# (without following this host's journal or writing notes into it).
demo: build
	$(BIN) explain $(EXAMPLE)
	$(BIN) replay --db $(DB) $(EXAMPLE)
	$(BIN) serve --db $(DB) --listen $(LISTEN) --no-journal

explain: build
	$(BIN) explain $(EXAMPLE)

# -race on the packages whose goroutines share state: the live pipeline, the
# rule reloader and the DFAs built as lines reach their states, the web
# server, the store, the push receiver and pusher, the journal follower, the
# notes writer, ingest's read-ahead, and the commands that wire them; a
# data race fails the tests. The rest (tracker, judge, rules' matcher,
# catalog, ladder, report, deploy) judges on one goroutine:
# -race finds nothing there and made it five times slower (the corpus runs),
# so it runs once without. RACE_FREE lists those packages; a package that
# starts a goroutine fails TestRaceFreePackagesStartNoGoroutine
# (internal/race) and moves to the -race run.
RACE_FREE := catalog deploy domain judge ladder migrations progress report rules rules/ruletest rules/suggest tracker internal/when
race_free_re := $(subst $(eval) ,|,$(RACE_FREE))
test: test-deps build
	$(GO) vet -tags "$(TAGS)" ./...
	$(GO) test -tags "$(TAGS)" -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v -E '^github.com/llmfleet/analyzer/($(race_free_re))$$')
	$(GO) test -tags "$(TAGS)" -race -count=1 -run 'Manager|Reload|Concurrent' ./rules/
	$(GO) test -tags "$(TAGS)" -count=1 -timeout 30m $(addprefix ./,$(RACE_FREE))
	# Under -race it damages every 7th record of the export; here, every one.
	$(GO) test -tags "$(TAGS)" -count=1 -run 'TestExportKeepsEveryOtherRecord' ./ingest/
	$(BIN) rules test

# Every fuzz target for FUZZTIME each (CI runs them for seconds; this, long).
FUZZTIME ?= 10m
fuzz: deps
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# Throughput and peak memory against jq, grep and journalctl on the same
# content, page and note latency (see scripts/bench.sh).
bench: build
	scripts/install-deps.sh bench
	scripts/bench.sh

# cmd/analyzer/default.pgo, the CPU profile every go build of the analyzer
# is optimized with (profile-guided optimization), from explain and replay
# of the bench's two journals; needs ../shared/tools (SHARED_TOOLS).
pgo: deps
	scripts/pgo-profile.sh

# migrations/schema.snapshot, the schema a new database is created with:
# every migration file applied in order (run after adding one; a test
# fails until then).
schema: deps
	$(GO) run ./cmd/schema-snapshot > migrations/schema.snapshot.new
	mv migrations/schema.snapshot.new migrations/schema.snapshot

clean:
	rm -rf bin $(DB) $(DB)-wal $(DB)-shm

# A Debian package of the stamped binary, its unit, catalog and examples.
deb: build
	scripts/deb.sh $(BIN) $(VERSION) bin/llmfleet-analyzer_$(VERSION).deb

# govulncheck ./... (offline: against the golang.org/x/vulndb module's data).
vulncheck:
	scripts/vulncheck.sh
