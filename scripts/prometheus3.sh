#!/usr/bin/env bash
# Prometheus 3 on 127.0.0.1:${PROM3_PORT:-19091}, for tests of native histograms. Debian ships
# Prometheus 2.42; Prometheus 3 (native histograms stable, scrape_native_histograms) is built once
# from its Go module, pinned, and cached under $STATE (about 8 minutes cold; the web UI's assets are
# not embedded that way, the API and scraping are all the tests use).
#   PROM_CONFIG=scrape.yml scripts/prometheus3.sh start   (a fresh TSDB at every start)
#   scripts/prometheus3.sh stop|status|install
#   scripts/prometheus3.sh promtool ARGS...   (Prometheus 3's promtool, built with it: its rule
#                                              tests read native histogram series, 2.42's do not)
source "$(dirname "$0")/lib.sh"

# v0.316.0 of github.com/prometheus/prometheus is Prometheus 3.x.
VERSION=v0.316.0
PORT=${PROM3_PORT:-19091}
DIR=$STATE/prometheus3
BIN=$DIR/bin-$VERSION/prometheus
PROMTOOL=$DIR/bin-$VERSION/promtool
PIDFILE=$DIR/prometheus.pid

# install builds the server and promtool in one go command, which compiles what they share once
# and both in parallel.
install() {
  [ -x "$BIN" ] && [ -x "$PROMTOOL" ] && return 0
  command -v go >/dev/null || die "go is required to build Prometheus 3"
  log "building Prometheus 3 ($VERSION) and its promtool from the Go module, once"
  mkdir -p "$(dirname "$BIN")"
  GOBIN=$(dirname "$BIN") CGO_ENABLED=0 go install \
    "github.com/prometheus/prometheus/cmd/prometheus@$VERSION" \
    "github.com/prometheus/prometheus/cmd/promtool@$VERSION" >&2 ||
    die "go install of github.com/prometheus/prometheus/cmd/{prometheus,promtool}@$VERSION failed"
  [ -x "$BIN" ] && [ -x "$PROMTOOL" ] || die "$BIN or $PROMTOOL missing after go install"
}

ready() { curl -fsS "http://127.0.0.1:$PORT/-/ready"; }

start() {
  install
  local cfg=${PROM_CONFIG:-}
  [ -n "$cfg" ] || die "PROM_CONFIG must name a scrape configuration file"
  [ -f "$cfg" ] || die "PROM_CONFIG=$cfg does not exist"
  # A test brings its own scrape targets, so a running server is restarted with the new config.
  stop
  port_open "$PORT" && die "port $PORT is taken by another process"
  rm -rf "$DIR/data"; mkdir -p "$DIR/data"
  cp "$cfg" "$DIR/prometheus.yml"
  nohup "$BIN" --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
    --web.listen-address="127.0.0.1:$PORT" --web.enable-lifecycle \
    >"$DIR/prometheus.log" 2>&1 &
  echo $! >"$PIDFILE"
  wait_for 30 ready || die "prometheus 3 not ready on $PORT; log: $DIR/prometheus.log"
  echo "127.0.0.1:$PORT"
}

stop() { stop_pid "$PIDFILE" 20; }

case "${1:-}" in
  install) install; echo "$BIN" ;;
  start) start ;;
  stop) stop ;;
  status) pid_alive "$PIDFILE" && ready ;;
  promtool) shift; install; "$PROMTOOL" "$@" ;;
  *) die "usage: $0 install|start|stop|status|promtool ARGS..." ;;
esac
