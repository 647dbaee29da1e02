package perf

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

func TestWaitedHandOvers(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	all := []simnode.HandOver{
		// waited: handed at 0, released at 1000, Allocate at 1150.
		{Node: "n1", Namespace: "ns", Name: "a", Released: at(1000), AllocateStarted: at(1150)},
		// handed after the release: the node was idle, not a hand-over.
		{Node: "n1", Namespace: "ns", Name: "b", Released: at(1000), AllocateStarted: at(3000)},
		// the node's first pod: no release before it.
		{Node: "n2", Namespace: "ns", Name: "c", AllocateStarted: at(500)},
		// another phase's pod.
		{Node: "n1", Namespace: "other", Name: "a", Released: at(1000), AllocateStarted: at(1100)},
		// never seen handed over.
		{Node: "n3", Namespace: "ns", Name: "d", Released: at(1000), AllocateStarted: at(1200)},
	}
	handed := map[string]time.Time{"a": at(0), "b": at(2000), "c": at(0)}
	got := waitedHandOvers(all, "ns", handed)
	if len(got) != 1 || got[0] != 150*time.Millisecond {
		t.Errorf("hand-overs %v, want [150ms]", got)
	}
}

func TestParseSetting(t *testing.T) {
	tests := []struct {
		in      string
		want    Setting
		wantErr bool
	}{
		{in: "binpack", want: Setting{Policy: devices.NodeBinpack}},
		{in: " spread ", want: Setting{Policy: devices.NodeSpread}},
		{in: "binpack/q2", want: Setting{Policy: devices.NodeBinpack, QueueLimit: 2, SetQueueLimit: true}},
		{in: "binpack/q0", want: Setting{Policy: devices.NodeBinpack, SetQueueLimit: true}},
		{in: "binpack/w4s", want: Setting{Policy: devices.NodeBinpack, QueueWait: 4 * time.Second, SetQueueWait: true}},
		{in: "binpack/q10/w2.5s", want: Setting{Policy: devices.NodeBinpack, QueueLimit: 10, SetQueueLimit: true, QueueWait: 2500 * time.Millisecond, SetQueueWait: true}},
		{in: "binpack/b10s", want: Setting{Policy: devices.NodeBinpack, BurstWait: 10 * time.Second, SetBurstWait: true}},
		{in: "binpack/b-1s", wantErr: true},
		{in: "binpack/g4", want: Setting{Policy: devices.NodeBinpack, Sets: 4, Gang: true}},
		{in: "spread/s8", want: Setting{Policy: devices.NodeSpread, Sets: 8}},
		{in: "binpack/w-1s", wantErr: true},
		{in: "binpack/q1/q2", wantErr: true},
		{in: "binpack/x", wantErr: true},
		{in: "binpack/q-1", wantErr: true},
		{in: "binpack/qx", wantErr: true},
		{in: "fastest", wantErr: true},
		{in: "binpack/dra50", want: Setting{Policy: devices.NodeBinpack, DRAPercent: 50}},
		{in: "binpack/dra100/hami-dra", want: Setting{Policy: devices.NodeBinpack, DRAPercent: 100, HAMiDRA: true}},
		{in: "binpack/dra0", wantErr: true},
		{in: "binpack/dra101", wantErr: true},
		{in: "binpack/dra0.5", wantErr: true},
		{in: "binpack/hami-dra", wantErr: true},
		{in: "binpack/dra100/g4/hami-dra", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseSetting(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSetting(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && got.String() != strings.TrimSpace(tt.in) {
			t.Errorf("String() = %q, want %q", got.String(), strings.TrimSpace(tt.in))
		}
	}
}

// TestSettingArgs: /qN alone is the count limit as the only bound, as
// before nodeQueueWait existed; /wD keeps the shipped count limit.
func TestSettingArgs(t *testing.T) {
	q20, _ := ParseSetting("binpack/q20")
	if a := q20.args(); *a.NodeQueueLimit != 20 || a.NodeQueueWait == nil || a.NodeQueueWait.Duration != 0 {
		t.Errorf("binpack/q20: limit %v, wait %v; want 20 and 0", a.NodeQueueLimit, a.NodeQueueWait)
	}
	w4, _ := ParseSetting("binpack/w4s")
	if a := w4.args(); a.NodeQueueLimit != nil || a.NodeQueueWait.Duration != 4*time.Second {
		t.Errorf("binpack/w4s: limit %v, wait %v; want the default and 4s", a.NodeQueueLimit, a.NodeQueueWait)
	}
	shipped, _ := ParseSetting("binpack")
	if a := shipped.args(); a.NodeQueueLimit != nil || a.NodeQueueWait != nil {
		t.Errorf("binpack: limit %v, wait %v; want the defaults", a.NodeQueueLimit, a.NodeQueueWait)
	}
}

func TestBusiestNode(t *testing.T) {
	pod := func(node string) corev1.Pod { return corev1.Pod{Spec: corev1.PodSpec{NodeName: node}} }
	if name, got := busiestNode([]corev1.Pod{pod("b"), pod("a"), pod("b"), pod("a"), pod("c"), pod(""), pod(""), pod("")}); name != "a" || got != 2 {
		t.Errorf("busiest node %s holds %d pods, want a (first by name of a tie), 2 (unbound pods count for none)", name, got)
	}
}

func TestParseSizes(t *testing.T) {
	tests := []struct {
		nodes, pods string
		wantSizes   []Size
		wantPods    []int
		wantErr     bool
	}{
		{nodes: "200", pods: "1000", wantSizes: []Size{{Nodes: 200}}, wantPods: []int{1000}},
		{nodes: "200,1000,2000", pods: "1000", wantSizes: []Size{{Nodes: 200}, {Nodes: 1000}, {Nodes: 2000}}, wantPods: []int{1000, 1000, 1000}},
		{nodes: "200, 2000", pods: "1000,4000", wantSizes: []Size{{Nodes: 200}, {Nodes: 2000}}, wantPods: []int{1000, 4000}},
		{nodes: "20x4,200x8", pods: "100,1000", wantSizes: []Size{{Nodes: 20, Cards: 4}, {Nodes: 200, Cards: 8}}, wantPods: []int{100, 1000}},
		{nodes: "200,1000,2000", pods: "1000,4000", wantErr: true},
		{nodes: "0", pods: "1", wantErr: true},
		{nodes: "20x0", pods: "1", wantErr: true},
		{nodes: "20x", pods: "1", wantErr: true},
		{nodes: "200", pods: "x", wantErr: true},
	}
	for _, tt := range tests {
		sizes, pods, err := ParseSizes(tt.nodes, tt.pods)
		if (err != nil) != tt.wantErr || !slices.Equal(sizes, tt.wantSizes) || !slices.Equal(pods, tt.wantPods) {
			t.Errorf("ParseSizes(%q, %q) = %v, %v, %v; want %v, %v (error %v)", tt.nodes, tt.pods, sizes, pods, err, tt.wantSizes, tt.wantPods, tt.wantErr)
		}
	}
}

func TestParseRates(t *testing.T) {
	tests := []struct {
		in      string
		want    []float64
		wantErr bool
	}{
		{in: "0", want: []float64{0}},
		{in: "10, 20,30.5", want: []float64{10, 20, 30.5}},
		{in: "-1", wantErr: true},
		{in: "10,,20", wantErr: true},
		{in: "fast", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseRates(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("ParseRates(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestServedWhileArriving(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var created, running []time.Time
	// 41 pods created one per 100 ms (4 s), each Running 1 s later.
	for i := range 41 {
		c := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		created, running = append(created, c), append(running, c.Add(time.Second))
	}
	// From 1 s to 4 s: pods 0..30 got Running between 1 s and 4 s (those
	// created from 0 s to 3 s), 31 pods, but the one at exactly 1 s is out:
	// 30 over 3 s.
	if got := servedWhileArriving(created, running); got != 10 {
		t.Errorf("served %v pods/s, want 10 (the arrival rate)", got)
	}
	if got := servedWhileArriving(created[:1], running[:1]); got != 0 {
		t.Errorf("one pod: %v, want 0", got)
	}
}
