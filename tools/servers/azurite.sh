#!/usr/bin/env bash
# Azure Blob test server: Azurite (npm `azurite`, pinned 3.35.0: later versions need Node 22), blob
# service only, in memory, on a free loopback port, shared-key signatures checked.
#   azurite.sh install   npm-install Azurite under $RSM_SERVERS_HOME (idempotent)
#   azurite.sh start     install if missing, start, create the test container, print `export` lines
#   azurite.sh env       print the `export` lines of the running server again
#   azurite.sh stop      stop it
# Use: eval "$(tools/servers/azurite.sh start)"
set -euo pipefail
source "$(dirname "$0")/lib.sh"

AZURITE_VERSION=3.35.0
PREFIX="$SERVERS_HOME/azurite-$AZURITE_VERSION"
BIN="$PREFIX/node_modules/.bin/azurite-blob"
DIR="$RUN_DIR/azurite"
PIDFILE="$DIR/pid"
CONTAINER=rsm-test
ACCOUNT=devstoreaccount1
# The emulator's well-known, public key (documented by Microsoft; not a secret).
KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

install() {
  if [ -x "$BIN" ]; then
    return 0
  fi
  command -v npm >/dev/null || die "npm is needed to install Azurite"
  say "installing azurite@$AZURITE_VERSION into $PREFIX"
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --silent "azurite@$AZURITE_VERSION" >&2
  [ -x "$BIN" ] || die "azurite-blob missing after install"
}

# Creates the container with a shared-key signed request (Azurite checks signatures).
create_container() {
  local port=$1
  python3 - "$port" "$ACCOUNT" "$KEY" "$CONTAINER" <<'PY'
import base64, hashlib, hmac, sys, urllib.request
from email.utils import formatdate
port, account, key, container = sys.argv[1:]
date = formatdate(usegmt=True)
version = "2021-08-06"
string_to_sign = "\n".join([
    "PUT", "", "", "", "", "", "", "", "", "", "", "",
    f"x-ms-date:{date}\nx-ms-version:{version}",
    f"/{account}/{account}/{container}\nrestype:container",
])
sig = base64.b64encode(hmac.new(base64.b64decode(key), string_to_sign.encode(), hashlib.sha256).digest()).decode()
req = urllib.request.Request(
    f"http://127.0.0.1:{port}/{account}/{container}?restype=container", method="PUT",
    headers={"x-ms-date": date, "x-ms-version": version, "Content-Length": "0",
             "Authorization": f"SharedKey {account}:{sig}"})
try:
    urllib.request.urlopen(req, timeout=10)
except urllib.error.HTTPError as e:
    if e.code != 409:  # already exists
        sys.exit(f"creating container {container}: HTTP {e.code}: {e.read()[:300]!r}")
PY
}

start() {
  install
  stop_previous "$PIDFILE" azurite
  mkdir -p "$DIR"
  local port log
  port=$(free_port)
  log="$DIR/azurite.log"
  # --disableTelemetry: no call home; --skipApiVersionCheck: newer clients' API versions are accepted;
  # --loose: unsupported headers are ignored rather than refused.
  # Run from its own directory: Azurite may drop files in its working directory.
  (cd "$DIR" && start_bg "$PIDFILE" "$log" "$BIN" --blobHost 127.0.0.1 --blobPort "$port" \
    --inMemoryPersistence --disableTelemetry --skipApiVersionCheck --loose)
  wait_http "http://127.0.0.1:$port/" 60 "$PIDFILE" "$log"
  create_container "$port" || { tail -n 20 "$log" >&2; stop_pid "$PIDFILE"; die "could not create container $CONTAINER"; }
  say "azurite $AZURITE_VERSION on 127.0.0.1:$port (pid $(cat "$PIDFILE"), log $log)"
  emit_env "$DIR/env" <<ENV
export RSM_TEST_AZURE_ENDPOINT=http://127.0.0.1:$port/$ACCOUNT
export RSM_TEST_AZURE_ACCOUNT=$ACCOUNT
export RSM_TEST_AZURE_KEY=$KEY
export RSM_TEST_AZURE_CONTAINER=$CONTAINER
ENV
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  env) cat "$DIR/env" ;;
  stop) stop_pid "$PIDFILE" ;;
  *) die "usage: $0 install|start|env|stop" ;;
esac
