#!/usr/bin/env bash
# GCS test server: fake-gcs-server (Go module github.com/fsouza/fake-gcs-server, pinned), in memory, plain
# HTTP, on a free loopback port, unauthenticated.
#   fake-gcs.sh install   go-install fake-gcs-server under $RSM_SERVERS_HOME (idempotent)
#   fake-gcs.sh start     install if missing, start, create the test bucket, print `export` lines
#   fake-gcs.sh env       print the `export` lines of the running server again
#   fake-gcs.sh stop      stop it
# Use: eval "$(tools/servers/fake-gcs.sh start)"
set -euo pipefail
source "$(dirname "$0")/lib.sh"

FAKE_GCS_VERSION=v1.56.1
GOBIN_DIR="$SERVERS_HOME/fake-gcs-server-$FAKE_GCS_VERSION"
BIN="$GOBIN_DIR/fake-gcs-server"
DIR="$RUN_DIR/fake-gcs"
PIDFILE="$DIR/pid"
BUCKET=rsm-test

install() {
  if [ -x "$BIN" ]; then
    return 0
  fi
  command -v go >/dev/null || die "go is needed to install fake-gcs-server"
  say "installing fake-gcs-server $FAKE_GCS_VERSION into $GOBIN_DIR (go $(go env GOVERSION))"
  mkdir -p "$GOBIN_DIR"
  (cd "$GOBIN_DIR" && GOBIN="$GOBIN_DIR" GOFLAGS=-mod=mod go install \
    "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION" >&2)
  [ -x "$BIN" ] || die "fake-gcs-server missing after install"
}

start() {
  install
  stop_previous "$PIDFILE" fake-gcs-server
  mkdir -p "$DIR"
  local port log
  port=$(free_port)
  log="$DIR/fake-gcs.log"
  # -public-host: the XML API (object_store's reads, listings and deletes: /bucket/object) is served
  # only to requests whose Host is the public host.
  start_bg "$PIDFILE" "$log" "$BIN" -scheme http -host 127.0.0.1 -port "$port" -backend memory \
    -public-host "127.0.0.1:$port" -external-url "http://127.0.0.1:$port" -log-level warn
  wait_http "http://127.0.0.1:$port/_internal/healthcheck" 30 "$PIDFILE" "$log"
  curl -sf -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$BUCKET\"}" \
    "http://127.0.0.1:$port/storage/v1/b" -o /dev/null ||
    { tail -n 20 "$log" >&2; stop_pid "$PIDFILE"; die "could not create bucket $BUCKET"; }
  say "fake-gcs-server $FAKE_GCS_VERSION on 127.0.0.1:$port (pid $(cat "$PIDFILE"), log $log)"
  emit_env "$DIR/env" <<ENV
export RSM_TEST_GCS_ENDPOINT=http://127.0.0.1:$port
export RSM_TEST_GCS_BUCKET=$BUCKET
ENV
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  env) cat "$DIR/env" ;;
  stop) stop_pid "$PIDFILE" ;;
  *) die "usage: $0 install|start|env|stop" ;;
esac
