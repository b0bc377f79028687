# otelcol-red: `make run` runs the collector with configs/default.yaml, `make test` runs every
# test (unit, then integration against real services it starts through scripts/).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

GO          ?= go
# The collector release (ocb's version too) comes from versions.txt, the one place it is written.
OCB_VERSION := $(shell awk '$$1 == "collector" {print $$2}' versions.txt)
TOOLS       := $(CURDIR)/.tools
BIN         := bin/otelcol-red
CONFIG      ?= configs/default.yaml
# Binaries are static (CGO off, set per build); tests keep cgo for -race.
# The mirror's checksum database lacks some contrib entries; go.sum files are committed instead.
export GONOSUMDB := github.com/open-telemetry/opentelemetry-collector-contrib
# Integration tests run one package at a time so no two packages share a service at once.
INTEGRATION := -tags integration -p 1 -count=1 -timeout 40m

.PHONY: all bump check-pins check-mdatagen mdatagen build stock-twin run test rules prometheus3 unit integration e2e test-faults-full test-graph-churn-full test-name-churn-full test-burst-full test-cardinality-full test-fuzz-full check-generated generate bench testbed testbed-short testbed-memory testbed-scaling testbed-graph testbed-native testbed-bundle lint image clean tools test-late-spans-full

all: build

# The builder is installed under a versioned name so that a bump installs the new one.
BUILDER     := $(TOOLS)/builder-$(OCB_VERSION)
$(BUILDER):
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS)/tmp-builder $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)
	mv $(TOOLS)/tmp-builder/builder $@ && rm -rf $(TOOLS)/tmp-builder

tools: $(BUILDER)

## build: bin/otelcol-red from the committed cmd/otelcol-red (a plain go build verified by go.sum)
build:
	@mkdir -p bin
	cd cmd/otelcol-red && CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o ../../$(BIN) .

## stock-twin: bin/otelcol-stock, the same job with stock components only (testbed/stock-builder-config.yaml)
stock-twin: $(BUILDER)
	@mkdir -p .cache
	$(BUILDER) --config testbed/stock-builder-config.yaml --skip-compilation >/dev/null
	@mkdir -p bin
	cd .cache/stock-twin && CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o ../../bin/otelcol-stock .

## run: the collector with configs/default.yaml (OTLP :4317/:4318, metrics :9464, health :13133)
run: build
	./$(BIN) --config=$(CONFIG)

## test: lint, generated-code drift, unit tests with -race, integration tests with real services,
## and the short testbed run (fails if ours falls below the stock twin or loses a span)
test: lint check-generated check-mdatagen build check-pins rules unit integration testbed-short

# Tests that -race would distort (allocation counts, timing bounds) skip themselves under it
# (raceEnabled, norace_test.go); the second line runs those packages once more without -race.
unit:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 $$(git ls-files '*norace_test.go' | grep -v '^testbed/' | xargs -n1 dirname | sort -u | sed 's#^#./#')
	cd testbed && $(GO) test -race -count=1 ./...
	cd deploy && $(GO) test -race -count=1 ./...
	cd exporter/elasticsearch && $(GO) test -race -count=1 ./...

## prometheus3: build Prometheus 3 and its promtool once (native histograms; ~4 min on two cores once its modules are downloaded), before the tests that use them
prometheus3:
	scripts/prometheus3.sh install >/dev/null

## rules: promtool checks and unit-tests the Prometheus rules in deploy/prometheus: the classic
## histogram tests with Debian's Prometheus 2.42 (the oldest the rules support), the native
## histogram tests with Prometheus 3's promtool (built with the server by make prometheus3)
rules: prometheus3
	scripts/prometheus.sh promtool check rules deploy/prometheus/rules.yaml
	cd deploy/prometheus && ../../scripts/prometheus.sh promtool test rules rules_test.yaml
	scripts/prometheus3.sh promtool check rules deploy/prometheus/rules.yaml
	cd deploy/prometheus && ../../scripts/prometheus3.sh promtool test rules rules_test.yaml rules-native_test.yaml

# integration runs the tests of the integration-tagged files only (scripts/integration-tests.sh):
# the packages' other tests ran in unit.
integration: build stock-twin prometheus3
	scripts/integration-tests.sh | while read -r dir run; do $(GO) test $(INTEGRATION) -run "$$run" "$$dir"; done
	cd testbed && ../scripts/integration-tests.sh e2e | while read -r dir run; do $(GO) test $(INTEGRATION) -run "$$run" "$$dir"; done
	$(MAKE) --no-print-directory e2e
	cd deploy && ../scripts/integration-tests.sh | while read -r dir run; do $(GO) test $(INTEGRATION) -run "$$run" "$$dir"; done

