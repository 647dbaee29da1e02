#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 30s).
# Targets are found with `go test -list`; seeds are the f.Add calls in the
# tests, and inputs that ever failed are kept in each package's
# testdata/fuzz (run by plain `go test` as regression cases).
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-30s}"
# Only packages whose tests declare a fuzz target are listed.
PKGS="${FUZZ_PKGS:-$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u | sed 's|^|./|; s|^\./\./|./|')}"
failed=0
for pkg in $PKGS; do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "== $pkg $target ($FUZZTIME)"
    out=$(mktemp)
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tee "$out"; then
      # On a loaded machine Go's fuzzing coordinator can miss its own
      # shutdown deadline ("context deadline exceeded") without finding
      # anything: run such a target once more. A failure it found writes
      # its input ("Failing input written to") and is never retried.
      if grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
        echo "== $pkg $target: the fuzzing engine timed out stopping, nothing found; once more"
        go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" || failed=1
      else
        failed=1
      fi
    fi
    rm -f "$out"
  done
done
exit $failed
