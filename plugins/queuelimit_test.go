package plugins

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
)

// TestBurstAllowance: a pod of the scheduler's latest burst (seen no later
// than its last pod) keeps the burst's size while fewer wait; a pod seen
// after it, or not seen at all, has its own size, which becomes the latest
// burst; schedulers are apart.
func TestBurstAllowance(t *testing.T) {
	type step struct {
		scheduler string
		size      float64
		seq, last uint64
		want      float64
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "a burst's pods keep its size as it is placed", steps: []step{
			{"s", 100, 1, 100, 100},
			{"s", 51, 50, 100, 100},
			{"s", 1, 100, 100, 100},
		}},
		{name: "a pod seen after the burst has its own size", steps: []step{
			{"s", 100, 1, 100, 100},
			{"s", 1, 101, 101, 1},
			{"s", 1, 100, 101, 1},
		}},
		{name: "a burst that grows while it is placed", steps: []step{
			{"s", 4, 1, 4, 4},
			{"s", 11, 2, 14, 11},
			{"s", 2, 14, 14, 11},
		}},
		{name: "a pod not seen yet has its own size", steps: []step{
			{"s", 100, 1, 100, 100},
			{"s", 6, 0, 100, 6},
		}},
		{name: "steady arrivals: bursts of one", steps: []step{
			{"s", 1, 1, 1, 1},
			{"s", 1, 2, 2, 1},
			{"s", 2, 3, 4, 2},
			{"s", 1, 5, 5, 1},
		}},
		{name: "schedulers are apart", steps: []step{
			{"s", 100, 1, 100, 100},
			{"other", 1, 50, 100, 1},
			{"s", 1, 60, 100, 100},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b burstMemory
			for i, st := range tt.steps {
				if got := b.allowance(st.scheduler, st.size, arrivals{seq: st.seq, last: st.last}); got != st.want {
					t.Errorf("step %d: allowance %v, want %v", i, got, st.want)
				}
			}
		})
	}
}

