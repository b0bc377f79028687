#!/usr/bin/env bash
# Apache Kafka 4.1.1, one KRaft node (broker + controller) on 127.0.0.1, for tests.
#   scripts/kafka.sh start                        fresh cluster (new cluster id, empty log dir); prints host:port
#   scripts/kafka.sh stop                         stops the broker; the log dir stays until the next start
#   scripts/kafka.sh resume                       starts again on the existing log dir (broker-restart tests)
#   scripts/kafka.sh status                       prints host:port and exits 0 when the broker is up
#   scripts/kafka.sh create-topic NAME PARTITIONS creates a topic (no-op when it exists)
#   scripts/kafka.sh topics                       lists topics
#   scripts/kafka.sh describe-group GROUP         committed offsets and lag of a consumer group
#
# The jars come from Maven Central (scripts/kafka/pom.xml, ~54 MB, fetched once into the cache):
# no tarball, no Docker. Needs Java 17+ and Maven; both are installed with apt-get when missing.
# Ports: KAFKA_PORT (19092) for clients, KAFKA_CONTROLLER_PORT (19093) for the controller quorum.
source "$(dirname "$0")/lib.sh"

PORT=${KAFKA_PORT:-19092}
CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-19093}
ADDR=127.0.0.1:$PORT
DIR=$STATE/kafka
LIB=$DIR/lib
DATA=$DIR/data
PIDFILE=$DIR/kafka.pid
LOG=$DIR/kafka.log
PROPS=$DIR/server.properties
SRC=$ROOT/scripts/kafka

# Tools are short-lived JVMs: C1 only and a small heap start them about twice as fast.
TOOL_OPTS=(-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true
  -Dlog4j2.StatusLogger.level=OFF "-Dlog4j.configuration=file:$SRC/tools-log4j.properties")

install() {
  apt_install java openjdk-17-jre-headless
  apt_install mvn maven
  # The marker is written last, so an interrupted download is redone instead of leaving a
  # classpath with jars missing.
  [ -f "$LIB/.complete" ] && return 0
  log "fetching Kafka 4.1.1 jars from Maven Central into $LIB"
  rm -rf "$LIB.tmp"
  mkdir -p "$DIR" "$ROOT/.cache/m2"
  if ! mvn -B -q -f "$SRC/pom.xml" -Dmaven.repo.local="$ROOT/.cache/m2" \
    dependency:copy-dependencies -DoutputDirectory="$LIB.tmp" >"$DIR/mvn.log" 2>&1; then
    tail -n 30 "$DIR/mvn.log" >&2
    die "mvn could not fetch the Kafka jars; log: $DIR/mvn.log"
  fi
  rm -rf "$LIB"
  mv "$LIB.tmp" "$LIB"
  touch "$LIB/.complete"
}

tool() {
  local class=$1; shift
  java "${TOOL_OPTS[@]}" -cp "$LIB/*" "$class" "$@"
}

# started tells whether the broker launched last logged that it finished starting: an open
# port alone does not mean it has caught up with the metadata log and answers requests. Only
# the lines after $LOG_FROM count, since resume appends to the log of the previous run.
LOG_FROM=1
started() {
  # grep reads to the end (no -q): an early exit would kill tail with SIGPIPE, and pipefail
  # would turn a match into a failure.
  port_open "$PORT" && tail -n "+$LOG_FROM" "$LOG" | grep 'Kafka Server started' >/dev/null
}

# ready asks the broker for its topic list, for status: it answers requests.
ready() {
  port_open "$PORT" && tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$ADDR" --list >/dev/null 2>&1
}

# new_cluster_id makes what `StorageTool random-uuid` prints (16 random bytes, URL-safe base64
# without padding) without starting a JVM for it. Like Kafka's own generator it never starts
# with '-', which the format command would take for an option.
new_cluster_id() {
  local id
  while :; do
    id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    [ "${id:0:1}" != "-" ] && break
  done
  echo "$id"
}

running() { pid_alive "$PIDFILE" && port_open "$PORT"; }

launch() {
  touch "$LOG"
  LOG_FROM=$(($(wc -l <"$LOG") + 1))
  # stdin/stdout/stderr are detached so that a caller reading this script's stdout (a Go test)
  # sees EOF when the script exits, not when the broker does.
  KAFKA_LOG_DIR=$DIR nohup java -Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.StatusLogger.level=OFF \
    "-Dlog4j.configuration=file:$SRC/log4j.properties" \
    -cp "$LIB/*" kafka.Kafka "$PROPS" </dev/null >>"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  if ! wait_for 120 started; then
    tail -n 40 "$LOG" >&2
    stop
    die "kafka did not become ready on $ADDR within 120 s; log: $LOG"
  fi
}

start() {
  install
  if running; then echo "$ADDR"; return 0; fi
  port_open "$PORT" && die "port $PORT is taken by another process"
  port_open "$CONTROLLER_PORT" && die "port $CONTROLLER_PORT is taken by another process"
  # A new cluster id and an empty log dir per start keep tests independent of each other.
  rm -rf "$DATA"
  mkdir -p "$DATA"
  sed -e "s|@BROKER_PORT@|$PORT|g" -e "s|@CONTROLLER_PORT@|$CONTROLLER_PORT|g" \
    -e "s|@LOG_DIR@|$DATA|g" "$SRC/server.properties.in" >"$PROPS"
  tool kafka.tools.StorageTool format -t "$(new_cluster_id)" -c "$PROPS" >"$DIR/format.log" 2>&1 ||
    { cat "$DIR/format.log" >&2; die "formatting $DATA failed"; }
  : >"$LOG"
  launch
  echo "$ADDR"
}

resume() {
  install
  if running; then echo "$ADDR"; return 0; fi
  [ -f "$PROPS" ] && [ -f "$DATA/meta.properties" ] || die "nothing to resume: run start first"
  port_open "$PORT" && die "port $PORT is taken by another process"
  launch
  echo "$ADDR"
}

stop() {
  # SIGTERM makes a controlled shutdown (the log is flushed and closed cleanly), which a resume
  # relies on; it takes a few seconds on a single node.
  stop_pid "$PIDFILE" 30
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  resume) resume ;;
  status) running && ready && echo "$ADDR" ;;
  create-topic)
    [ $# -eq 3 ] || die "usage: $0 create-topic NAME PARTITIONS"
    tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$ADDR" --create --if-not-exists \
      --topic "$2" --partitions "$3" --replication-factor 1 >&2
    ;;
  topics) tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$ADDR" --list ;;
  describe-group)
    [ $# -eq 2 ] || die "usage: $0 describe-group GROUP"
    tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$ADDR" \
      --describe --group "$2"
    ;;
  *) die "usage: $0 start|stop|resume|status|create-topic NAME PARTITIONS|topics|describe-group GROUP" ;;
esac
