#!/usr/bin/env bash
# Fails when any pin of the collector or contrib disagrees with versions.txt: the ocb manifests,
# every go.mod (direct and indirect requirements), ocb itself, the built binary's modules
# (when bin/otelcol-red exists) and every collector or contrib release named in the repository's
# documentation and comments. Part of `make test`; `make bump` ends with it.
#
# History is exempt: testbed/results/ (runs as they were measured, each naming its build) and
# docs/upgrading.md (what changed between releases). Anything else that names an older release
# says so on the same line with a word of time ("was", "had", "before", "after", "up to", "and later",
# "at the time", "measured": "... was v0.145.0 ..."), or names the current release beside it
# ("unchanged from v0.145.0 to v0.159.0"), so the line reads as history to a person too.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

CORE=go.opentelemetry.io/collector
CONTRIB_MOD=github.com/open-telemetry/opentelemetry-collector-contrib
VERSION=$(awk '$1 == "collector" {print $2}' versions.txt)
STABLE=$(awk '$1 == "collector-stable" {print $2}' versions.txt)
CONTRIB=$(awk '$1 == "contrib" {print $2}' versions.txt)
[ -n "$VERSION" ] && [ -n "$STABLE" ] && [ -n "$CONTRIB" ] || die "versions.txt lacks collector, collector-stable or contrib"
HELD=$(awk '$1 == "held" {print $3}' versions.txt | sort -u | tr '\n' ' ')
problems=0
fail() { log "$*"; problems=$((problems + 1)); }

