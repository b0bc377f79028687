# shellcheck shell=bash
# Common helpers for the service scripts. Every service binds 127.0.0.1 only and keeps its
# state, downloads and logs under $STATE (git-ignored), so a fresh clone starts from nothing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GONOSUMDB=${GONOSUMDB:-github.com/open-telemetry/opentelemetry-collector-contrib}
STATE=${OTELCOL_RED_STATE:-$ROOT/.cache/services}
mkdir -p "$STATE"

log() { printf '%s: %s\n' "$(basename "$0" .sh)" "$*" >&2; }
die() { log "$*"; exit 1; }

# apt_install installs Debian packages when a command is missing. apt-get update runs once per
# call because a fresh machine has no package lists yet.
apt_install() {
  local cmd=$1; shift
  command -v "$cmd" >/dev/null 2>&1 && return 0
  log "installing $* with apt-get"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@" >&2
  command -v "$cmd" >/dev/null 2>&1 || die "$cmd still missing after installing $*"
}

# pid_alive tells whether the process recorded in a pid file still runs.
pid_alive() {
  local f=$1
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

# stop_pid terminates the process of a pid file and waits up to $2 seconds before killing it.
stop_pid() {
  local f=$1 wait=${2:-20}
  if pid_alive "$f"; then
    local pid; pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq $((wait * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# wait_for runs a check until it succeeds or $1 seconds pass.
wait_for() {
  local secs=$1; shift
  for _ in $(seq $((secs * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  return 1
}

# port_open tells whether something accepts TCP connections on 127.0.0.1:$1.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
