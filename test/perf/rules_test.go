package perf

import (
	"strings"
	"testing"
	"time"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// burstPhase is a backlog of 100 pods that ran in elapsed seconds on
// cards and nodes, its busiest node holding busiest pods at 1.6 s each.
func burstPhase(setting Setting, run int, elapsed float64, cards, nodes, busiest int) Phase {
	return Phase{Profile: "hami-scheduler", Setting: setting, Arrival: Backlog, Run: run, Pods: 100,
		Elapsed:       time.Duration(elapsed * float64(time.Second)),
		Packing:       Packing{Cards: cards, Nodes: nodes, BusiestNode: busiest},
		BusiestPerPod: 1600 * time.Millisecond, HandOverPerPod: 1600 * time.Millisecond}
}

func steadyPhase(setting Setting, rate float64, p99 time.Duration, nodes int) Phase {
	return Phase{Profile: "hami-scheduler", Setting: setting, Arrival: Steady, Rate: rate, Pods: 1000, RunP99: p99,
		Packing: Packing{Nodes: nodes}, HandOverPerPod: 1600 * time.Millisecond}
}

// TestRules: each rule passes on figures within it and fails on figures
// beyond it; rules a run has no phases for are not checked.
func TestRules(t *testing.T) {
	binpack, q0 := Setting{Policy: devices.NodeBinpack}, Setting{Policy: devices.NodeBinpack, SetQueueLimit: true}
	hami := []Phase{burstPhase(q0, 1, 36, 28, 7, 22), burstPhase(q0, 2, 35, 28, 7, 22), burstPhase(q0, 3, 37, 29, 7, 22)}
	good := []Phase{burstPhase(binpack, 1, 35, 29, 7, 22), burstPhase(binpack, 2, 36, 30, 7, 22), burstPhase(binpack, 3, 37, 30, 7, 23)}
	tests := []struct {
		name   string
		phases []Phase
		// want maps each rule's text to PASS (true) or FAIL (false).
		want map[string]bool
	}{
		{name: "a burst within every rule", phases: append(append([]Phase{}, good...), hami...), want: map[string]bool{
			"cards used": true, "nodes used": true, "time to all Running": true, "slowest run": true}},
		{name: "more cards and nodes than HAMi's order +10%", phases: append([]Phase{burstPhase(binpack, 1, 20, 40, 12, 12), good[1], good[2]}, hami...), want: map[string]bool{
			"cards used": false, "nodes used": false, "time to all Running": true, "slowest run": true}},
		{name: "as many nodes as HAMi's order at worst",
			phases: []Phase{burstPhase(binpack, 1, 35, 28, 7, 22), burstPhase(binpack, 2, 36, 28, 7, 22), burstPhase(binpack, 3, 37, 30, 8, 23),
				burstPhase(q0, 1, 36, 28, 7, 22), burstPhase(q0, 2, 35, 28, 7, 22), burstPhase(q0, 3, 37, 30, 8, 22)},
			want: map[string]bool{"cards used": true, "nodes used": true, "time to all Running": true, "slowest run": true}},
		{name: "beyond 1.25 x its bound", phases: append([]Phase{burstPhase(binpack, 1, 45, 29, 7, 22), good[1], good[2]}, hami...), want: map[string]bool{
			"cards used": true, "nodes used": true, "time to all Running": false, "slowest run": false}},
		{name: "without HAMi's order: its own rules", phases: good, want: map[string]bool{
			"time to all Running": true, "slowest run": true}},
		{name: "one run is no spread", phases: good[:1], want: map[string]bool{
			"time to all Running": true, "slowest run": false}},
		{name: "steady arrivals within the rules", phases: []Phase{steadyPhase(binpack, 30, 4*time.Second, 50), steadyPhase(q0, 30, 50*time.Second, 37)},
			want: map[string]bool{"p99 to Running": true, "nodes used": true}},
		{name: "steady arrivals on more nodes than the rate needs, late", phases: []Phase{steadyPhase(binpack, 30, 6*time.Second, 60)},
			want: map[string]bool{"p99 to Running": false, "nodes used": false}},
		{name: "rates other than the goal are not checked", phases: []Phase{steadyPhase(binpack, 10, 9*time.Second, 40), steadyPhase(binpack, 40, 9*time.Second, 72)},
			want: map[string]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Result{Nodes: 20, Cards: 4, Phases: append([]Phase{{Profile: "default-scheduler"}}, tt.phases...)}
			got := map[string]bool{}
			for _, c := range Rules([]*Result{r}) {
				for prefix := range tt.want {
					if strings.HasPrefix(c.Rule, prefix) {
						got[prefix] = c.Pass
					}
				}
				if !hasPrefixIn(c.Rule, tt.want) {
					t.Errorf("unexpected rule %q", c.Rule)
				}
			}
			for rule, pass := range tt.want {
				if p, ok := got[rule]; !ok || p != pass {
					t.Errorf("%s: pass %v (checked %v), want %v", rule, p, ok, pass)
				}
			}
		})
	}
}

func hasPrefixIn(s string, prefixes map[string]bool) bool {
	for p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
