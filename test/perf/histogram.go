package perf

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricFamilies are a scrape of a scheduler's /metrics, by name.
type metricFamilies map[string]*dto.MetricFamily

// parseMetrics reads a /metrics page (Prometheus' text format).
func parseMetrics(page []byte) (metricFamilies, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return families, nil
}

// series are the family's series whose labels include match.
func (m metricFamilies) series(name string, match map[string]string) []*dto.Metric {
	var out []*dto.Metric
series:
	for _, s := range m[name].GetMetric() {
		for k, v := range match {
			if label(s, k) != v {
				continue series
			}
		}
		out = append(out, s)
	}
	return out
}

// value sums the gauges or counters of a family whose labels include
// match.
func (m metricFamilies) value(name string, match map[string]string) float64 {
	var v float64
	for _, s := range m.series(name, match) {
		v += s.GetGauge().GetValue() + s.GetCounter().GetValue() + s.GetUntyped().GetValue()
	}
	return v
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// attemptMetric is kube-scheduler's histogram of scheduling attempts, from
// the start of the scheduling cycle to the end of binding, by result and
// profile.
const attemptMetric = "scheduler_scheduling_attempt_duration_seconds"

// histogram is a cumulative Prometheus histogram: upper bound -> count.
type histogram struct {
	bounds []float64
	counts []float64
}

// attempts is the attempt histogram of one profile and result.
func (m metricFamilies) attempts(profile, result string) histogram {
	var h histogram
	for _, s := range m.series(attemptMetric, map[string]string{"profile": profile, "result": result}) {
		// The text format lists the +Inf bucket, which a registry's
		// Gather leaves implicit: it is added when absent.
		for _, b := range s.GetHistogram().GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue
			}
			h.bounds = append(h.bounds, b.GetUpperBound())
			h.counts = append(h.counts, float64(b.GetCumulativeCount()))
		}
		h.bounds = append(h.bounds, math.Inf(1))
		h.counts = append(h.counts, float64(s.GetHistogram().GetSampleCount()))
	}
	return h
}

// pluginMetric is kube-scheduler's sampled histogram of each plugin's
// time at an extension point; Filter and Score observe one node each.
const pluginMetric = "scheduler_plugin_execution_duration_seconds"

// pluginMeans is each plugin's mean time at the extension point.
func (m metricFamilies) pluginMeans(extensionPoint string) map[string]time.Duration {
	totals := map[string]sumCount{}
	for _, s := range m.series(pluginMetric, map[string]string{"extension_point": extensionPoint}) {
		t := totals[label(s, "plugin")]
		t.sum += s.GetHistogram().GetSampleSum()
		t.count += float64(s.GetHistogram().GetSampleCount())
		totals[label(s, "plugin")] = t
	}
	out := map[string]time.Duration{}
	for plugin, t := range totals {
		if d := t.mean(); d > 0 {
			out[plugin] = d
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

// sumCount is the sum and count of a histogram's observations.
type sumCount struct{ sum, count float64 }

// histogramTotals adds up the sum and count of every series of a
// histogram metric whose labels include match (e.g. profile and
// extension_point).
func (m metricFamilies) histogramTotals(name string, match map[string]string) sumCount {
	var t sumCount
	for _, s := range m.series(name, match) {
		t.sum += s.GetHistogram().GetSampleSum()
		t.count += float64(s.GetHistogram().GetSampleCount())
	}
	return t
}

// mean is the mean observation in seconds, 0 when there is none.
func (t sumCount) mean() time.Duration {
	if t.count <= 0 {
		return 0
	}
	return time.Duration(t.sum / t.count * float64(time.Second))
}
