#!/usr/bin/env bash
# Debian's prometheus (with promtool) on 127.0.0.1:${PROM_PORT:-19090}, for tests.
#   PROM_CONFIG=scrape.yml scripts/prometheus.sh start   (a fresh TSDB at every start)
#   PROM_FLAGS="--enable-feature=native-histograms" adds flags to the server's command line
#   scripts/prometheus.sh stop|status
#   scripts/prometheus.sh promtool ARGS...
source "$(dirname "$0")/lib.sh"

PORT=${PROM_PORT:-19090}
DIR=$STATE/prometheus
PIDFILE=$DIR/prometheus.pid

install() { apt_install prometheus prometheus; command -v promtool >/dev/null || die "promtool missing"; }

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
  promtool check config "$DIR/prometheus.yml" >&2 || die "invalid config $cfg"
  nohup prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
    --web.listen-address="127.0.0.1:$PORT" --web.enable-lifecycle ${PROM_FLAGS:-} \
    >"$DIR/prometheus.log" 2>&1 &
  echo $! >"$PIDFILE"
  wait_for 30 ready || die "prometheus not ready on $PORT; log: $DIR/prometheus.log"
  echo "127.0.0.1:$PORT"
}

stop() { stop_pid "$PIDFILE" 20; }

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) pid_alive "$PIDFILE" && ready ;;
  promtool) shift; install; promtool "$@" ;;
  *) die "usage: $0 start|stop|status|promtool ARGS..." ;;
esac
