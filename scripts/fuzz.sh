#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 10s; `make
# fuzz` runs them long). The seed corpus (f.Add and testdata/fuzz/) already
# runs in `go test`; this explores past it. A crasher is saved by `go test`
# under the package's testdata/fuzz/ and fails this script: commit it as a
# regression seed with its fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
status=0
while IFS=: read -r file name; do
  pkg=./$(dirname "$file")
  echo "fuzz $pkg $name ($fuzztime)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
    tail -30 /tmp/fuzz.$$.log
    status=1
  else
    grep 'fuzz: elapsed' /tmp/fuzz.$$.log | tail -1
  fi
done < <(grep -r --include='*_test.go' -o -E '^func Fuzz[A-Za-z0-9_]+' . | sed -E 's|^\./||; s|:func |:|' | sort)
rm -f /tmp/fuzz.$$.log
exit $status
