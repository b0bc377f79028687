#!/usr/bin/env bash
# contrib's telemetrygen, the load client users already know, for tests that need a real OTLP client.
#   scripts/telemetrygen.sh path     installs it under .tools (once) and prints its path
#   scripts/telemetrygen.sh ARGS...  runs it
# The version is contrib's release in versions.txt, or the release telemetrygen is held at there.
source "$(dirname "$0")/lib.sh"

VERSION=$(awk '$1 == "held" && $2 == "cmd/telemetrygen" {print $3}' "$ROOT/versions.txt")
[ -n "$VERSION" ] || VERSION=$(awk '$1 == "contrib" {print $2}' "$ROOT/versions.txt")
BIN=$ROOT/.tools/telemetrygen-$VERSION

install() {
  [ -x "$BIN" ] && return 0
  command -v go >/dev/null || die "go is required to install telemetrygen"
  log "installing telemetrygen $VERSION"
  local tmp; tmp=$(mktemp -d)
  GOBIN=$tmp go install "github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@$VERSION" >&2 \
    || { rm -rf "$tmp"; die "go install telemetrygen@$VERSION failed"; }
  mkdir -p "$(dirname "$BIN")"
  mv "$tmp/telemetrygen" "$BIN"
  rm -rf "$tmp"
}

case "${1:-}" in
  path) install; echo "$BIN" ;;
  "") die "usage: $0 path | ARGS..." ;;
  *) install; exec "$BIN" "$@" ;;
esac