# want_contrib MODULE VERSION DIRECT: a direct requirement or manifest entry must be exactly its
# target; an indirect one may also be at a held release (a held module brings its own siblings).
want_contrib() {
  local mod=$1 ver=$2 direct=$3 rel h
  rel=${mod#"$CONTRIB_MOD"/}
  h=$(awk -v m="$rel" '$1 == "held" && $2 == m {print $3}' versions.txt)
  if [ -n "$h" ]; then
    [ "$ver" = "$h" ] && return 0
    [ "$direct" = 0 ] && [ "$ver" = "$CONTRIB" ] && return 0
    echo "held at $h"; return 1
  fi
  [ "$ver" = "$CONTRIB" ] && return 0
  [ "$direct" = 0 ] && [[ " $HELD " == *" $ver "* ]] && return 0
  echo "$CONTRIB"; return 1
}

# check_pin WHERE MODULE VERSION DIRECT
check_pin() {
  local where=$1 mod=$2 ver=$3 direct=$4 want
  case $mod in
    "$CORE"/semconv*) ;; # versioned with the specification, not the release
    "$CORE"|"$CORE"/*)
      [ "$ver" = "$VERSION" ] || [ "$ver" = "$STABLE" ] || fail "$where: $mod $ver (want $VERSION or $STABLE)" ;;
    "$CONTRIB_MOD"/*)
      want=$(want_contrib "$mod" "$ver" "$direct") || fail "$where: $mod $ver (want $want)" ;;
  esac
}

for manifest in builder-config.yaml testbed/stock-builder-config.yaml; do
  while read -r mod ver; do
    check_pin "$manifest" "$mod" "$ver" 1
  done < <(sed -n -E 's/^[[:space:]]*-[[:space:]]*gomod:[[:space:]]*([^[:space:]]+)[[:space:]]+(v[0-9.]+).*/\1 \2/p' "$manifest")
done

# The stock twin builds the stock components of builder-config.yaml and nothing else: ours
# dropped, our elasticsearch wrapper replaced by the contrib exporter it wraps.
es_held=$(awk '$1 == "held" && $2 == "exporter/elasticsearchexporter" {print $3}' versions.txt)
gomods() { sed -n -E 's/^[[:space:]]*-[[:space:]]*gomod:[[:space:]]*([^[:space:]]+ v[0-9.]+).*/\1/p' "$1"; }
ours_stock=$(gomods builder-config.yaml |
  sed "s#^github.com/otelcol-red/otelcol-red/exporter/elasticsearch v0.0.0\$#$CONTRIB_MOD/exporter/elasticsearchexporter $es_held#" |
  grep -v '^github.com/otelcol-red/' | sort)
twin=$(gomods testbed/stock-builder-config.yaml | sort)
[ "$ours_stock" = "$twin" ] || fail "testbed/stock-builder-config.yaml's components differ from builder-config.yaml's stock ones: $(diff <(echo "$ours_stock") <(echo "$twin") | grep '^[<>]' | tr '\n' ' ')"

# replace lines: each manifest carries exactly versions.txt's replacements of modules (its own
# components' local replacement aside).
want_replaces=$(awk '$1 == "replace" {print $2 " => " $2 " " $3}' versions.txt | sort)
for manifest in builder-config.yaml testbed/stock-builder-config.yaml; do
  have=$(sed -n -E 's/^[[:space:]]*-[[:space:]]*([^[:space:]]+ => [^[:space:]]+ v[^[:space:]]+)[[:space:]]*$/\1/p' "$manifest" | sort)
  [ "$have" = "$want_replaces" ] || fail "$manifest replaces [$have], versions.txt says [$want_replaces]"
done

for gomod in $(git ls-files --cached --others --exclude-standard 'go.mod' '*/go.mod'); do
  while read -r mod ver; do
    # A replace of versions.txt's modules must say what versions.txt says.
    want=$(awk -v m="$mod" '$1 == "replace" && $2 == m {print $3}' versions.txt)
    [ -z "$want" ] || [ "$ver" = "$want" ] || fail "$gomod replaces $mod with $ver, versions.txt says $want"
  done < <(sed -n -E 's/^replace ([^[:space:]]+) => [^[:space:]]+ (v[^[:space:]]+)$/\1 \2/p' "$gomod")
  # require lines, in blocks or alone; "// indirect" marks the indirect ones.
  while read -r mod ver direct; do
    check_pin "$gomod" "$mod" "$ver" "$direct"
  done < <(awk '
    /^require \(/ {inblock = 1; next}
    inblock && /^\)/ {inblock = 0; next}
    inblock && NF >= 2 {print $1, $2, (/\/\/ indirect/ ? 0 : 1); next}
    /^require [^(]/ {print $2, $3, (/\/\/ indirect/ ? 0 : 1)}
  ' "$gomod")
done

# ocb and the tools that follow the release read versions.txt; nothing may pin them elsewhere.
if git grep -nE '(cmd/builder|cmd/mdatagen|cmd/telemetrygen)@v[0-9]' -- ':!scripts/bump.sh' ':!testbed/results' >/dev/null; then
  fail "a tool of the collector is pinned outside versions.txt: $(git grep -nE '(cmd/builder|cmd/mdatagen|cmd/telemetrygen)@v[0-9]' -- ':!scripts/bump.sh' ':!testbed/results' | head -3)"
fi

# The binary, when built: what it really links.
if [ -x bin/otelcol-red ]; then
  while read -r mod ver; do
    check_pin "bin/otelcol-red" "$mod" "$ver" 0
  done < <(go version -m bin/otelcol-red | awk '$1 == "dep" || $1 == "=>" {print $2, $3}')
fi

# Documentation and comments: a release of the collector or contrib named as current must be
# the current one. The pattern catches "v0.1NN.N" next to a collector or contrib word.
allowed=" $VERSION $STABLE $CONTRIB $HELD "
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}; lineno=${rest%%:*}; text=${rest#*:}
  named=$(grep -oE 'v(0\.1[0-9]{2}|1\.[0-9]{2})\.[0-9]+' <<<"$text" | sort -u)
  # A line that names the current (or a held) release beside another one compares them.
  current=0
  for v in $named; do [[ $allowed == *" $v "* ]] && current=1; done
  for v in $named; do
    [[ $allowed == *" $v "* ]] && continue
    [ $current = 1 ] && continue
    grep -qiE '\b(was|were|had|before|earlier|until|since|after|up to|older|and later|at the time|measured)\b|from v[0-9]' <<<"$text" && continue
    fail "$file:$lineno names $v, not the release in versions.txt: $(echo "$text" | cut -c1-160)"
  done
done < <(git grep -nIiE '(collector|contrib|ocb|pdata|spanmetrics|servicegraph|prometheusexporter|prometheus exporter|kafka ?(receiver|exporter)|filterprocessor|elasticsearch ?exporter|telemetrygen|mdatagen|builder)[^|]{0,60}v(0\.1[0-9]{2}|1\.[0-9]{2})\.[0-9]+' \
  -- ':!testbed/results' ':!docs/upgrading.md' ':!*go.sum' ':!*go.mod' ':!versions.txt' ':!scripts/bump.sh' ':!scripts/check-pins.sh' ':!cmd/otelcol-red')

[ $problems -eq 0 ] || die "$problems pin(s) disagree with versions.txt (collector $VERSION / $STABLE, contrib $CONTRIB)"
log "every pin agrees with versions.txt (collector $VERSION / $STABLE, contrib $CONTRIB, held: $HELD)"
