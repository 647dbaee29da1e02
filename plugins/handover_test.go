package plugins

import (
	"cmp"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// TestNodeQueueLimit: with nodeQueueLimit 1 (and no nodeQueueWait),
// binpack sends the next pod to the idle node while the busy node's device
// plugin has not served the pod reserved there, and back to the busy node
// once it has; without a limit, or below the default one, binpack keeps to
// the busy node.
func TestNodeQueueLimit(t *testing.T) {
	noWait := &metav1.Duration{}
	tests := []struct {
		name  string
		limit *int32
		wait  *metav1.Duration
		// served: the resident's device plugin has set bind-phase success.
		served        bool
		wantBusyFirst bool
	}{
		{name: "no limit: HAMi's order", limit: ptr.To[int32](0), wait: noWait, wantBusyFirst: true},
		{name: "defaults, one queued: HAMi's order", wantBusyFirst: true},
		{name: "limit 1, busy node's queue full", limit: ptr.To[int32](1), wait: noWait, wantBusyFirst: false},
		{name: "limit 1, resident served", limit: ptr.To[int32](1), wait: noWait, served: true, wantBusyFirst: true},
		{name: "limit 2, one queued", limit: ptr.To[int32](2), wait: noWait, wantBusyFirst: true},
		{name: "wait 0.5s, one queued: 0.8 s of its work left", wait: &metav1.Duration{Duration: 500 * time.Millisecond}, wantBusyFirst: false},
		{name: "wait 1s, one queued: 0.8 s of its work left", wait: &metav1.Duration{Duration: time.Second}, wantBusyFirst: true},
		{name: "wait 2s, one queued", wait: &metav1.Duration{Duration: 2 * time.Second}, wantBusyFirst: true},
		{name: "wait 0.5s, resident served", wait: &metav1.Duration{Duration: 500 * time.Millisecond}, served: true, wantBusyFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &configv1.HAMiArgs{NodeQueueLimit: tt.limit, NodeQueueWait: tt.wait}, eightCardNode("busy"), eightCardNode("idle"))
			resident := gpuPod("resident", gpu(4, 30000, 50))
			h.schedule(resident, "busy")
			if tt.served {
				resident.Annotations[devices.BindPhase] = devices.BindPhaseSuccess
				h.plugin.queues.Observe(resident, time.Now())
			}
			if got := busyFirst(t, h, gpuPod("new", gpu(1, 1000, 10))); got != tt.wantBusyFirst {
				t.Errorf("busy first = %v, want %v", got, tt.wantBusyFirst)
			}
		})
	}
}

// busyFirst scores the pod on the nodes "busy" and "idle" and reports
// whether busy ranks first.
func busyFirst(t *testing.T, h *harness, pod *corev1.Pod) bool {
	t.Helper()
	busy, idle := h.nodeInfo("busy"), h.nodeInfo("idle")
	state, st := h.preFilter(pod, busy, idle)
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	scores := h.scores(state, pod, busy, idle)
	if st := h.plugin.ScoreExtensions().NormalizeScore(h.ctx, state, pod, scores); !st.IsSuccess() {
		t.Fatal(st)
	}
	return scores[0].Score > scores[1].Score
}

