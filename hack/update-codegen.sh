#!/usr/bin/env bash
# Regenerates the deepcopy, conversion and defaulting code of the plugin
# args (apis/config) and the deepcopy code of the PodGroup API
# (apis/scheduling) with k8s.io/code-generator, pinned in go.mod as tools.
set -euo pipefail
cd "$(dirname "$0")/.."
MODULE=github.com/hami-scheduler/hami-scheduler
BOILERPLATE=hack/boilerplate.go.txt

go tool deepcopy-gen --go-header-file "$BOILERPLATE" --output-file zz_generated.deepcopy.go \
  "$MODULE/apis/config" "$MODULE/apis/config/v1" "$MODULE/apis/scheduling/v1alpha1"
go tool defaulter-gen --go-header-file "$BOILERPLATE" --output-file zz_generated.defaults.go \
  "$MODULE/apis/config/v1"
go tool conversion-gen --go-header-file "$BOILERPLATE" --output-file zz_generated.conversion.go \
  "$MODULE/apis/config/v1"
