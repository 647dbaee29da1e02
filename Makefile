# hami-scheduler: kube-scheduler with HAMi's device-sharing plugin.
GO          ?= go
BIN         ?= bin
KUBE_VERSION := v1.37.2
HAMI_VERSION ?= 0.1.0
GIT_COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BUILD_DATE  ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# The kube-scheduler version stays the Kubernetes release it is built from
# (feature gates and compatibility versions key on it); ours rides along as
# semver build metadata.
GIT_VERSION := $(KUBE_VERSION)+hami.$(HAMI_VERSION).$(GIT_COMMIT)
VERSION_PKG := k8s.io/component-base/version
LDFLAGS     := -s -w -X github.com/hami-scheduler/hami-scheduler/internal/kubeversion.Release=$(HAMI_VERSION) -X $(VERSION_PKG).gitVersion=$(GIT_VERSION) -X $(VERSION_PKG).gitCommit=$(GIT_COMMIT) \
               -X $(VERSION_PKG).buildDate=$(BUILD_DATE) -X $(VERSION_PKG).gitTreeState=clean
# Packages whose tests run under the race detector (concurrent cache and
# plugin code); the rest run without it to keep the build cache small.
RACE_PKGS   := ./devices/... ./plugins/...

# make bench-e2e sizes (see docs/benchmarks/end-to-end.md).
BENCH_NODES ?= 200
BENCH_PODS  ?= 1000
# More flags for test/perf, e.g. BENCH_ARGS="-node-side=fast -policies=binpack -arrivals=backlog".
BENCH_ARGS  ?=
# Where make bench-e2e writes its figures as JSON (test/util/benchfigures),
# which make plots draws.
BENCH_RESULTS ?= _output/bench/figures.json

# Kubernetes releases the compatibility suite runs against: the newest
# patch of every minor the builds serve (make test-compat), and in CI one
# per band, its oldest served minor (make test-compat-smoke).
COMPAT_VERSIONS ?= v1.28.15 v1.29.6 v1.30.14 v1.31.14 v1.32.13 v1.33.13 v1.34.4 v1.35.4 v1.36.3 v1.37.2
COMPAT_SMOKE    ?= v1.34.4 v1.31.14 v1.28.15

.PHONY: all build test test-unit test-race bench bench-e2e bench-scale bench-rates bench-kueue bench-bursts bench-packing bench-dra plots run lint test-compat test-compat-smoke build-bands fmt vet clean generate verify-generate layout fuzz test-chaos manifests bench-upstream test-upstream

all: build

# The Kubernetes minor of the newest build (go.mod's k8s.io/kubernetes),
# whose band serves 1.34 to 1.38 (internal/kubeversion). K8S_MINOR=1.N
# builds the band of an older minor instead: bin/hami-scheduler-1.N from
# the same tree with hack/bands/k8s1.N/go.mod (hack/band-module.sh) and
# the build tag k8s1.N (internal/fwcompat). The webhook and the tools are
# the newest build's in every band.
NEWEST_MINOR := $(shell echo $(KUBE_VERSION) | sed 's/^v\([0-9]*\.[0-9]*\).*/\1/')
K8S_MINOR    ?= $(NEWEST_MINOR)
BANDS        := $(patsubst hack/bands/k8s%/go.mod,%,$(wildcard hack/bands/k8s*/go.mod))

ifeq ($(K8S_MINOR),$(NEWEST_MINOR))
build: $(BIN)/hami-scheduler $(BIN)/hami-webhook $(BIN)/kubectl-hami
else ifneq ($(filter $(K8S_MINOR),$(BANDS)),)
BAND_MODFILE := hack/bands/k8s$(K8S_MINOR)/go.mod
BAND_KUBE    := $(shell sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*\)$$/\1/p' $(BAND_MODFILE))
BAND_LDFLAGS := $(subst $(KUBE_VERSION),$(BAND_KUBE),$(LDFLAGS))
build: $(BIN)/hami-scheduler-$(K8S_MINOR)

$(BIN)/hami-scheduler-$(K8S_MINOR): FORCE
	$(GO) build -modfile=$(BAND_MODFILE) -tags k8s$(K8S_MINOR) -ldflags '$(BAND_LDFLAGS)' -o $@ ./cmd/hami-scheduler
