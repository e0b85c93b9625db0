#!/usr/bin/env bash
# S3 test server: moto (PyPI `moto[server]`), in memory, on a free loopback port.
#   moto.sh install   install moto into a virtualenv under $RSM_SERVERS_HOME (idempotent)
#   moto.sh start     install if missing, start, create the test bucket, print `export` lines
#   moto.sh env       print the `export` lines of the running server again
#   moto.sh stop      stop it
# Use: eval "$(tools/servers/moto.sh start)"
set -euo pipefail
source "$(dirname "$0")/lib.sh"

MOTO_VERSION=5.2.5
VENV="$SERVERS_HOME/moto-$MOTO_VERSION"
BIN="$VENV/bin/moto_server"
DIR="$RUN_DIR/moto"
PIDFILE="$DIR/pid"
BUCKET=rsm-test

install() {
  if [ -x "$BIN" ]; then
    return 0
  fi
  say "installing moto[server]==$MOTO_VERSION into $VENV"
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" >&2
  [ -x "$BIN" ] || die "moto_server missing after install"
}

start() {
  install
  stop_previous "$PIDFILE" moto
  mkdir -p "$DIR"
  local port log
  port=$(free_port)
  log="$DIR/moto.log"
  start_bg "$PIDFILE" "$log" "$BIN" -H 127.0.0.1 -p "$port"
  wait_http "http://127.0.0.1:$port/" 30 "$PIDFILE" "$log"
  # moto does not check signatures: an unsigned PUT creates the bucket.
  curl -sf -X PUT "http://127.0.0.1:$port/$BUCKET" -o /dev/null ||
    { tail -n 20 "$log" >&2; stop_pid "$PIDFILE"; die "could not create bucket $BUCKET"; }
  say "moto $MOTO_VERSION on 127.0.0.1:$port (pid $(cat "$PIDFILE"), log $log)"
  emit_env "$DIR/env" <<ENV
export RSM_TEST_S3_ENDPOINT=http://127.0.0.1:$port
export RSM_TEST_S3_BUCKET=$BUCKET
export RSM_TEST_S3_REGION=us-east-1
export RSM_TEST_S3_ACCESS_KEY=rsm-test-access-key
export RSM_TEST_S3_SECRET_KEY=rsm-test-secret-key
export RSM_TEST_MOTO_SERVER=$BIN
ENV
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  env) cat "$DIR/env" ;;
  stop) stop_pid "$PIDFILE" ;;
  *) die "usage: $0 install|start|env|stop" ;;
esac