## e2e: the end-to-end suite (testbed/e2e) as two test processes at once, E2E_FIRST's tests in
## one and the others in the other: much of the suite waits on a broker, a restart or an outage,
## so the two take about half the time of one (9–10.5 against ~20 minutes on two cores). A service
## (Kafka, Elasticsearch, Prometheus, Redis) is held by one test at a time whatever its process,
## the other waiting for it (internal/testservice). The first runs the tests of Kafka and of
## Prometheus 2 (and, by name, three others), the second those of Elasticsearch and the rest; the
## two tests that need Kafka and Elasticsearch run last of the first, by when the second has
## usually finished with Elasticsearch (kafka_store_*_integration_test.go); if not, they wait.
E2E_FIRST := ^Test(Kafka|Dashboard|EdgeTier|GraphTier|Awkward|UniqueNameChurnStaysBoundedWithLayers)
e2e: build stock-twin prometheus3 image
	cd testbed && $(GO) test -tags integration -count=1 -run '^$$' ./e2e/ >/dev/null
	cd testbed && { $(GO) test $(INTEGRATION) -run '$(E2E_FIRST)' ./e2e/ & first=$$!; \
	  rc=0; $(GO) test $(INTEGRATION) -skip '$(E2E_FIRST)' ./e2e/ || rc=$$?; \
	  wait $$first || rc=$$?; exit $$rc; }

## test-faults-full: the long form of the fault tests: Elasticsearch down for 10 minutes under
## load (make test runs the same test with a 60 s outage), ~16 min in all
test-faults-full: build
	cd testbed && OTELCOL_RED_ES_OUTAGE=10m $(GO) test -tags integration -count=1 -timeout 30m -v \
	  -run '^TestESStoreSurvivesElasticsearchOutage$$' ./e2e/

## test-graph-churn-full: the long form of the tracegraph bound: a million client spans a minute
## that never get their server span, for 10 minutes (make test runs it for 45 s), ~11 min
test-graph-churn-full: build
	cd testbed && OTELCOL_RED_GRAPH_CHURN=10m $(GO) test -tags integration -count=1 -timeout 20m -v \
	  -run '^TestTraceGraphUnpairedStreamStaysBounded$$' ./e2e/

## test-name-churn-full: the long form of the series cap's bound: a million span names seen once
## a minute for 10 minutes (make test runs it for 45 s), with the default config and with every
## cardinality layer on (configs/cardinality.yaml, clustering learning every name), ~22 min
test-name-churn-full: build
	cd testbed && OTELCOL_RED_NAME_CHURN=10m $(GO) test -tags integration -count=1 -timeout 40m -v \
	  -run '^TestUniqueNameChurnStaysBounded(WithLayers)?$$' ./e2e/

## test-fuzz-full: the long form of the OTLP wire decoder's fuzzing against pdata (make test replays
## the seeds, the corpus and 52,854 deterministic mutations): FUZZTIME of coverage-guided inputs, 10 min by
## default; then each connector's wire path against its pdata path (the same metrics from any bytes, or
## both refuse), CONNECTOR_FUZZTIME each, 5 min by default
FUZZTIME ?= 10m
CONNECTOR_FUZZTIME ?= 5m
test-fuzz-full:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./internal/otlpwire/
	$(GO) test -run '^$$' -fuzz '^FuzzWireSameMetrics$$' -fuzztime $(CONNECTOR_FUZZTIME) -fuzzminimizetime 10s ./connector/tracegraph/
	$(GO) test -run '^$$' -fuzz '^FuzzWireSameMetrics$$' -fuzztime $(CONNECTOR_FUZZTIME) -fuzzminimizetime 10s ./connector/tracemetrics/

## test-burst-full: the long form of the hollow-snapshot test: a burst of 1.39M new calls series
## over a minute, scraped back to back during and after it (make test runs 19.5k series), ~5 min
test-burst-full: build
	cd testbed && OTELCOL_RED_BURST_SERIES=1390000 $(GO) test -tags integration -count=1 -timeout 20m -v \
	  -run '^TestBurstOfNewSeriesIsNeverHollow$$' ./e2e/

## test-cardinality-full: the long form of the cardinality scenario (make test runs the short one):
## a million spans named by ID fill the shipped max_series, then 20 services × 20 operations (and
## 5,000 real series at once) at 20,000 spans/s for 60 s, 5 s flushes, one core; and a dimension
## with a new value on every span. Every real series must hold ≥ 70% of its spans, ~7 min
test-cardinality-full: build
	cd testbed && OTELCOL_RED_CARDINALITY=full $(GO) test -tags integration -count=1 -timeout 40m -v \
	  -run '^TestCardinalityScenario' ./e2e/

## test-late-spans-full: the long form of the late-span policies' backlog drain: a gateway down for
## 10 minutes while 2000 spans/s go to Kafka, restarted under count_now, drop and separate at
## once, scraped by Prometheus (make test compresses the outage into a 2-minute backlog written
## at once), ~16 min
test-late-spans-full: build
	cd testbed && OTELCOL_RED_LATE_BACKLOG=10m $(GO) test -tags integration -count=1 -timeout 30m -v \
	  -run '^TestKafkaBacklogLateSpans$$' ./e2e/