// TestBurstSize: the pods waiting, the pod included, beyond what the
// scheduler's arrival rate brings in one hand-over; at least the pod.
func TestBurstSize(t *testing.T) {
	tests := []struct {
		name      string
		behind    int
		perSecond float64
		perPod    time.Duration
		want      float64
	}{
		{name: "alone", want: 1},
		{name: "a backlog on an idle scheduler", behind: 99, perPod: DefaultHandOverTime, want: 100},
		{name: "a steady stream the scheduler keeps up with", behind: 0, perSecond: 30, perPod: DefaultHandOverTime, want: 1},
		{name: "a stream the scheduler lags behind by less than a hand-over", behind: 40, perSecond: 30, perPod: DefaultHandOverTime, want: 1},
		{name: "a burst on top of a stream", behind: 147, perSecond: 30, perPod: DefaultHandOverTime, want: 100},
		{name: "slower hand-overs take more of a stream", behind: 147, perSecond: 30, perPod: 3 * time.Second, want: 58},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := burstSize(arrivals{behind: tt.behind, perSecond: tt.perSecond}, tt.perPod); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("burstSize = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestArrivalRate: a scheduler's rate counts the pods it placed, each from
// its arrival (when first seen) with a weight that falls by e every
// arrivalWindow; pods still waiting, pods of other schedulers and a pod
// placed again count for nothing.
func TestArrivalRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var w waitingPods
	pods := waitingFor("s", 3, nil, "")
	for _, p := range pods {
		w.set(p, t0)
	}
	other := waitingFor("other", 1, nil, "")[0]
	other.UID = "other-uid"
	w.set(other, t0)
	rate := func(at time.Time) float64 { return w.arrivals(pods[2], at).perSecond }
	if got := rate(t0); got != 0 {
		t.Errorf("nothing placed: %v pods/s, want 0", got)
	}
	w.reserve(pods[0].UID, true, t0)
	w.reserve(pods[1].UID, true, t0.Add(arrivalWindow))
	w.reserve(pods[1].UID, false, t0.Add(arrivalWindow))
	w.reserve(pods[1].UID, true, t0.Add(arrivalWindow))
	w.reserve(other.UID, true, t0)
	// At t0 + window: the first weighs 1/e, the second, arrived at t0, 1/e.
	want := 2 / math.E / arrivalWindow.Seconds()
	if got := rate(t0.Add(arrivalWindow)); math.Abs(got-want) > 1e-9 {
		t.Errorf("two placed: %v pods/s, want %v", got, want)
	}
	if got := rate(t0.Add(2 * arrivalWindow)); math.Abs(got-want/math.E) > 1e-9 {
		t.Errorf("a window later: %v pods/s, want %v", got, want/math.E)
	}
}

// TestBurstPacking places pods one after the other, as the scheduling loop
// does, on four nodes of two cards whose device plugins serve nothing
// meanwhile. Each pod asks a quarter of a card's cores, so a node holds 8.
// A burst (its pods waiting together, seen before the first is placed)
// fills nodes as HAMi's order does, its last pods included although fewer
// wait by then; burstQueueWait and nodeQueueLimit bound what it queues per
// node; pods arriving one by one spread as nodeQueueWait bounds them; a
// pod arriving after a burst is not held to the burst's nodes.
func TestBurstPacking(t *testing.T) {
	hamiOrder := &configv1.HAMiArgs{NodeQueueLimit: ptr.To[int32](0), NodeQueueWait: &metav1.Duration{}}
	tests := []struct {
		name string
		args *configv1.HAMiArgs
		// burst pods are seen before the first is placed; then pods
		// arrive one by one, each seen when it is placed.
		burst, after int
		want         map[string]int
	}{
		{name: "defaults: a burst fills nodes as HAMi's order", burst: 16,
			want: map[string]int{"a": 8, "b": 8}},
		{name: "HAMi's order", args: hamiOrder, burst: 16,
			want: map[string]int{"a": 8, "b": 8}},
		{name: "defaults: a smaller burst stays on one node", burst: 6,
			want: map[string]int{"a": 6}},
		{name: "burstQueueWait 4s: 2.5 pods of 1.6 s a round", burst: 16,
			args: &configv1.HAMiArgs{BurstQueueWait: &metav1.Duration{Duration: 4 * time.Second}},
			want: map[string]int{"a": 5, "b": 5, "c": 3, "d": 3}},
		{name: "nodeQueueLimit 4 caps a burst in pods", burst: 16,
			args: &configv1.HAMiArgs{NodeQueueLimit: ptr.To[int32](4)},
			want: map[string]int{"a": 4, "b": 4, "c": 4, "d": 4}},
		{name: "defaults: pods arriving one by one, 1.25 pods a round", after: 8,
			want: map[string]int{"a": 2, "b": 2, "c": 2, "d": 2}},
		{name: "defaults: pods after a burst are not held to its nodes", burst: 6, after: 2,
			want: map[string]int{"a": 6, "b": 2}},
		{name: "HAMi's order: pods after a burst join it", args: hamiOrder, burst: 6, after: 2,
			want: map[string]int{"a": 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := []string{"a", "b", "c", "d"}
			var nodes []*corev1.Node
			for _, n := range names {
				nodes = append(nodes, gpuNode(n, card(n+"-0", 40960), card(n+"-1", 40960)))
			}
			args := tt.args
			if args == nil {
				args = &configv1.HAMiArgs{}
			}
			h := newHarness(t, args, nodes[0], nodes[1], nodes[2], nodes[3])
			newPod := func(name string) *corev1.Pod {
				pod := gpuPod(name, gpu(1, 1000, 25))
				pod.Spec.SchedulerName = "hami-scheduler"
				return pod
			}
			var burst []*corev1.Pod
			for i := range tt.burst {
				pod := newPod("burst-" + itoa(i))
				h.plugin.waiting.set(pod, time.Now())
				burst = append(burst, pod)
			}
			placed := map[string]int{}
			for _, pod := range burst {
				placed[placeBest(t, h, pod, names)]++
			}
			for i := range tt.after {
				pod := newPod("after-" + itoa(i))
				h.plugin.waiting.set(pod, time.Now())
				placed[placeBest(t, h, pod, names)]++
			}
			if !maps.Equal(placed, tt.want) {
				t.Errorf("pods per node %v, want %v", placed, tt.want)
			}
		})
	}
}

// placeBest runs the pod's scheduling cycle on the named nodes as the
// framework does (PreFilter, Filter, Score on the nodes that fit,
// NormalizeScore, Reserve on the best, by name on a tie) and returns the
// node.
func placeBest(t *testing.T, h *harness, pod *corev1.Pod, names []string) string {
	t.Helper()
	var infos []fwk.NodeInfo
	for _, n := range names {
		infos = append(infos, h.nodeInfo(n))
	}
	state, st := h.preFilter(pod, infos...)
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	var scores fwk.NodeScoreList
	for _, ni := range infos {
		if !h.plugin.Filter(h.ctx, state, pod, ni).IsSuccess() {
			continue
		}
		s, st := h.plugin.Score(h.ctx, state, pod, ni)
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		scores = append(scores, fwk.NodeScore{Name: ni.Node().Name, Score: s})
	}
	if len(scores) == 0 {
		t.Fatalf("%s fits no node", pod.Name)
	}
	if st := h.plugin.NormalizeScore(h.ctx, state, pod, scores); !st.IsSuccess() {
		t.Fatal(st)
	}
	best := slices.MinFunc(scores, func(a, b fwk.NodeScore) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Name, b.Name))
	})
	if st := h.plugin.Reserve(h.ctx, state, pod, best.Name); !st.IsSuccess() {
		t.Fatal(st)
	}
	return best.Name
}
