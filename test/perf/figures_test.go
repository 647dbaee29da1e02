package perf

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
	"github.com/hami-scheduler/hami-scheduler/test/util/benchfigures"
)

// TestHAMiPhases: a setting's phases are its backlog, then steady
// arrivals at each rate, named with the rate when there are several.
func TestHAMiPhases(t *testing.T) {
	binpack := Setting{Policy: devices.NodeBinpack}
	var names []string
	for _, ph := range hamiPhases(Options{Arrivals: []Arrival{Backlog, Steady}, Rates: []float64{10, 30}}, binpack) {
		names = append(names, ph.Name())
	}
	if diff := cmp.Diff([]string{"hami backlog binpack", "hami steady 10/s binpack", "hami steady 30/s binpack"}, names); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	one := hamiPhases(Options{Arrivals: []Arrival{Steady}}, binpack)
	if len(one) != 1 || one[0].Rate != 0 || one[0].Name() != "hami steady binpack" {
		t.Errorf("no rates: %+v, want one steady phase at the default rate, named without it", one)
	}
	r := &Result{Phases: []Phase{{Profile: profile.DefaultSchedulerName}, {Profile: profile.SchedulerName, Setting: binpack, Arrival: Backlog, Running: 100, Elapsed: 4 * time.Second}}}
	if got := defaultRate(r, binpack); got != 12.5 {
		t.Errorf("default rate %v, want half the backlog's 25 pods/s", got)
	}
	if got := defaultRate(r, Setting{Policy: devices.NodeSpread}); got != 10 {
		t.Errorf("default rate without a backlog %v, want 10", got)
	}
}

// TestFigures: each phase of each run becomes a phase of the figures,
// with the run's node count, the phase's table name and its figures.
func TestFigures(t *testing.T) {
	q0 := Setting{Policy: devices.NodeBinpack, SetQueueLimit: true}
	runs := []*Result{{
		Nodes:    200,
		NodeSide: "faithful",
		Phases: []Phase{
			{Profile: profile.DefaultSchedulerName, Arrival: Backlog, Pods: 10, Running: 10, Elapsed: 2 * time.Second, RunP50: time.Second, RunP99: 2 * time.Second},
			{Profile: profile.SchedulerName, Setting: q0, Arrival: Steady, Rate: 30, Pods: 10, Running: 10, Elapsed: 5 * time.Second,
				Served: 1.5, RunP50: 500 * time.Millisecond, RunP99: 3 * time.Second, Packing: Packing{Cards: 4, Nodes: 2}},
		},
	}}
	got := Figures(runs, "title", "command", "2026-12-05")
	want := &benchfigures.File{Title: "title", Source: got.Source, Command: "command", Date: "2026-12-05", NodeSide: "faithful", Phases: []benchfigures.Phase{
		{Nodes: 200, Pods: 10, Name: "baseline backlog", Arrival: "backlog", PodsPerSecond: 5, RunP50Seconds: 1, RunP99Seconds: 2},
		{Nodes: 200, Pods: 10, Name: "hami steady binpack/q0", Setting: "binpack/q0", Arrival: "steady", Rate: 30, PodsPerSecond: 2, WhileArriving: 1.5,
			RunP50Seconds: 0.5, RunP99Seconds: 3, CardsUsed: 4, NodesUsed: 2},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Source, "BenchmarkThroughput") {
		t.Errorf("source %q does not name the benchmark", got.Source)
	}
	if errs := got.Validate(); len(errs) > 0 {
		t.Errorf("figures do not validate: %v", errs)
	}
}