else
$(error K8S_MINOR=$(K8S_MINOR): this tree builds hami-scheduler for Kubernetes $(NEWEST_MINOR) and $(BANDS))
endif

# Every band's scheduler, for make test-compat.
build-bands: build
	@for m in $(BANDS); do $(MAKE) --no-print-directory build K8S_MINOR=$$m || exit 1; done


$(BIN)/hami-scheduler: FORCE
	$(GO) build -ldflags '$(LDFLAGS)' -o $@ ./cmd/hami-scheduler

$(BIN)/hami-webhook: FORCE
	$(GO) build -ldflags '$(LDFLAGS)' -o $@ ./cmd/hami-webhook

# The kubectl plugin: copy it onto the PATH to get `kubectl hami`.
$(BIN)/kubectl-hami: FORCE
	$(GO) build -ldflags '$(LDFLAGS)' -o $@ ./cmd/kubectl-hami

FORCE:

# The local cluster: control plane, simulated GPU nodes and hami-scheduler in
# one process (cmd/hami-local). RUN_ARGS passes flags, e.g. RUN_ARGS='-nodes "4 nodes x 8 cards of NVIDIA A100 40 GiB"'.
# No -trimpath: the in-process kube-apiserver finds its test certificates by source path.
# RUN_ARGS=-kueue also runs Kueue (docs/kueue.md), built first.
run: $(BIN)/hami-local $(if $(findstring -kueue,$(RUN_ARGS)),$(BIN)/kueue)
	./$(BIN)/hami-local $(RUN_ARGS)

$(BIN)/hami-local: FORCE
	$(GO) build -o $@ ./cmd/hami-local

test: lint test-unit test-race

# The test binaries are stamped with the Kubernetes release they link, as
# release binaries are: the in-process API server then reports it at
# /version, and test/release's hami-scheduler processes accept it.
TEST_LDFLAGS := -X $(VERSION_PKG).gitVersion=$(KUBE_VERSION)

# test/kueue runs Kueue's controller-manager, built from Go modules.
test-unit: $(BIN)/kueue
	HAMI_KUEUE_BINARY=$(abspath $(BIN)/kueue) $(GO) test -count=1 -ldflags '$(TEST_LDFLAGS)' ./...

# The compatibility suite (test/compat) against each release's own
# kube-apiserver, built from Go modules and cached (hack/build-kube-apiserver.sh).
test-compat: build-bands
	./hack/test-compat.sh $(COMPAT_VERSIONS)

test-compat-smoke: build-bands
	./hack/test-compat.sh $(COMPAT_SMOKE)

