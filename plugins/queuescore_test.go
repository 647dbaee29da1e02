package plugins

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

func TestRankByQueue(t *testing.T) {
	tests := []struct {
		name string
		// in: node -> score in range, rounds.
		in   map[string][2]int64
		want map[string]int64
	}{
		{name: "fewest rounds on top, score order inside each round",
			in:   map[string][2]int64{"a": {90, 1}, "b": {10, 0}, "c": {60, 0}, "d": {100, 2}},
			want: map[string]int64{"c": 80, "b": 55, "a": 22, "d": 16}},
		{name: "every node queued: rounds count from the fewest",
			in:   map[string][2]int64{"a": {0, 3}, "b": {100, 4}},
			want: map[string]int64{"a": 50, "b": 25}},
		{name: "no queue anywhere: the scores, as without a limit",
			in:   map[string][2]int64{"a": {0, 0}, "b": {100, 0}, "c": {37, 0}},
			want: map[string]int64{"a": 0, "b": 100, "c": 37}},
		{name: "every node equally queued: the scores",
			in:   map[string][2]int64{"a": {30, 2}, "b": {70, 2}},
			want: map[string]int64{"a": 30, "b": 70}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var scores fwk.NodeScoreList
			for name, v := range tt.in {
				scores = append(scores, fwk.NodeScore{Name: name, Score: v[0]})
			}
			rankByQueue(scores, func(node string) int { return int(tt.in[node][1]) })
			for _, s := range scores {
				if s.Score != tt.want[s.Name] || s.Score < 0 || s.Score > fwk.MaxNodeScore {
					t.Errorf("%s: %d, want %d", s.Name, s.Score, tt.want[s.Name])
				}
			}
		})
	}
}

// TestNodeQueueLimit: with nodeQueueLimit 1, binpack sends the next pod to
// the idle node while the busy node's device plugin has not served the pod
// reserved there, and back to the busy node once it has; without a limit,
// or below the default one, binpack keeps to the busy node.
func TestNodeQueueLimit(t *testing.T) {
	tests := []struct {
		name  string
		limit *int32
		// served: the resident's device plugin has set bind-phase success.
		served        bool
		wantBusyFirst bool
	}{
		{name: "no limit: HAMi's order", limit: ptr.To[int32](0), wantBusyFirst: true},
		{name: "default limit, one queued: HAMi's order", wantBusyFirst: true},
		{name: "limit 1, busy node's queue full", limit: ptr.To[int32](1), wantBusyFirst: false},
		{name: "limit 1, resident served", limit: ptr.To[int32](1), served: true, wantBusyFirst: true},
		{name: "limit 2, one queued", limit: ptr.To[int32](2), wantBusyFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &configv1.HAMiArgs{NodeQueueLimit: tt.limit}, eightCardNode("busy"), eightCardNode("idle"))
			resident := gpuPod("resident", gpu(4, 30000, 50))
			h.schedule(resident, "busy")
			if tt.served {
				resident.Annotations[devices.BindPhase] = devices.BindPhaseSuccess
				h.plugin.queues.observe(resident)
			}
			pod := gpuPod("new", gpu(1, 1000, 10))
			busy, idle := h.nodeInfo("busy"), h.nodeInfo("idle")
			state, st := h.preFilter(pod, busy, idle)
			if !st.IsSuccess() {
				t.Fatal(st)
			}
			scores := h.scores(state, pod, busy, idle)
			if st := h.plugin.ScoreExtensions().NormalizeScore(h.ctx, state, pod, scores); !st.IsSuccess() {
				t.Fatal(st)
			}
			if got := scores[0].Score > scores[1].Score; got != tt.wantBusyFirst {
				t.Errorf("scores %v: busy first = %v, want %v", scores, got, tt.wantBusyFirst)
			}
		})
	}
}

func TestNodeQueuesCountEachPodOnce(t *testing.T) {
	var q nodeQueues
	q.add("a", "n1")
	q.add("b", "n1")
	q.add("a", "n2") // a re-reserved elsewhere
	q.remove("c")    // never queued
	if q.len("n1") != 1 || q.len("n2") != 1 {
		t.Errorf("n1 %d, n2 %d; want 1 and 1", q.len("n1"), q.len("n2"))
	}
	q.remove("a")
	q.remove("a")
	q.remove("b")
	if q.len("n1") != 0 || q.len("n2") != 0 || len(q.length) != 0 {
		t.Errorf("queues %v left after every pod left", q.length)
	}
}
