#!/usr/bin/env bash
# build-kube-apiserver.sh VERSION...
#
# Builds kube-apiserver at each VERSION (e.g. v1.36.3) from Go modules,
# nothing downloaded prebuilt, for the compatibility tests against older
# API servers (internal/localcluster's external control plane). Prints
# each binary's path. Binaries are kept in KUBE_BIN_CACHE (default
# ~/.cache/hami-scheduler/kube) under the version and the Go version, so
# a warm run only checks that they exist; the module of each release is
# written by hack/kube-module.sh into the same place.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${KUBE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hami-scheduler/kube}"
goversion="$(go env GOVERSION)"

for version in "$@"; do
  if [[ ! "$version" =~ ^v1\.([0-9]+)\.[0-9]+$ ]]; then
    echo "build-kube-apiserver.sh: VERSION must look like v1.36.3, got $version" >&2
    exit 2
  fi
  minor="${BASH_REMATCH[1]}"
  dir="$cache/$version"
  bin="$dir/kube-apiserver-$goversion"
  if [[ ! -x "$bin" ]]; then
    "$here/kube-module.sh" "$version" "$dir/module"
    echo "building kube-apiserver $version (a few minutes when cold)" >&2
    # The version the binary reports on /version: the release's own
    # (built from modules, it would report v0.0.0-master).
    ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
    # providerless: without the in-tree cloud providers, as Kubernetes'
    # own providerless builds; before 1.31 they need k8s.io/legacy-cloud-providers,
    # which the module proxy does not serve.
    (cd "$dir/module" && GOFLAGS=-mod=mod go build -tags providerless -ldflags "$ldflags" -o "$bin.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
    mv "$bin.tmp" "$bin"
  fi
  echo "$bin"
done
