#!/usr/bin/env bash
# test-compat.sh VERSION...
#
# Runs the compatibility suite (test/compat) against kube-apiserver of
# each Kubernetes VERSION, built from Go modules (hack/build-kube-apiserver.sh,
# cached). The suite picks the scheduler build of the band that serves
# each minor from bin/ (make build; make build K8S_MINOR=1.N for older
# bands), or checks that the newest build refuses a minor no band serves.
# Every run prints the API server version it ran against.
set -euo pipefail
cd "$(dirname "$0")/.."
failed=()
for version in "$@"; do
  echo "== compat: Kubernetes $version"
  apiserver="$(./hack/build-kube-apiserver.sh "$version" | tail -n 1)"
  out="$(mktemp)"
  go test -count=1 -timeout 20m -v ./test/compat -args -kube-apiserver="$apiserver" -bin="$PWD/bin" >"$out" 2>&1 || true
  grep -E '^(compat:|=== RUN|--- |    |PASS|FAIL|ok |control plane)' "$out" || true
  if ! grep -qE '^ok ' "$out"; then
    failed+=("$version")
    tail -n 40 "$out"
  fi
  rm -f "$out"
done
if ((${#failed[@]})); then
  echo "compat: failed against ${failed[*]}" >&2
  exit 1
fi
echo "compat: passed against $*"