test-race:
	$(GO) test -count=1 -race $(RACE_PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./devices/... ./plugins/...

# End-to-end throughput on the in-process control plane (test/perf).
bench-e2e:
	$(GO) test -run '^$$' -bench '^BenchmarkThroughput$$' -benchtime 1x -timeout 120m -ldflags '$(TEST_LDFLAGS)' ./test/perf -args -nodes=$(BENCH_NODES) -pods=$(BENCH_PODS) -results=$(abspath $(BENCH_RESULTS)) $(BENCH_ARGS)

# The scale run of docs/benchmarks/end-to-end.md: 200, 1,000 and 2,000 nodes x 8 cards
# one after the other, steady arrivals at 30 pods/s (about 50 minutes on 2
# cores). 5,000 nodes on a larger machine: BENCH_NODES=5000 BENCH_PODS=10000.
bench-scale:
	$(MAKE) bench-e2e BENCH_NODES=200,1000,2000 BENCH_PODS=1000,2000,4000 \
		BENCH_ARGS="-policies=binpack,binpack/q0,binpack/q20,spread -arrivals=backlog,steady -rate=30 $(BENCH_ARGS)"

# p99 to Running against the arrival rate: 200 nodes x 8 cards, steady
# arrivals at 10 to 50 pods/s with binpack as shipped, HAMi's order and
# spread (15 phases of 1,000 pods and the baseline).
bench-rates:
	$(MAKE) bench-e2e BENCH_NODES=200 BENCH_PODS=1000 \
		BENCH_ARGS="-policies=binpack,binpack/q0,spread -arrivals=steady -rate=10,20,30,40,50 $(BENCH_ARGS)"

# Binpack's bursts against HAMi's order (docs/benchmarks/bursts.md):
# 20 nodes x 4 cards with 100 pods and 200 x 8 with 1,000, each setting
# BURST_RUNS times (as shipped, HAMi's order binpack/q0, burstQueueWait
# 8s and 16s); prints the table over the runs and binpack's rules, PASS or
# FAIL (-check-rules: a FAIL fails the run). About 40 minutes on 2 cores.
BURST_RUNS ?= 5
bench-bursts:
	$(MAKE) bench-e2e BENCH_NODES=20x4,200x8 BENCH_PODS=100,1000 BENCH_RESULTS=_output/bench/bursts.json \
		BENCH_ARGS="-policies=binpack,binpack/q0,binpack/b8s,binpack/b16s -arrivals=backlog -runs=$(BURST_RUNS) -check-rules $(BENCH_ARGS)"

# The whole figure set of docs/benchmarks/bursts.md: bench-bursts, then
# bench-rates (steady arrivals on 200 x 8, the steady rules checked); fails
# when either breaks a rule, after both ran. About an hour on 2 cores.
bench-packing:
	@status=0; \
	$(MAKE) bench-bursts || status=1; \
	$(MAKE) bench-rates BENCH_RESULTS=_output/bench/rates.json BENCH_ARGS="-check-rules $(BENCH_ARGS)" || status=1; \
	exit $$status

# GPU nodes of both kinds (docs/benchmarks/dra.md): one run on 200 nodes x 8
# cards, a backlog of 1,000 pods per phase, each setting DRA_RUNS times:
# (a) binpack on device-plugin nodes alone against half the nodes DRA
# nodes (binpack/dra50); (b) all of them DRA nodes, this scheduler's route
# (binpack/dra100) against HAMi-DRA's (binpack/dra100/hami-dra: its
# webhook's claims, kube-scheduler's DynamicResources). DRA_NODES and
# DRA_PODS run another size, e.g. DRA_NODES=20x4 DRA_PODS=100.
DRA_NODES ?= 200x8
DRA_PODS  ?= 1000
DRA_RUNS  ?= 3
bench-dra:
	$(MAKE) bench-e2e BENCH_NODES=$(DRA_NODES) BENCH_PODS=$(DRA_PODS) BENCH_RESULTS=_output/bench/dra.json \
		BENCH_ARGS="-policies=binpack,binpack/dra50,binpack/dra100,binpack/dra100/hami-dra -arrivals=backlog -runs=$(DRA_RUNS) $(BENCH_ARGS)"

# docs/plots/*.svg from the figures in docs/plots/data (a run's
# $(BENCH_RESULTS), copied there with its title and source, or a
# transcription of a published table). PLOTS_DATA and PLOTS_OUT draw
# others, e.g. PLOTS_DATA=_output/bench PLOTS_OUT=_output/bench.
PLOTS_DATA ?= docs/plots/data
PLOTS_OUT  ?= docs/plots
plots:
	$(GO) run ./hack/plots -data $(PLOTS_DATA) -out $(PLOTS_OUT)

lint: vet fmt verify-generate layout

# The kustomize tree manifests/ from the Helm chart manifests/charts/hami-scheduler
# (test/e2e's TestManifestsGenerated fails while they differ).
manifests:
	$(GO) run ./hack/render-manifests

# Deepcopy, conversion and defaulting code of the plugin args (apis/config),
# with k8s.io/code-generator pinned as go.mod tools.
generate:
	./hack/update-codegen.sh

# The committed generated code is what the generators produce.
verify-generate:
	@tmp=$$(mktemp -d); cp -r apis "$$tmp/"; ./hack/update-codegen.sh; \
	if ! diff -r "$$tmp/apis" apis >/dev/null; then diff -r "$$tmp/apis" apis; echo "generated code is stale: run make generate"; rm -rf "$$tmp"; exit 1; fi; rm -rf "$$tmp"

# The chaos suite on the in-process control plane: 10 seeds (make test runs
# one, the short variant); CHAOS_SEED=n replays one seed.
CHAOS_SEEDS ?= 10
# kube-scheduler's scheduler_perf with the HAMi and Coscheduling plugins
# compiled in (test/upstream, build tag upstream): upstream's workloads,
# each with the shipped profile and without the HAMi plugin, side by side.
# etcd is built from Go modules (hack/etcd). BENCH_UPSTREAM is -bench's
# pattern; BENCH_UPSTREAM_ARGS e.g. -topics=misc -variants=hami,plain.
BENCH_UPSTREAM ?= BenchmarkUpstream
BENCH_UPSTREAM_ARGS ?=
UPSTREAM_DATA ?= $(CURDIR)/$(BIN)/bench-upstream
bench-upstream: $(BIN)/etcd
	mkdir -p $(UPSTREAM_DATA)
	PATH=$(CURDIR)/$(BIN):$$PATH $(GO) test -tags upstream -run '^$$' -bench '$(BENCH_UPSTREAM)' -benchtime 1x -timeout 600m ./test/upstream -args -data-items-dir=$(UPSTREAM_DATA) $(BENCH_UPSTREAM_ARGS)

# scheduler_perf's integration-test,short cases (its smallest sizes) of
# the same topics, with and without HAMi, and HAMi's own; CI runs it.
test-upstream: $(BIN)/etcd
	mkdir -p $(UPSTREAM_DATA)
	PATH=$(CURDIR)/$(BIN):$$PATH $(GO) test -tags upstream -run '^$$' -bench BenchmarkUpstream -benchtime 1x -timeout 60m ./test/upstream -args -data-items-dir=$(UPSTREAM_DATA) -perf-scheduling-label-filter=integration-test,short $(BENCH_UPSTREAM_ARGS)

$(BIN)/etcd: FORCE
	$(GO) build -o $@ ./hack/etcd

# Kueue's controller-manager (sigs.k8s.io/kueue's cmd/kueue) for make run
# RUN_ARGS=-kueue and test/kueue, built from Go modules in hack/kueue, a
# module of its own: Kueue pins older Kubernetes libraries than ours. Cold,
# it compiles Kueue and its Kubernetes libraries (see docs/kueue.md).
$(BIN)/kueue: hack/kueue/go.mod hack/kueue/go.sum
	cd hack/kueue && $(GO) build -o $(abspath $@) sigs.k8s.io/kueue/cmd/kueue

# Kueue alone against Kueue with hami-scheduler's admission check
# hami.io/card-fit (test/kueue, docs/benchmarks/kueue.md): one trace of mixed
# fractional jobs on 200 nodes x 8 cards, arriving faster than they
# finish. BENCH_KUEUE_ARGS e.g. -kueue-bench-jobs=300 -kueue-bench-rate=5.
BENCH_KUEUE_ARGS ?=
bench-kueue: $(BIN)/kueue
	HAMI_KUEUE_BINARY=$(abspath $(BIN)/kueue) $(GO) test -count=1 -run '^$$' -bench '^BenchmarkKueueAdmission$$' -benchtime 1x -timeout 90m -ldflags '$(TEST_LDFLAGS)' ./test/kueue -args $(BENCH_KUEUE_ARGS)

test-chaos:
	$(GO) test -count=1 -timeout 30m -run '^TestChaos$$' ./test/e2e -args -chaos-seeds=$(CHAOS_SEEDS) $(if $(CHAOS_SEED),-chaos-seed=$(CHAOS_SEED))

# Every fuzz target for FUZZTIME (default 30s); FUZZ_PKGS narrows it.
fuzz:
	./hack/fuzz.sh

# Shipped code (plugins/, devices/, webhook/, apis/, cardfit/, scheduler/
# and the shipped binaries) depends on no test, hack/ or local-cluster
# code; no binary of cmd/ on test or hack/ code, nor on Helm (only hack/
# and the tests render the chart); files built for some Kubernetes bands
# only carry the suffix of their build tags (hack/layout).
layout:
	GO=$(GO) $(GO) run ./hack/layout

vet:
	$(GO) vet ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean:
	rm -rf $(BIN)
