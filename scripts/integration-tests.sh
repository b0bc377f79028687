#!/usr/bin/env bash
# Lists the integration tests of the Go module in the current directory, one package a line:
# "<package dir> <-run pattern of the tests its integration-tagged files define>". `make
# integration` runs exactly these: the packages' other tests ran already in `make unit` (with
# -race), and running them again under the integration tag would only cost CI time.
#   scripts/integration-tests.sh [PACKAGE_DIR_TO_SKIP...]   (relative, e.g. e2e)
set -euo pipefail
here=$(pwd)
go list -tags integration -f '{{.Dir}}' ./... | while read -r dir; do
  rel=${dir#"$here"/}
  for s in "$@"; do [ "$rel" = "$s" ] && continue 2; done
  files=$(grep -l '^//go:build integration' "$dir"/*_test.go 2>/dev/null || true)
  [ -n "$files" ] || continue
  # shellcheck disable=SC2086
  tests=$(grep -hoE '^func (Test|Example)[A-Za-z0-9_]*\(' $files | sed -E 's/^func ([A-Za-z0-9_]*)\(/\1/' | paste -sd'|' -)
  [ -n "$tests" ] && echo "./$rel ^($tests)\$"
done
