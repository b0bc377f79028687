# shellcheck shell=bash
# The server side shared by prometheus.sh (Debian's 2.42) and prometheus3.sh (Prometheus 3): a fresh
# TSDB under $DIR at every start, the test's scrape configuration, 127.0.0.1:$PORT. The sourcing
# script sets PORT, DIR, SERVER and PROMTOOL (commands) and defines install.

PIDFILE=$DIR/prometheus.pid

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
  "$PROMTOOL" check config "$DIR/prometheus.yml" >&2 || die "invalid config $cfg"
  # shellcheck disable=SC2086 # PROM_FLAGS holds several flags
  nohup "$SERVER" --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
    --web.listen-address="127.0.0.1:$PORT" --web.enable-lifecycle ${PROM_FLAGS:-} \
    >"$DIR/prometheus.log" 2>&1 &
  echo $! >"$PIDFILE"
  wait_for 30 ready || die "$SERVER not ready on $PORT; log: $DIR/prometheus.log"
  echo "127.0.0.1:$PORT"
}

stop() { stop_pid "$PIDFILE" 20; }

# prometheus_main dispatches the command line of the sourcing script.
prometheus_main() {
  case "${1:-}" in
    install) install; echo "$SERVER" ;;
    start) start ;;
    stop) stop ;;
    status) pid_alive "$PIDFILE" && ready ;;
    promtool) shift; install; "$PROMTOOL" "$@" ;;
    *) die "usage: $0 install|start|stop|status|promtool ARGS..." ;;
  esac
}
