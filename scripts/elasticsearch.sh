#!/usr/bin/env bash
# Elasticsearch 7.17.25, one node on 127.0.0.1, for tests.
#   scripts/elasticsearch.sh start    starts the node (no-op when it runs); prints host:port
#   scripts/elasticsearch.sh stop     stops the node; its data stays for the next start
#   scripts/elasticsearch.sh reset    stops the node and deletes its data (indices, cluster state)
#   scripts/elasticsearch.sh status   prints host:port and exits 0 when the node answers
#
# Unlike kafka.sh, start keeps the data: fault tests stop the node in the middle of a run and
# count documents after the next start. Tests isolate themselves with an index name of their own.
#
# The engine comes as jars from Maven Central (scripts/elasticsearch/pom.xml, ~40 MB, fetched once
# into the cache), started by a small launcher (scripts/elasticsearch/src/...TestNode.java)
# compiled with javac: no tarball, no Docker. 7.17 is the oldest line the elasticsearchexporter
# accepts (its client rejects 7.10, which lacks the X-Elastic-Product header). No x-pack, no
# security: plain HTTP on 127.0.0.1. Needs a Java 17 JDK and Maven; installed with apt-get when
# missing.
# Ports: ES_HTTP_PORT (19200) for HTTP, ES_TRANSPORT_PORT (19300) for the transport layer.
source "$(dirname "$0")/lib.sh"

PORT=${ES_HTTP_PORT:-19200}
TRANSPORT_PORT=${ES_TRANSPORT_PORT:-19300}
ADDR=127.0.0.1:$PORT
DIR=$STATE/elasticsearch
LIB=$DIR/lib
CLASSES=$DIR/classes
HOME_DIR=$DIR/home
PIDFILE=$DIR/elasticsearch.pid
LOG=$DIR/elasticsearch.log
SRC=$ROOT/scripts/elasticsearch
LAUNCHER=$SRC/src/main/java/red/otelcol/es/TestNode.java

install() {
  apt_install javac openjdk-17-jdk-headless
  apt_install mvn maven
  apt_install curl curl
  # The marker is written last, so an interrupted download is redone instead of leaving a
  # classpath with jars missing.
  if [ ! -f "$LIB/.complete" ] || [ "$SRC/pom.xml" -nt "$LIB/.complete" ]; then
    log "fetching Elasticsearch 7.17.25 jars from Maven Central into $LIB"
    rm -rf "$LIB.tmp"
    mkdir -p "$DIR" "$ROOT/.cache/m2"
    if ! mvn -B -q -f "$SRC/pom.xml" -Dmaven.repo.local="$ROOT/.cache/m2" \
      dependency:copy-dependencies -DoutputDirectory="$LIB.tmp" >"$DIR/mvn.log" 2>&1; then
      tail -n 30 "$DIR/mvn.log" >&2
      die "mvn could not fetch the Elasticsearch jars; log: $DIR/mvn.log"
    fi
    rm -rf "$LIB" "$CLASSES"
    mv "$LIB.tmp" "$LIB"
    touch "$LIB/.complete"
  fi
  if [ ! -f "$CLASSES/.complete" ] || [ "$LAUNCHER" -nt "$CLASSES/.complete" ]; then
    rm -rf "$CLASSES"
    mkdir -p "$CLASSES"
    javac -d "$CLASSES" -cp "$LIB/*" "$LAUNCHER" >&2 || die "javac could not compile $LAUNCHER"
    touch "$CLASSES/.complete"
  fi
}

# ready waits for the primaries of existing indices, not only an open port: after a restart the
# exporter's first bulk request would otherwise meet unassigned shards.
ready() {
  curl -fs -o /dev/null --max-time 5 "http://$ADDR/_cluster/health?wait_for_status=yellow&timeout=1s"
}

running() { pid_alive "$PIDFILE" && port_open "$PORT"; }

# wait_ready waits up to $1 seconds for ready, and gives up at once if the JVM has exited.
wait_ready() {
  local deadline=$((SECONDS + $1))
  until ready; do
    pid_alive "$PIDFILE" || return 1
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

start() {
  install
  if running && ready; then echo "$ADDR"; return 0; fi
  pid_alive "$PIDFILE" && stop # a node that no longer answers is restarted
  port_open "$PORT" && die "port $PORT is taken by another process"
  port_open "$TRANSPORT_PORT" && die "port $TRANSPORT_PORT is taken by another process"
  mkdir -p "$HOME_DIR/config"
  cp "$SRC/log4j2.properties" "$HOME_DIR/config/log4j2.properties"
  # stdin/stdout/stderr are detached so that a caller reading this script's stdout (a Go test)
  # sees EOF when the script exits, not when the node does. The heap stays modest because tests
  # share a 2-core machine with the collector and other services.
  nohup java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true -Dfile.encoding=UTF-8 \
    -Dio.netty.allocator.numDirectArenas=0 -Des.networkaddress.cache.ttl=60 \
    -cp "$CLASSES:$LIB/*" red.otelcol.es.TestNode "$HOME_DIR" "$PORT" "$TRANSPORT_PORT" \
    </dev/null >>"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  # Ready in ~4 s on an idle machine; a loaded 2-core CI box has been seen taking a minute.
  if ! wait_ready 180; then
    tail -n 40 "$LOG" >&2
    stop
    die "elasticsearch did not become ready on $ADDR within 180 s; log: $LOG"
  fi
  echo "$ADDR"
}

stop() {
  # SIGTERM runs the launcher's shutdown hook, which closes the node cleanly (shards flushed),
  # so the next start recovers quickly.
  stop_pid "$PIDFILE" 30
}

reset() {
  stop
  rm -rf "$HOME_DIR"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  reset) reset ;;
  status) running && ready && echo "$ADDR" ;;
  *) die "usage: $0 start|stop|reset|status" ;;
esac
