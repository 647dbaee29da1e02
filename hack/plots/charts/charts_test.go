package charts

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hami-scheduler/hami-scheduler/test/util/benchfigures"
)

// sweep is a run on two sizes with steady arrivals at two rates: every
// chart applies.
func sweep() *benchfigures.File {
	f := &benchfigures.File{Title: "a test run", Source: "written by a test"}
	for _, nodes := range []int{200, 1000} {
		f.Phases = append(f.Phases,
			benchfigures.Phase{Nodes: nodes, Pods: 100, Name: "baseline backlog", Arrival: benchfigures.Backlog, PodsPerSecond: 300, RunP99Seconds: 1},
			benchfigures.Phase{Nodes: nodes, Pods: 100, Name: "hami backlog binpack", Setting: "binpack", Arrival: benchfigures.Backlog, PodsPerSecond: float64(nodes) / 20, RunP99Seconds: 30},
			benchfigures.Phase{Nodes: nodes, Pods: 100, Name: "hami backlog binpack/q0", Setting: "binpack/q0", Arrival: benchfigures.Backlog, PodsPerSecond: float64(nodes) / 40, RunP99Seconds: 50})
		for _, rate := range []float64{10, 30} {
			f.Phases = append(f.Phases, benchfigures.Phase{Nodes: nodes, Pods: 100, Name: "hami steady binpack", Setting: "binpack",
				Arrival: benchfigures.Steady, Rate: rate, PodsPerSecond: rate, RunP99Seconds: rate / 10})
		}
	}
	return f
}

// TestCharts: each chart the figures support is drawn as SVG with its
// title, axes and one legend entry per series; the baseline stays out of
// the throughput chart.
func TestCharts(t *testing.T) {
	charts, err := Charts(sweep())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		axes, series []string
	}{
		ThroughputByNodes: {[]string{nodesLabel, podsPerSecLabel}, []string{"binpack", "binpack/q0 (HAMi's order)"}},
		P99ByRate:         {[]string{rateLabel, p99Label}, []string{"binpack, 200 nodes", "binpack, 1000 nodes"}},
		P99ByNodes:        {[]string{nodesLabel, p99Label}, []string{"binpack at 10 pods/s", "binpack at 30 pods/s"}},
	}
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
		var buf bytes.Buffer
		if err := WriteSVG(&buf, c); err != nil {
			t.Fatal(err)
		}
		got, err := Inspect(&buf)
		if err != nil {
			t.Fatalf("%s: not an SVG document: %v", c.Name, err)
		}
		w := want[c.Name]
		for _, s := range append(append([]string{"a test run"}, w.axes...), w.series...) {
			if !got.HasText(s) {
				t.Errorf("%s: no text %q in %q", c.Name, s, got.Texts)
			}
		}
		if got.HasText("baseline") {
			t.Errorf("%s: the baseline is drawn", c.Name)
		}
		// Per series a line and its marks, besides the axes and grid.
		if got.Paths < 2*len(w.series)+2 {
			t.Errorf("%s: %d paths, want the axes and %d series", c.Name, got.Paths, len(w.series))
		}
	}
	if diff := cmp.Diff([]string{ThroughputByNodes, P99ByRate, P99ByNodes}, names); diff != "" {
		t.Errorf("charts (-want +got):\n%s", diff)
	}
}

// TestChartsNeedTwoPoints: a run on one size at one rate makes no chart;
// one steady rate on two sizes makes only p99 against nodes, its zero
// p99 left off the log scale.
func TestChartsNeedTwoPoints(t *testing.T) {
	one := &benchfigures.File{Title: "t", Source: "s", Phases: []benchfigures.Phase{
		{Nodes: 200, Pods: 1, Name: "hami backlog binpack", Setting: "binpack", Arrival: benchfigures.Backlog, PodsPerSecond: 1, RunP99Seconds: 1},
		{Nodes: 200, Pods: 1, Name: "hami steady binpack", Setting: "binpack", Arrival: benchfigures.Steady, Rate: 30, PodsPerSecond: 1, RunP99Seconds: 1},
	}}
	if charts, err := Charts(one); err != nil || len(charts) != 0 {
		t.Errorf("one size, one rate: %d charts, error %v; want none", len(charts), err)
	}
	two := &benchfigures.File{Title: "t", Source: "s"}
	for i, nodes := range []int{200, 1000, 2000} {
		two.Phases = append(two.Phases, benchfigures.Phase{Nodes: nodes, Pods: 1, Name: "hami steady spread", Setting: "spread",
			Arrival: benchfigures.Steady, Rate: 30, PodsPerSecond: 1, RunP99Seconds: float64(i)})
	}
	charts, err := Charts(two)
	if err != nil || len(charts) != 1 || charts[0].Name != P99ByNodes {
		t.Fatalf("one rate on three sizes: %d charts, error %v; want p99 against nodes", len(charts), err)
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, charts[0]); err != nil {
		t.Fatal(err)
	}
	got, err := Inspect(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// Ticks mark the data's X values: the zero p99 at 200 nodes is left
	// off, so 200 is no tick.
	if !got.HasText("1000") || !got.HasText("2000") {
		t.Errorf("texts %q: want ticks at 1000 and 2000 only", got.Texts)
	}
	for _, text := range got.Texts {
		if strings.TrimSpace(text) == "200" {
			t.Errorf("a tick at 200 nodes, whose only point has p99 0")
		}
	}
}

// TestInspectRefuses: a document that is not well-formed, or not SVG.
func TestInspectRefuses(t *testing.T) {
	for _, doc := range []string{"<svg><text>a</svg>", "<html><text>a</text></html>", ""} {
		if _, err := Inspect(strings.NewReader(doc)); err == nil {
			t.Errorf("Inspect(%q): no error", doc)
		}
	}
}
