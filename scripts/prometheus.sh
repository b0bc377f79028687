#!/usr/bin/env bash
# Debian's prometheus (with promtool) on 127.0.0.1:${PROM_PORT:-19090}, for tests.
#   PROM_CONFIG=scrape.yml scripts/prometheus.sh start   (a fresh TSDB at every start)
#   PROM_FLAGS="--enable-feature=native-histograms" adds flags to the server's command line
#   scripts/prometheus.sh install|stop|status
#   scripts/prometheus.sh promtool ARGS...
source "$(dirname "$0")/lib.sh"

PORT=${PROM_PORT:-19090}
DIR=$STATE/prometheus
SERVER=prometheus
PROMTOOL=promtool

install() { apt_install prometheus prometheus; command -v promtool >/dev/null || die "promtool missing"; }

source "$(dirname "$0")/prometheus-server.sh"
prometheus_main "$@"
