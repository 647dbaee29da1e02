//go:build upstream

package upstream

import "flag"

var (
	// upstreamDir is scheduler_perf's directory in the module cache
	// (the Makefile passes $(go list -m -f {{.Dir}} k8s.io/kubernetes)/test/integration/scheduler_perf).
	upstreamDir = flag.String("upstream-dir", "", "test/integration/scheduler_perf of the k8s.io/kubernetes module")
	// topics are the topics whose test cases run: upstream's directories
	// in scheduler_perf, and this package's (topics/).
	topics = flag.String("topics", "misc,default_preemption,topology_spreading,affinity,podgroup/basicscheduling,podgroup/gangscheduling,batching,batched,devices", "comma-separated topics to run: scheduler_perf's directories, and this package's topics/ (batched, devices)")
	// variants are the profiles each upstream case runs with.
	variants = flag.String("variants", "hami,plain", "comma-separated profiles: hami (the shipped profile) and plain (the same without the HAMi plugin)")
)

// flagValue is the value of a flag scheduler_perf defines, "" when unset.
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
