#!/usr/bin/env bash
# Debian's redis-server on 127.0.0.1:${REDIS_PORT:-16379}, for tests.
#   scripts/redis.sh start|stop|status|cli ARGS...
source "$(dirname "$0")/lib.sh"

PORT=${REDIS_PORT:-16379}
DIR=$STATE/redis
PIDFILE=$DIR/redis.pid

start() {
  apt_install redis-server redis-server redis-tools
  mkdir -p "$DIR"
  if pid_alive "$PIDFILE" && redis-cli -p "$PORT" ping >/dev/null 2>&1; then
    echo "127.0.0.1:$PORT"; return 0
  fi
  port_open "$PORT" && die "port $PORT is taken by another process"
  # No persistence (tests want a clean server each start); DEBUG is enabled from the local
  # connection because the hotspot test uses DEBUG SLEEP to make a slow command.
  redis-server --bind 127.0.0.1 --port "$PORT" --daemonize yes --pidfile "$PIDFILE" \
    --dir "$DIR" --save '' --appendonly no --logfile "$DIR/redis.log" \
    --enable-debug-command local >&2
  wait_for 10 redis-cli -p "$PORT" ping || die "redis did not answer on $PORT; log: $DIR/redis.log"
  echo "127.0.0.1:$PORT"
}

stop() {
  if pid_alive "$PIDFILE"; then
    redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
    stop_pid "$PIDFILE" 10
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) pid_alive "$PIDFILE" && redis-cli -p "$PORT" ping ;;
  cli) shift; redis-cli -p "$PORT" "$@" ;;
  *) die "usage: $0 start|stop|status|cli ARGS..." ;;
esac
