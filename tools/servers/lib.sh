# Shared by the test-server scripts: where things are installed and logged, free ports, readiness.
# Sourced, not run. Everything but `export` lines goes to stderr, so `eval "$(tools/servers/X.sh start)"`
# works.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Installs are kept across clones (a fresh machine installs once); logs and pids stay with the checkout.
SERVERS_HOME="${RSM_SERVERS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/rsm-servers}"
RUN_DIR="${RSM_SERVERS_RUN_DIR:-$ROOT/target/servers}"

say() { printf '%s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# A free TCP port on loopback (the kernel picks it; a race with another process is possible but rare).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# wait_http URL SECONDS PIDFILE LOG: polls URL until any HTTP answer; fails with the log tail if the
# process died or time ran out.
wait_http() {
  local url=$1 secs=$2 pidfile=$3 log=$4 i
  for ((i = 0; i < secs * 10; i++)); do
    if curl -s -o /dev/null --max-time 1 "$url"; then
      return 0
    fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      say "the server exited; last lines of $log:"
      tail -n 40 "$log" >&2
      rm -f "$pidfile"
      exit 1
    fi
    sleep 0.1
  done
  say "the server did not answer on $url within ${secs}s; last lines of $log:"
  tail -n 40 "$log" >&2
  stop_pid "$pidfile"
  exit 1
}

# Starts a command in its own session in the background, logging to $2, pid in $1.
start_bg() {
  local pidfile=$1 log=$2
  shift 2
  mkdir -p "$(dirname "$pidfile")"
  setsid "$@" >"$log" 2>&1 < /dev/null &
  echo $! >"$pidfile"
}

# Stops the process (group) whose pid is in $1, if running.
stop_pid() {
  local pidfile=$1 pid i
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# One server of a kind per checkout: a previous one this checkout started (its pid file) is stopped
# first, so a run that died without stopping its servers does not block the next.
stop_previous() {
  local pidfile=$1 name=$2
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    say "stopping the previous $name (pid $(cat "$pidfile"))"
    stop_pid "$pidfile"
  fi
  rm -f "$pidfile"
}

# Saves the export lines of a started server so `env` can print them again, and prints them.
emit_env() {
  local envfile=$1
  cat >"$envfile"
  cat "$envfile"
}
