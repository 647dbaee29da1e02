//go:build upstream

// Package upstream runs kube-scheduler's own benchmark suite,
// test/integration/scheduler_perf of k8s.io/kubernetes, with the HAMi and
// Coscheduling plugins compiled in: upstream's workloads (its YAML, read
// from the module cache) each run twice, with hami-scheduler's shipped
// profile and with the same profile without the HAMi plugin, and HAMi's own
// workloads (hami/performance-config.yaml) in the suite's format. make
// bench-upstream runs the performance sizes, make test-upstream the
// suite's integration-test cases. scheduler_perf starts etcd from PATH:
// the Makefile builds it from Go modules (hack/etcd).
package upstream

import (
	"fmt"
	"os"
	"testing"

	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
)

func TestMain(m *testing.M) {
	// InitTests parses the flags, ours included (flags.go).
	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
