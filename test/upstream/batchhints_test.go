//go:build upstream

package upstream

import (
	"k8s.io/component-base/metrics/legacyregistry"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
)

// batchHints are the opportunistic-batching hints each workload used (the
// scheduler's batch_attempts_total with result hint_used, every profile),
// by workloadOf's key and variant: evidence that batching applied.
var batchHints measured

// countBatchHints records, when the workload ends and before scheduler_perf
// resets the metrics registry, the batching hints it used.
func countBatchHints(tCtx ktesting.TContext) error {
	tCtx.Cleanup(func() {
		used, err := hintsUsed()
		if err != nil {
			tCtx.Logf("no batching figures: %v", err)
			return
		}
		batchHints.set(tCtx.Name(), used)
	})
	return nil
}

// hintsUsed sums the registry's batch_attempts_total series whose result
// is hint_used.
func hintsUsed() (float64, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return 0, err
	}
	var used float64
	for _, f := range families {
		if f.GetName() != schedmetrics.SchedulerSubsystem+"_batch_attempts_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == schedmetrics.BatchAttemptHintUsed {
					used += m.GetCounter().GetValue()
				}
			}
		}
	}
	return used, nil
}
