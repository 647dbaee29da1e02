package perf

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// attemptMetric is kube-scheduler's histogram of scheduling attempts, from
// the start of the scheduling cycle to the end of binding, by result and
// profile.
const attemptMetric = "scheduler_scheduling_attempt_duration_seconds"

// histogram is a cumulative Prometheus histogram: upper bound -> count.
type histogram struct {
	bounds []float64
	counts []float64
}

// attempts gathers the attempt histogram of one profile and result.
func attempts(profile, result string) (histogram, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return histogram{}, fmt.Errorf("gather metrics: %w", err)
	}
	var h histogram
	for _, f := range families {
		if f.GetName() != attemptMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "profile") != profile || label(m, "result") != result {
				continue
			}
			for _, b := range m.GetHistogram().GetBucket() {
				h.bounds = append(h.bounds, b.GetUpperBound())
				h.counts = append(h.counts, float64(b.GetCumulativeCount()))
			}
			h.bounds = append(h.bounds, math.Inf(1))
			h.counts = append(h.counts, float64(m.GetHistogram().GetSampleCount()))
		}
	}
	return h, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// pluginMetric is kube-scheduler's sampled histogram of each plugin's
// time at an extension point; Filter and Score observe one node each.
const pluginMetric = "scheduler_plugin_execution_duration_seconds"

// pluginTotals are pluginMetric's totals by extension point and plugin.
type pluginTotals map[[2]string]sumCount

func pluginTimes() (pluginTotals, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	out := pluginTotals{}
	for _, f := range families {
		if f.GetName() != pluginMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			key := [2]string{label(m, "extension_point"), label(m, "plugin")}
			t := out[key]
			t.sum += m.GetHistogram().GetSampleSum()
			t.count += float64(m.GetHistogram().GetSampleCount())
			out[key] = t
		}
	}
	return out, nil
}

// since is each plugin's mean time at the extension point since earlier.
func (t pluginTotals) since(earlier pluginTotals, extensionPoint string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for key, total := range t {
		if key[0] != extensionPoint {
			continue
		}
		if d := total.since(earlier[key]).mean(); d > 0 {
			out[key[1]] = d
		}
	}
	return out
}

// since is h minus an earlier snapshot of the same histogram.
func (h histogram) since(earlier histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts))}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(earlier.counts) {
			out.counts[i] -= earlier.counts[i]
		}
	}
	return out
}

// count is the number of observations.
func (h histogram) count() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile does:
// linear interpolation within the bucket that holds it; +Inf when it lies
// beyond the highest finite bound, NaN when empty.
func (h histogram) quantile(q float64) float64 {
	total := h.count()
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	i := sort.Search(len(h.counts), func(i int) bool { return h.counts[i] >= rank })
	if i >= len(h.counts) {
		i = len(h.counts) - 1
	}
	if math.IsInf(h.bounds[i], 1) {
		if i > 0 && h.counts[i-1] >= rank {
			return h.bounds[i-1]
		}
		return math.Inf(1)
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.bounds[i-1], h.counts[i-1]
	}
	inBucket := h.counts[i] - below
	if inBucket == 0 {
		return h.bounds[i]
	}
	return lower + (h.bounds[i]-lower)*(rank-below)/inBucket
}

// sumCount adds up the sum and count of every series of a histogram metric
// whose labels include match (e.g. profile and extension_point).
type sumCount struct{ sum, count float64 }

func histogramTotals(name string, match map[string]string) (sumCount, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return sumCount{}, fmt.Errorf("gather metrics: %w", err)
	}
	var t sumCount
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range match {
				if label(m, k) != v {
					continue series
				}
			}
			t.sum += m.GetHistogram().GetSampleSum()
			t.count += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return t, nil
}

func (t sumCount) since(earlier sumCount) sumCount {
	return sumCount{sum: t.sum - earlier.sum, count: t.count - earlier.count}
}

// mean is the mean observation in seconds, 0 when there is none.
func (t sumCount) mean() time.Duration {
	if t.count <= 0 {
		return 0
	}
	return time.Duration(t.sum / t.count * float64(time.Second))
}

// liveHeap is the process's heap in use after a garbage collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// settledHeap is liveHeap once it has stopped falling: a scheduler stopped
// just before lets go of its memory only as its goroutines end, which
// takes a few seconds (at most 20 tries a second apart).
func settledHeap() uint64 {
	heap := liveHeap()
	for range 20 {
		time.Sleep(time.Second)
		next := liveHeap()
		if next+1<<20 > heap {
			return min(heap, next)
		}
		heap = next
	}
	return heap
}
