#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 30s).
# Targets are found with `go test -list`; seeds are the f.Add calls in the
# tests, and inputs that ever failed are kept in each package's
# testdata/fuzz (run by plain `go test` as regression cases).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-30s}"
# Only packages whose tests declare a fuzz target are listed.
PKGS="${FUZZ_PKGS:-$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u | sed 's|^|./|; s|^\./\./|./|')}"
failed=0
for pkg in $PKGS; do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "== $pkg $target ($FUZZTIME)"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"; then
      failed=1
    fi
  done
done
exit $failed
