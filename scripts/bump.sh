#!/usr/bin/env bash
# Moves otelcol-red to another collector release in one step:
#   scripts/bump.sh VERSION [CONTRIB]      (make bump VERSION=v0.166.0 [CONTRIB=v0.166.1])
# VERSION is the collector's v0.x release (ocb, otelcol, the v0.x collector modules); the stable
# v1.x modules that go with it are read from that release's own otelcol go.mod, so the pair can
# never disagree. CONTRIB defaults to the newest v0.<minor>.* of contrib that the module proxy
# lists for spanmetricsconnector.
#
# It rewrites versions.txt, builder-config.yaml, testbed/stock-builder-config.yaml, every go.mod
# (the direct requirements, then every collector module left behind in the module graph by a
# held contrib module), regenerates cmd/otelcol-red with ocb at VERSION, and finishes with
# scripts/check-pins.sh. Held modules (versions.txt, `held` lines) keep their version; the script
# says when one of them is served at the new contrib release, so the hold can be dropped.
# Versions named in documentation are not rewritten blindly: check-pins lists every one that
# no longer matches, for a person to read and correct with the release notes at hand.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

VERSION=${1:-}
CONTRIB=${2:-}
[[ $VERSION =~ ^v0\.[0-9]+\.[0-9]+$ ]] || die "usage: $0 VERSION [CONTRIB]  (VERSION like v0.165.0)"
minor=$(echo "$VERSION" | cut -d. -f2)
CORE=go.opentelemetry.io/collector
CONTRIB_MOD=github.com/open-telemetry/opentelemetry-collector-contrib

# The stable modules' version is the one the release's own otelcol requires.
gomod=$(go mod download -json "$CORE/otelcol@$VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
[ -n "$gomod" ] || die "cannot download $CORE/otelcol@$VERSION"
STABLE=$(awk -v m="$CORE/component" '$1 == m {print $2; exit}' "$gomod")
[[ $STABLE =~ ^v1\. ]] || die "cannot read the stable release from $CORE/otelcol@$VERSION's go.mod"

if [ -z "$CONTRIB" ]; then
  CONTRIB=$(go list -m -versions "$CONTRIB_MOD/connector/spanmetricsconnector" | tr ' ' '\n' |
    grep -E "^v0\.$minor\.[0-9]+$" | sort -t. -k3 -n | tail -1)
  [ -n "$CONTRIB" ] || die "the module proxy lists no contrib release v0.$minor.x; pass CONTRIB"
fi
log "collector $VERSION, stable $STABLE, contrib $CONTRIB"

# versions.txt: the three releases; held lines stay as they are.
sed -i -E "s/^(collector +)v[0-9.]+/\1$VERSION/; s/^(collector-stable +)v[0-9.]+/\1$STABLE/; s/^(contrib +)v[0-9.]+/\1$CONTRIB/" versions.txt

# held MODULE prints the held version of a contrib module (relative path), or nothing.
held() { awk -v m="$1" '$1 == "held" && $2 == m {print $3}' "$ROOT/versions.txt"; }

# target MODULE sets REPLY to the version a collector or contrib module must have (empty for
# any other module). It sets a variable rather than printing so that its cache survives.
target() {
  local m=$1
  REPLY=
  case $m in
    "$CONTRIB_MOD"/*)
      local h; h=$(held "${m#"$CONTRIB_MOD"/}")
      REPLY=${h:-$CONTRIB} ;;
    "$CORE"/semconv*) ;; # versioned with the specification, not with the release
    "$CORE"/*|"$CORE")
      # A module released at the stable version is a stable one (modules graduate from v0.x to
      # v1.x between releases, as confighttp did); every other one is at VERSION.
      if [ -z "${line_of[$m]:-}" ]; then
        if go list -m "$m@$STABLE" >/dev/null 2>&1; then line_of[$m]=$STABLE; else line_of[$m]=$VERSION; fi
      fi
      REPLY=${line_of[$m]} ;;
  esac
}
declare -A line_of

# Manifests: every gomod line of a collector or contrib module.
for manifest in builder-config.yaml testbed/stock-builder-config.yaml; do
  tmp=$(mktemp)
  while IFS= read -r line; do
    if [[ $line =~ ^([[:space:]]*-[[:space:]]*gomod:[[:space:]]*)([^[:space:]]+)[[:space:]]+(v[0-9.]+)(.*)$ ]]; then
      mod=${BASH_REMATCH[2]} cur=${BASH_REMATCH[3]}
      target "$mod"; t=$REPLY
      [ -n "$t" ] && line="${BASH_REMATCH[1]}$mod $t${BASH_REMATCH[4]}"
    fi
    printf '%s\n' "$line"
  done <"$manifest" >"$tmp"
  mv "$tmp" "$manifest"
done

# bump_module DIR: the direct requirements first, then whatever the graph still holds back.
bump_module() {
  local dir=$1
  (
    cd "$dir"
    local args=() mod cur t
    while read -r mod cur; do
      target "$mod"; t=$REPLY
      [ -n "$t" ] && [ "$t" != "$cur" ] && args+=("$mod@$t")
    done < <(go list -m -f '{{if and (not .Main) (not .Indirect)}}{{.Path}} {{.Version}}{{end}}' all |
      grep -E "^($CORE|$CONTRIB_MOD)/")
    [ ${#args[@]} -gt 0 ] && go get "${args[@]}"
    # A held contrib module can pull a collector module that nothing else requires at the new
    # release; raise those too, until the graph is at one release.
    for _ in 1 2 3; do
      args=()
      while read -r mod cur; do
        target "$mod"; t=$REPLY
        [ -n "$t" ] && [ "$t" != "$cur" ] && args+=("$mod@$t")
      done < <(go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all | grep -E "^$CORE/")
      [ ${#args[@]} -eq 0 ] && break
      go get "${args[@]}"
    done
    go mod tidy
  ) || die "bumping $dir failed"
}

# Every module of the repository but the generated one, which ocb rewrites below.
for gomod in $(git ls-files --cached --others --exclude-standard 'go.mod' '*/go.mod' | grep -v '^cmd/otelcol-red/'); do
  dir=$(dirname "$gomod")
  grep -qE "($CORE|$CONTRIB_MOD)/" "$gomod" || continue
  log "bumping $dir/go.mod"
  bump_module "$dir"
done

log "installing ocb $VERSION and regenerating cmd/otelcol-red"
GOBIN=$ROOT/.tools go install "$CORE/cmd/builder@$VERSION"
"$ROOT/.tools/builder" --config builder-config.yaml --skip-compilation >.cache/bump-ocb.log 2>&1 ||
  { tail -30 .cache/bump-ocb.log >&2; die "ocb failed"; }

# Held modules that the proxy now serves at the new release: contrib ones at CONTRIB, the
# collector's tools (cmd/...) at VERSION.
while read -r _ mod ver _; do
  case $mod in
    cmd/mdatagen|cmd/builder) path=$CORE/$mod want=$VERSION ;;
    *) path=$CONTRIB_MOD/$mod want=$CONTRIB ;;
  esac
  if go mod download "$path@$want" >/dev/null 2>&1; then
    log "held $mod ($ver) is served at $want: if it builds there now, drop its hold in versions.txt"
  fi
done < <(grep -E '^held ' versions.txt)

scripts/check-pins.sh
