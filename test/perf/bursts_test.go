package perf

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// TestServiceTimes: a node's time per pod is measured from one release of
// its lock to the next when the pod served in between was waiting at the
// first; a node's first pod, a pod handed over after the release (the
// node was idle), the last pod (no release after it) and other phases'
// pods measure nothing.
func TestServiceTimes(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	all := []simnode.HandOver{
		{Node: "n1", Namespace: "ns", Name: "a", AllocateStarted: at(100)},
		{Node: "n1", Namespace: "ns", Name: "b", Released: at(1000), AllocateStarted: at(1150)},
		{Node: "n1", Namespace: "ns", Name: "c", Released: at(2600), AllocateStarted: at(2700)},
		// handed over after c's release: the node was idle.
		{Node: "n1", Namespace: "ns", Name: "d", Released: at(4300), AllocateStarted: at(9000)},
		{Node: "n1", Namespace: "ns", Name: "e", Released: at(9500), AllocateStarted: at(9600)},
		{Node: "n2", Namespace: "ns", Name: "f", Released: at(500), AllocateStarted: at(600)},
		{Node: "n2", Namespace: "ns", Name: "g", Released: at(2300), AllocateStarted: at(2400)},
		{Node: "n1", Namespace: "other", Name: "x", Released: at(1000), AllocateStarted: at(1100)},
	}
	handed := map[string]time.Time{"a": at(0), "b": at(0), "c": at(0), "d": at(8000), "e": at(0), "f": at(0), "g": at(0)}
	want := map[string][]time.Duration{
		"n1": {1600 * time.Millisecond, 1700 * time.Millisecond},
		"n2": {1800 * time.Millisecond},
	}
	if diff := cmp.Diff(want, serviceTimes(all, "ns", handed)); diff != "" {
		t.Errorf("service times (-want +got):\n%s", diff)
	}
}

func TestPerPodTimes(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name                string
		byNode              map[string][]time.Duration
		busiest             string
		wantAll, wantBusier time.Duration
	}{
		{name: "nothing measured"},
		{name: "the busiest node's own", byNode: map[string][]time.Duration{"a": ms(1500, 1600, 1700), "b": ms(2000, 2100)}, busiest: "a",
			wantAll: 1700 * time.Millisecond, wantBusier: 1600 * time.Millisecond},
		{name: "too few on the busiest: all nodes'", byNode: map[string][]time.Duration{"a": ms(1500, 1600, 1700), "b": ms(2000, 2100)}, busiest: "b",
			wantAll: 1700 * time.Millisecond, wantBusier: 1700 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, busiest := perPodTimes(tt.byNode, tt.busiest)
			if all != tt.wantAll || busiest != tt.wantBusier {
				t.Errorf("perPodTimes = %s, %s; want %s, %s", all, busiest, tt.wantAll, tt.wantBusier)
			}
		})
	}
}

// TestGroups: a run's HAMi phases gather by setting, arrival and rate, in
// the order they ran, the baseline left out.
func TestGroups(t *testing.T) {
	binpack, q0 := Setting{Policy: devices.NodeBinpack}, Setting{Policy: devices.NodeBinpack, SetQueueLimit: true}
	r := &Result{Nodes: 20, Phases: []Phase{
		{Profile: "default-scheduler", Arrival: Backlog},
		{Setting: binpack, Arrival: Backlog, Run: 1},
		{Setting: binpack, Arrival: Backlog, Run: 2},
		{Setting: binpack, Arrival: Steady, Rate: 10},
		{Setting: binpack, Arrival: Steady, Rate: 30},
		{Setting: q0, Arrival: Backlog, Run: 1},
	}}
	var got [][2]any
	for _, g := range r.Groups() {
		got = append(got, [2]any{g.Setting.String() + " " + string(g.Arrival), len(g.Phases)})
	}
	want := [][2]any{{"binpack backlog", 2}, {"binpack steady", 1}, {"binpack steady", 1}, {"binpack/q0 backlog", 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}
