#!/usr/bin/env bash
# Prometheus 3 on 127.0.0.1:${PROM3_PORT:-19091}, for tests of native histograms. Debian ships
# Prometheus 2.42; Prometheus 3 (native histograms stable, scrape_native_histograms) is built once
# from its Go module, pinned, and cached under $STATE (about 4 minutes with its promtool on two
# cores once the modules are downloaded; the web UI's assets are not embedded that way, the API
# and scraping are all the tests use).
#   PROM_CONFIG=scrape.yml scripts/prometheus3.sh start   (a fresh TSDB at every start)
#   scripts/prometheus3.sh stop|status|install
#   scripts/prometheus3.sh promtool ARGS...   (Prometheus 3's promtool, built with it: its rule
#                                              tests read native histogram series, 2.42's do not)
source "$(dirname "$0")/lib.sh"

# v0.316.0 of github.com/prometheus/prometheus is Prometheus 3.x.
VERSION=v0.316.0
PORT=${PROM3_PORT:-19091}
DIR=$STATE/prometheus3
SERVER=$DIR/bin-$VERSION/prometheus
PROMTOOL=$DIR/bin-$VERSION/promtool

# install builds the server and promtool in one go command, which compiles what they share once
# and both in parallel. remove_all_sd (Prometheus' own build tag) leaves out every service
# discovery but file and static targets, the tests' only ones: the cloud and Kubernetes clients
# were more than half of the build time.
install() {
  [ -x "$SERVER" ] && [ -x "$PROMTOOL" ] && return 0
  command -v go >/dev/null || die "go is required to build Prometheus 3"
  log "building Prometheus 3 ($VERSION) and its promtool from the Go module, once"
  mkdir -p "$(dirname "$SERVER")"
  GOBIN=$(dirname "$SERVER") CGO_ENABLED=0 go install -tags remove_all_sd \
    "github.com/prometheus/prometheus/cmd/prometheus@$VERSION" \
    "github.com/prometheus/prometheus/cmd/promtool@$VERSION" >&2 ||
    die "go install of github.com/prometheus/prometheus/cmd/{prometheus,promtool}@$VERSION failed"
  [ -x "$SERVER" ] && [ -x "$PROMTOOL" ] || die "$SERVER or $PROMTOOL missing after go install"
}

source "$(dirname "$0")/prometheus-server.sh"
prometheus_main "$@"