// TestNodeQueueWaitBurst: with nodeQueueWait 0.5s, one pod queued on the
// busy node (0.8 s of its work left on average) sends the next pod to the
// idle node, unless pods
// wait for the scheduler behind it (a backlog): then the busy node's queue
// may grow up to nodeQueueLimit pods, as many as wait. Pods of another
// scheduler, bound ones and ones found unschedulable do not count.
func TestNodeQueueWaitBurst(t *testing.T) {
	unschedulable := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	tests := []struct {
		name          string
		limit         *int32
		waiting       []*corev1.Pod
		wantBusyFirst bool
	}{
		{name: "nothing waits", wantBusyFirst: false},
		{name: "two wait", waiting: waitingFor("hami-scheduler", 2, nil, ""), wantBusyFirst: true},
		{name: "two wait, count limit 1", limit: ptr.To[int32](1), waiting: waitingFor("hami-scheduler", 2, nil, ""), wantBusyFirst: false},
		{name: "two wait for another scheduler", waiting: waitingFor("default-scheduler", 2, nil, ""), wantBusyFirst: false},
		{name: "two found unschedulable", waiting: waitingFor("hami-scheduler", 2, unschedulable, ""), wantBusyFirst: false},
		{name: "two bound", waiting: waitingFor("hami-scheduler", 2, nil, "elsewhere"), wantBusyFirst: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &configv1.HAMiArgs{NodeQueueLimit: tt.limit, NodeQueueWait: &metav1.Duration{Duration: 500 * time.Millisecond}},
				eightCardNode("busy"), eightCardNode("idle"))
			h.schedule(gpuPod("resident", gpu(4, 30000, 50)), "busy")
			for _, p := range tt.waiting {
				h.plugin.waiting.Set(p, time.Now())
			}
			pod := gpuPod("new", gpu(1, 1000, 10))
			pod.Spec.SchedulerName = "hami-scheduler"
			if got := busyFirst(t, h, pod); got != tt.wantBusyFirst {
				t.Errorf("busy first = %v, want %v", got, tt.wantBusyFirst)
			}
		})
	}
}

func waitingFor(scheduler string, n int, conditions []corev1.PodCondition, node string) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		p := gpuPod("waiting-"+itoa(i), gpu(1, 1000, 10))
		p.Spec.SchedulerName, p.Spec.NodeName, p.Status.Conditions = scheduler, node, conditions
		pods = append(pods, p)
	}
	return pods
}

// TestNodeQueueWaitStream: pods placed one after the other while no other
// pod waits and no device plugin serves: with nodeQueueWait 6s (3.75 pods
// of 1.6 s, and the one served), binpack queues 5 on the fullest node, then
// moves on to the next one; a backlog waiting behind them packs them onto
// one node.
func TestNodeQueueWaitStream(t *testing.T) {
	for _, tt := range []struct {
		name    string
		waiting int
		want    []int
	}{
		{name: "steady stream", want: []int{2, 5, 5}},
		{name: "backlog", waiting: 100, want: []int{12}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &configv1.HAMiArgs{NodeQueueWait: &metav1.Duration{Duration: 6 * time.Second}}, eightCardNode("a"), eightCardNode("b"), eightCardNode("c"))
			for _, p := range waitingFor("hami-scheduler", tt.waiting, nil, "") {
				h.plugin.waiting.Set(p, time.Now())
			}
			placed := map[string]int{}
			for i := range 12 {
				pod := gpuPod("s"+itoa(i), gpu(1, 1000, 10))
				pod.Spec.SchedulerName = "hami-scheduler"
				nodes := []fwk.NodeInfo{h.nodeInfo("a"), h.nodeInfo("b"), h.nodeInfo("c")}
				state, st := h.preFilter(pod, nodes...)
				if !st.IsSuccess() {
					t.Fatal(st)
				}
				scores := h.scores(state, pod, nodes...)
				if st := h.plugin.NormalizeScore(h.ctx, state, pod, scores); !st.IsSuccess() {
					t.Fatal(st)
				}
				best := scores[0]
				for _, s := range scores[1:] {
					if s.Score > best.Score || (s.Score == best.Score && s.Name < best.Name) {
						best = s
					}
				}
				if st := h.plugin.Reserve(h.ctx, state, pod, best.Name); !st.IsSuccess() {
					t.Fatal(st)
				}
				placed[best.Name]++
			}
			var got []int
			for _, n := range []string{"a", "b", "c"} {
				if placed[n] > 0 {
					got = append(got, placed[n])
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("pods per node %v (%v), want %v", got, placed, tt.want)
			}
		})
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
				h.plugin.waiting.Set(pod, time.Now())
				burst = append(burst, pod)
			}
			placed := map[string]int{}
			for _, pod := range burst {
				placed[placeBest(t, h, pod, names)]++
			}
			for i := range tt.after {
				pod := newPod("after-" + itoa(i))
				h.plugin.waiting.Set(pod, time.Now())
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
