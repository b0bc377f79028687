#!/usr/bin/env bash
# Fails when the committed cmd/otelcol-red differs from what ocb generates from
# builder-config.yaml: a component added to the manifest but not regenerated (or the reverse)
# must not land. The check output sits at the same depth as cmd/otelcol-red so the manifest's
# relative `replaces` resolve to the same folder.
source "$(dirname "$0")/lib.sh"
BUILDER=${BUILDER:?set BUILDER to the ocb binary (make check-generated does)}
OUT=.cache/gencheck
cd "$ROOT"
rm -rf "$OUT"; mkdir -p .cache
sed "s#output_path: ./cmd/otelcol-red#output_path: ./$OUT#" builder-config.yaml >.cache/gencheck-config.yaml
"$BUILDER" --config .cache/gencheck-config.yaml --skip-compilation >.cache/gencheck.log 2>&1 ||
  { tail -30 .cache/gencheck.log >&2; die "ocb failed"; }
status=0
for f in main.go main_others.go main_windows.go components.go go.mod go.sum; do
  if ! diff -u "cmd/otelcol-red/$f" "$OUT/$f" >&2; then
    log "cmd/otelcol-red/$f differs from what builder-config.yaml generates: run make generate and commit"
    status=1
  fi
done
[ $status -eq 0 ] && log "cmd/otelcol-red matches builder-config.yaml"
exit $status
