#!/usr/bin/env bash
# Kafka test server for rsm-metadata's Kafka-topic manager: one KRaft node (broker and controller in one
# JVM) of org.apache.kafka:kafka_2.13 from Maven Central, on free loopback ports, internal topics with
# replication factor 1, no tiered storage.
#   kafka.sh install   resolve the broker's class path with Maven (idempotent; ~/.m2 keeps the jars)
#   kafka.sh start     install if missing, format a fresh log directory, start, print `export` lines:
#                      RSM_TEST_KAFKA_BOOTSTRAP (the broker's address) and RSM_TEST_KAFKA_CLASSPATH (the file
#                      holding the broker's class path, for tests that run Kafka's own classes)
#   kafka.sh env       print the `export` lines of the running server again
#   kafka.sh stop      stop it
# Use: eval "$(tools/servers/kafka.sh start)"
# Environment: KAFKA_VERSION (default 4.4.0), KAFKA_START_TIMEOUT (seconds, default 120),
# KAFKA_JAVA_OPTS (default -Xmx512m).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
DIR="$RUN_DIR/kafka"
PIDFILE="$DIR/pid"
CLASSPATH_FILE="$SERVERS_HOME/kafka-$KAFKA_VERSION.classpath"
START_TIMEOUT=${KAFKA_START_TIMEOUT:-120}
read -r -a JAVA_OPTS <<<"${KAFKA_JAVA_OPTS:--Xmx512m}"

installed() {
  [ -s "$CLASSPATH_FILE" ] || return 1
  local jar IFS=:
  for jar in $(cat "$CLASSPATH_FILE"); do
    [ -f "$jar" ] || return 1
  done
}

install() {
  if installed; then
    return 0
  fi
  command -v java >/dev/null || die "java not found (Java 17 is needed)"
  command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
  say "resolving the class path of Kafka $KAFKA_VERSION from Maven Central into $CLASSPATH_FILE"
  mkdir -p "$SERVERS_HOME"
  # The broker-runtime pom is the Java tests' own: kafka_2.13 plus a log4j binding.
  mvn -B -q -Dstyle.color=never -f "$ROOT/java-bindings/broker-runtime/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
    dependency:build-classpath -Dmdep.outputFile="$CLASSPATH_FILE" >&2 ||
    die "mvn could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION"
  installed || die "the class path of Kafka $KAFKA_VERSION names missing jars"
}

java_cmd() {
  java "${JAVA_OPTS[@]}" -Dlog4j2.configurationFile="$DIR/log4j2.properties" -cp "$(cat "$CLASSPATH_FILE")" "$@"
}

start() {
  install
  stop_previous "$PIDFILE" kafka
  rm -rf "$DIR"
  mkdir -p "$DIR"
  local port cport log props
  port=$(free_port)
  cport=$(free_port)
  while [ "$cport" = "$port" ]; do cport=$(free_port); done
  log="$DIR/broker.log"
  props="$DIR/server.properties"
  cat >"$props" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$DIR/kafka-logs
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPS
  cat >"$DIR/log4j2.properties" <<LOG4J
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p [%t] %c - %m%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
LOG4J
  local cluster_id
  # As Kafka's Uuid.randomUuid: never an id whose text starts with '-', which the format tool's argument
  # parser takes for an option (1 run in 64 failed with "--cluster-id: expected one argument").
  cluster_id=$(python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s)
        break
')
  java_cmd kafka.tools.StorageTool format -t "$cluster_id" -c "$props" >"$DIR/format.out" 2>&1 ||
    { cat "$DIR/format.out" >&2; die "formatting the Kafka log directory failed"; }
  start_bg "$PIDFILE" "$DIR/broker.out" java "${JAVA_OPTS[@]}" -Dlog4j2.configurationFile="$DIR/log4j2.properties" \
    -cp "$(cat "$CLASSPATH_FILE")" kafka.Kafka "$props"
  # Ready: the broker logged that it started (it answers metadata requests then) and the port accepts.
  local i
  for ((i = 0; i < START_TIMEOUT * 10; i++)); do
    if grep -q "Kafka Server started" "$log" 2>/dev/null &&
      python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 1).close()" 2>/dev/null; then
      break
    fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      say "the broker exited; last lines of its logs:"
      tail -n 40 "$DIR/broker.out" "$log" >&2 || true
      rm -f "$PIDFILE"
      exit 1
    fi
    sleep 0.1
  done
  if ((i >= START_TIMEOUT * 10)); then
    say "the broker did not start within ${START_TIMEOUT}s; last lines of $log:"
    tail -n 40 "$log" >&2 || true
    stop_pid "$PIDFILE"
    exit 1
  fi
  say "kafka $KAFKA_VERSION on 127.0.0.1:$port (pid $(cat "$PIDFILE"), log $log)"
  emit_env "$DIR/env" <<ENV
export RSM_TEST_KAFKA_BOOTSTRAP=127.0.0.1:$port
export RSM_TEST_KAFKA_CLASSPATH=$(printf %q "$CLASSPATH_FILE")
ENV
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  env) cat "$DIR/env" ;;
  stop) stop_pid "$PIDFILE" ;;
  *) die "usage: $0 install|start|env|stop" ;;
esac