## check-generated: fail when cmd/otelcol-red drifts from builder-config.yaml
check-generated: $(BUILDER)
	BUILDER=$(BUILDER) scripts/check-generated.sh

## bump: move every pin to another collector release (VERSION=v0.X.0, CONTRIB=v0.X.Y optional):
## versions.txt, both ocb manifests, every go.mod, cmd/otelcol-red; ends with check-pins
bump:
	@test -n "$(VERSION)" || { echo "usage: make bump VERSION=v0.X.0 [CONTRIB=v0.X.Y]"; exit 2; }
	scripts/bump.sh $(VERSION) $(CONTRIB)

## check-pins: fail when a pin (manifests, go.mod files, the built binary, versions named in the docs)
## disagrees with versions.txt
check-pins:
	scripts/check-pins.sh

## check-mdatagen: fail when a component's generated metadata, tests, documentation.md or README status
## section differ from what its metadata.yaml generates
check-mdatagen:
	scripts/mdatagen.sh check

## mdatagen: regenerate every component on mdatagen (scripts/mdatagen.sh DIR for one)
mdatagen:
	scripts/mdatagen.sh

## generate: rerun ocb on builder-config.yaml into cmd/otelcol-red
generate: $(BUILDER)
	$(BUILDER) --config builder-config.yaml --skip-compilation

## bench: ours against the stock twins in the same run (component benchmarks)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./...

## testbed: full load scenarios, bin/otelcol-red against the stock twin → testbed/results/
testbed: build stock-twin
	cd testbed && $(GO) run ./cmd/testbed

# Writes to the git-ignored results/raw/short so a CI run never overwrites the committed RESULTS.md.
testbed-short: build stock-twin
	cd testbed && $(GO) run ./cmd/testbed -short -out results/raw/short

## testbed-memory: memory and overload probes (1M series, scrape load, decode floor, Kafka staleness),
## one collector at a time, each killed above 10 GiB RSS → testbed/results/raw/memory/MEMORY.md
testbed-memory: build stock-twin
	cd testbed && $(GO) run ./cmd/testbed -memory -heap-profile -out results/raw/memory

## testbed-scaling: floor, ours and stock at GOMAXPROCS 1, 2, 4, 8 (those the host has a spare CPU for),
## each pinned to as many CPUs, at 1k and 100k series → testbed/results/raw/scaling/SCALING.md
testbed-scaling: build stock-twin
	cd testbed && $(GO) run ./cmd/testbed -scaling -out results/raw/scaling

## testbed-bundle: bin/testbed-bundle.tar.gz, the testbed, both collectors and the configs they read,
## laid out as in the repo, to run the probes and the scaling plan on a host without Go
## (testbed/README.md, "On a host without Go")
testbed-bundle: build stock-twin
	rm -rf bin/testbed-bundle && mkdir -p bin/testbed-bundle/bin bin/testbed-bundle/testbed
	cd testbed && CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o ../bin/testbed-bundle/testbed/testbed ./cmd/testbed
	cp bin/otelcol-red bin/otelcol-stock bin/testbed-bundle/bin/
	cp -r configs bin/testbed-bundle/
	cp -r testbed/configs bin/testbed-bundle/testbed/
	tar -C bin -czf bin/testbed-bundle.tar.gz testbed-bundle

## testbed-graph: our RED path, ours with tracegraph and stock with servicegraph on a call graph (100k RED
## series, 10k edges), one core each, ~5 min → testbed/results/GRAPH.md
testbed-graph: build stock-twin
	cd testbed && $(GO) run ./cmd/testbed -graph

## testbed-native: ours with exponential histograms served as native histograms against ours with classic
## ones and the stock twin's exponential histograms, at 100k series, one collector at a time
## → testbed/results/raw/native/NATIVE.md
testbed-native: build stock-twin
	cd testbed && $(GO) run ./cmd/testbed -native -out results/raw/native

## lint: gofmt and go vet over every module
lint:
	@out=$$(git ls-files '*.go' | grep -v '^cmd/otelcol-red/' | xargs gofmt -l); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@# The integration tag adds files and excludes none (no file is !integration), so one pass
	@# with it vets everything a pass without it would.
	$(GO) vet -tags integration ./...
	cd testbed && $(GO) vet -tags integration ./...
	cd deploy && $(GO) vet -tags integration ./...
	cd exporter/elasticsearch && $(GO) vet ./...

## image: otelcol-red:latest (and :<version>) from the Dockerfile, with docker, podman or buildah,
## no registry needed (scripts/image.sh; installs podman, buildah and runc from Debian when none is there)
image: build
	scripts/image.sh build

clean:
	rm -rf bin .cache/gencheck .cache/gencheck-config.yaml .cache/gencheck.log
