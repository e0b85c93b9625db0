#!/usr/bin/env bash
# A MiniDFS cluster (Hadoop's in-JVM NameNode + DataNodes, jars from Maven Central) for the HDFS backend's
# tests. No Docker, no Hadoop install: Java 17 and Maven are enough.
#
#   tools/servers/minidfs.sh install   build the launcher and fetch the Hadoop jars into ~/.m2 (idempotent;
#                                      the first run on a fresh machine downloads them)
#   tools/servers/minidfs.sh start     install if needed, start the cluster in the background, wait until
#                                      it is ready, and print `export RSM_TEST_HDFS_URL=hdfs://127.0.0.1:PORT`
#                                      on stdout, with RSM_TEST_HDFS_NN_HTTP and RSM_TEST_HDFS_DN_HTTP (the
#                                      /jmx addresses; optional for the tests); everything else goes to
#                                      stderr, so:
#                                        eval "$(tools/servers/minidfs.sh start)"
#                                      A cluster this script already runs is reused.
#   tools/servers/minidfs.sh stop      stop the cluster this script started (by its pid file)
#   tools/servers/minidfs.sh status    say whether it runs, and where
#
# Environment: MINIDFS_PORT (NameNode port, default 0 = a free one), MINIDFS_DATANODES (default 1),
# MINIDFS_START_TIMEOUT (seconds, default 180), MINIDFS_JAVA_OPTS (default -Xmx1g).
# State, logs and build output live under target/servers/minidfs/ of the repository.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PROJECT=$ROOT/tools/servers/minidfs
STATE=$ROOT/target/servers/minidfs
BUILD=$STATE/build # the pom's <directory>
CLASSPATH_FILE=$BUILD/classpath.txt
STAMP=$BUILD/install.stamp
LOG=$STATE/minidfs.log
PID_FILE=$STATE/minidfs.pid
URL_FILE=$STATE/url
EXPORTS_FILE=$STATE/exports
MAIN=rsm.minidfs.MiniDfsServer

say() { printf 'minidfs: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}

fingerprint() {
  cat "$PROJECT/pom.xml" $(find "$PROJECT/src" -type f | sort) | sha256sum | cut -d' ' -f1
}

installed() {
  [[ -f $STAMP && -f $CLASSPATH_FILE && -f $BUILD/classes/rsm/minidfs/MiniDfsServer.class ]] || return 1
  [[ $(cat "$STAMP") == "$(fingerprint)" ]] || return 1
  local jar
  local IFS=:
  for jar in $(cat "$CLASSPATH_FILE"); do
    [[ -f $jar ]] || return 1
  done
}

cmd_install() {
  command -v java >/dev/null || die "java not found (Java 11+ is needed; the machines have 17)"
  command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
  if installed; then
    say "installed (up to date)"
    return 0
  fi
  say "installing: building the launcher and resolving the Hadoop jars into ~/.m2 (minutes when cold)"
  local t0=$SECONDS
  mkdir -p "$BUILD"
  if ! mvn -B -Dstyle.color=never -f "$PROJECT/pom.xml" compile dependency:build-classpath \
    -Dmdep.outputFile="$CLASSPATH_FILE" -Dmdep.includeScope=runtime >"$BUILD/install.log" 2>&1; then
    tail -n 40 "$BUILD/install.log" >&2
    die "mvn failed to build tools/servers/minidfs (log: $BUILD/install.log)"
  fi
  fingerprint >"$STAMP"
  say "installed in $((SECONDS - t0)) s"
}

# The pid of the cluster this script started, if it still runs.
running_pid() {
  [[ -f $PID_FILE ]] || return 1
  local pid
  pid=$(cat "$PID_FILE")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: it must be our launcher.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$MAIN" || return 1
  echo "$pid"
}

cmd_start() {
  if pid=$(running_pid) && [[ -s $URL_FILE && -s $EXPORTS_FILE ]]; then
    say "already running (pid $pid) at $(cat "$URL_FILE")"
    cat "$EXPORTS_FILE"
    return 0
  fi
  cmd_install
  mkdir -p "$STATE"
  rm -rf "$STATE/data" "$STATE/conf" "$URL_FILE" "$EXPORTS_FILE"
  local t0=$SECONDS timeout=${MINIDFS_START_TIMEOUT:-180}
  : >"$LOG"
  # shellcheck disable=SC2086 # MINIDFS_JAVA_OPTS is a list of options
  java ${MINIDFS_JAVA_OPTS:--Xmx1g} -Djava.net.preferIPv4Stack=true \
    -cp "$BUILD/classes:$(cat "$CLASSPATH_FILE")" "$MAIN" \
    --base-dir "$STATE/data" --conf-dir "$STATE/conf" \
    --port "${MINIDFS_PORT:-0}" --datanodes "${MINIDFS_DATANODES:-1}" \
    </dev/null >"$LOG" 2>&1 &
  local pid=$!
  echo "$pid" >"$PID_FILE"
  local ready="" url="" nn_http="" dn_http=""
  while ((SECONDS - t0 < timeout)); do
    ready=$(grep -m1 '^MINIDFS_READY ' "$LOG" 2>/dev/null || true)
    if [[ -n $ready ]]; then
      read -r _ url nn_http dn_http <<<"$ready"
      break
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      say "the cluster exited before it was ready; last lines of $LOG:"
      tail -n 40 "$LOG" >&2
      rm -f "$PID_FILE"
      exit 1
    fi
    sleep 0.5
  done
  if [[ -z $url ]]; then
    say "not ready after ${timeout} s; last lines of $LOG:"
    tail -n 40 "$LOG" >&2
    cmd_stop
    exit 1
  fi
  printf 'export RSM_TEST_HDFS_URL=%s\nexport RSM_TEST_HDFS_NN_HTTP=%s\nexport RSM_TEST_HDFS_DN_HTTP=%s\n' \
    "$url" "${nn_http#nn-http=}" "${dn_http#dn-http=}" >"$EXPORTS_FILE"
  echo "$url" >"$URL_FILE"
  say "ready at $url in $((SECONDS - t0)) s (pid $pid, log $LOG)"
  cat "$EXPORTS_FILE"
}

cmd_stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$PID_FILE" "$URL_FILE" "$EXPORTS_FILE"
    say "not running"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 60; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "pid $pid ignored SIGTERM for 30 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$PID_FILE" "$URL_FILE" "$EXPORTS_FILE" "$STATE/data"
  say "stopped (pid $pid)"
}

cmd_status() {
  if pid=$(running_pid); then
    say "running (pid $pid) at $(cat "$URL_FILE" 2>/dev/null)"
  else
    say "not running"
    return 1
  fi
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 install|start|stop|status" >&2
    exit 2
    ;;
esac
