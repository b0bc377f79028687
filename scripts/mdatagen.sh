#!/usr/bin/env bash
# The collector's mdatagen: a component's metadata.yaml generates its internal/metadata package
# (type, stability, scope name, the TelemetryBuilder of its own metrics), the generated tests,
# documentation.md and the status section of its README.
#   scripts/mdatagen.sh path              installs it under .tools (once) and prints its path
#   scripts/mdatagen.sh [DIR...]          regenerates DIR (a component folder), or every component
#                                         of ours that is on mdatagen
#   scripts/mdatagen.sh check [DIR...]    regenerates into a temporary copy and fails when the
#                                         committed files differ (drift), for `make test`
# A component is on mdatagen once its internal/metadata/generated_status.go exists: the first
# run names its folder, later runs without a folder include it.
# The version is the collector's release in versions.txt, or the release mdatagen is held at there.
source "$(dirname "$0")/lib.sh"

VERSION=$(awk '$1 == "held" && $2 == "cmd/mdatagen" {print $3}' "$ROOT/versions.txt")
[ -n "$VERSION" ] || VERSION=$(awk '$1 == "collector" {print $2}' "$ROOT/versions.txt")
[ -n "$VERSION" ] || die "versions.txt names no collector release"
BIN=$ROOT/.tools/mdatagen-$VERSION

install() {
  [ -x "$BIN" ] && return 0
  command -v go >/dev/null || die "go is required to install mdatagen"
  log "installing mdatagen $VERSION"
  # `go install mdatagen@VERSION` would first ask the module proxy for the module's version
  # list (to report a deprecation), which the proxy answers with 404; a throwaway module that
  # requires mdatagen at VERSION builds it from the same module graph instead.
  local tmp; tmp=$(mktemp -d)
  mkdir -p "$(dirname "$BIN")"
  if ! (cd "$tmp" && go mod init mdatagenbuild &&
    go get "go.opentelemetry.io/collector/cmd/mdatagen@$VERSION" &&
    go build -trimpath -o "$BIN.tmp" go.opentelemetry.io/collector/cmd/mdatagen) >"$tmp.log" 2>&1; then
    tail -20 "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log" "$BIN.tmp"; die "building mdatagen $VERSION failed"
  fi
  rm -rf "$tmp" "$tmp.log"
  mv "$BIN.tmp" "$BIN"
}

# components prints the folders (relative to the root) of every component on mdatagen.
components() {
  local yaml dir
  while read -r yaml; do
    dir=$(dirname "$yaml")
    [ -f "$ROOT/$dir/internal/metadata/generated_status.go" ] && echo "$dir"
  done < <(cd "$ROOT" && git ls-files --cached --others --exclude-standard \
    'connector/*/metadata.yaml' 'exporter/*/metadata.yaml' 'extension/*/metadata.yaml' \
    'processor/*/metadata.yaml' 'receiver/*/metadata.yaml' | sort -u)
}

# folder DIR prints DIR relative to the root, or dies when it holds no metadata.yaml.
folder() {
  local abs
  abs=$(cd "$1" 2>/dev/null && pwd) || die "$1: no such folder"
  [ -f "$abs/metadata.yaml" ] || die "$1: no metadata.yaml"
  case $abs in
    "$ROOT"/*) echo "${abs#"$ROOT"/}" ;;
    *) die "$1 is outside the repository" ;;
  esac
}

# generate ROOTDIR DIR runs mdatagen on ROOTDIR/DIR/metadata.yaml (it formats its Go output
# itself). It asks `go list -m` in the outermost folder holding a go.mod for the module path.
generate() {
  local root=$1 dir=$2
  (cd "$root/$dir" && "$BIN" metadata.yaml) || die "mdatagen failed on $dir"
}

# check DIR regenerates a copy of DIR (with the root go.mod, so the module path is the same,
# and an empty .git, so mdatagen looks for no .mdatagen.yaml above it) and diffs it with DIR.
check() {
  local dir=$1 tmp status=0
  tmp=$(mktemp -d)
  mkdir -p "$tmp/.git" "$tmp/$(dirname "$dir")"
  cp "$ROOT/go.mod" "$tmp/go.mod"
  cp -a "$ROOT/$dir" "$tmp/$dir"
  if ! (cd "$tmp/$dir" && "$BIN" metadata.yaml) >&2; then
    log "mdatagen failed on $dir"
    status=1
  elif ! diff -ruN "$ROOT/$dir" "$tmp/$dir" >&2; then
    log "$dir differs from what its metadata.yaml generates: run scripts/mdatagen.sh $dir and commit"
    status=1
  fi
  rm -rf "$tmp"
  return $status
}

cmd=generate
case "${1:-}" in
  path) install; echo "$BIN"; exit 0 ;;
  check) cmd=check; shift ;;
  -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
esac

dirs=()
if [ $# -eq 0 ]; then
  mapfile -t dirs < <(components)
  [ ${#dirs[@]} -gt 0 ] || die "no component is on mdatagen yet: name a folder"
else
  for d in "$@"; do dirs+=("$(folder "$d")"); done
fi

install
failed=0
for d in "${dirs[@]}"; do
  if [ "$cmd" = check ]; then
    check "$d" || failed=$((failed + 1))
  else
    log "generating $d"
    generate "$ROOT" "$d"
  fi
done
[ $failed -eq 0 ] || die "$failed component(s) drifted from their metadata.yaml"
[ "$cmd" = check ] && log "generated files match metadata.yaml: ${dirs[*]}"
exit 0
