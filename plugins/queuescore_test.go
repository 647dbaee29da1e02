package plugins

import (
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
				h.plugin.queues.observe(resident, time.Now())
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
				h.plugin.waiting.set(p, time.Now())
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

func TestQueueLimit(t *testing.T) {
	tests := []struct {
		name   string
		bounds queueBounds
		perPod time.Duration
		burst  float64
		want   float64
	}{
		{name: "count alone", bounds: queueBounds{count: 20}, perPod: time.Second, burst: 100, want: 20},
		{name: "no limit", want: 0},
		{name: "count alone ignores the burst bound", bounds: queueBounds{count: 20, burstWait: 2 * time.Second}, burst: 100, want: 20},
		{name: "wait over the default time per pod, and the pod served", bounds: queueBounds{wait: 6 * time.Second}, want: 4.25},
		{name: "wait over a measured time per pod", bounds: queueBounds{wait: 6 * time.Second}, perPod: 500 * time.Millisecond, want: 12.5},
		{name: "a slow node serving one pod still takes the next", bounds: queueBounds{wait: 2 * time.Second}, perPod: 3200 * time.Millisecond, want: 1.125},
		{name: "a few waiting: the wait rules", bounds: queueBounds{wait: 6 * time.Second}, perPod: 2 * time.Second, burst: 2, want: 3.5},
		{name: "a burst: its size, whatever it is", bounds: queueBounds{wait: 6 * time.Second}, perPod: 2 * time.Second, burst: 500, want: 500},
		{name: "a burst capped by the count", bounds: queueBounds{wait: 6 * time.Second, count: 20}, perPod: 2 * time.Second, burst: 500, want: 20},
		{name: "a burst below the count", bounds: queueBounds{wait: 6 * time.Second, count: 20}, perPod: 2 * time.Second, burst: 12, want: 12},
		{name: "a burst bounded in time", bounds: queueBounds{wait: 2 * time.Second, burstWait: 10 * time.Second}, perPod: 2 * time.Second, burst: 500, want: 5},
		{name: "burst bound over the default time per pod", bounds: queueBounds{wait: 2 * time.Second, burstWait: 8 * time.Second}, burst: 500, want: 5},
		{name: "a burst smaller than its time bound", bounds: queueBounds{wait: 2 * time.Second, burstWait: 10 * time.Second}, perPod: 2 * time.Second, burst: 3, want: 3},
		{name: "burst bound below the wait: the wait", bounds: queueBounds{wait: 6 * time.Second, burstWait: 2 * time.Second}, perPod: 2 * time.Second, burst: 500, want: 3.5},
		{name: "time and count bounds: the smaller", bounds: queueBounds{wait: 2 * time.Second, burstWait: 20 * time.Second, count: 4}, perPod: 2 * time.Second, burst: 500, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := queueLimit(tt.bounds, tt.perPod, tt.burst); got != tt.want {
				t.Errorf("queueLimit = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHandOverTimeMeasured: a node's time per pod is measured between the
// services of pods queued one behind the other, and averaged from
// DefaultHandOverTime; a pod served off an idle node measures nothing.
func TestHandOverTimeMeasured(t *testing.T) {
	var q nodeQueues
	t0 := time.Unix(1000, 0)
	if _, perPod := q.load("n"); perPod != DefaultHandOverTime {
		t.Fatalf("unmeasured node: %s, want %s", perPod, DefaultHandOverTime)
	}
	q.add("a", "n", t0)
	q.add("b", "n", t0)
	q.served("a", t0.Add(300*time.Millisecond)) // the first: nothing measured
	if n, perPod := q.load("n"); n != 1 || perPod != DefaultHandOverTime {
		t.Fatalf("after a: %d queued, %s per pod; want 1, %s", n, perPod, DefaultHandOverTime)
	}
	q.served("b", t0.Add(2300*time.Millisecond)) // 2 s after a
	if _, perPod := q.load("n"); perPod != 1700*time.Millisecond {
		t.Errorf("after b: %s per pod, want 1.7s (1.6s + (2s-1.6s)/4)", perPod)
	}
	q.add("c", "n", t0.Add(10*time.Second)) // queued on an idle node
	q.served("c", t0.Add(10500*time.Millisecond))
	if _, perPod := q.load("n"); perPod != 1700*time.Millisecond {
		t.Errorf("after c: %s per pod, want 1.7s still", perPod)
	}
	q.served("never-queued", t0)
	if n, _ := q.load("n"); n != 0 {
		t.Errorf("%d queued, want 0", n)
	}
}

func TestWaitingPods(t *testing.T) {
	var w waitingPods
	pods := waitingFor("s", 3, nil, "")
	for _, p := range pods {
		w.set(p, time.Now())
		w.set(p, time.Now()) // an update
	}
	if got := w.count("s"); got != 3 {
		t.Fatalf("%d waiting, want 3", got)
	}
	w.reserve(pods[0].UID, true, time.Now())
	w.reserve(pods[0].UID, true, time.Now())
	if got := w.count("s"); got != 2 {
		t.Errorf("one reserved: %d waiting, want 2", got)
	}
	w.reserve(pods[0].UID, false, time.Now())
	if got := w.count("s"); got != 3 {
		t.Errorf("unreserved: %d waiting, want 3", got)
	}
	w.reserve(pods[0].UID, true, time.Now())
	bound := pods[0].DeepCopy()
	bound.Spec.NodeName = "n"
	w.set(bound, time.Now())
	w.remove(pods[1].UID)
	if got := w.count("s"); got != 1 {
		t.Errorf("one bound, one deleted: %d waiting, want 1", got)
	}
	w.remove(pods[2].UID)
	if got := w.count("s"); got != 0 || len(w.waiting) != 0 || len(w.pods) != 0 {
		t.Errorf("all gone: %d waiting, %v, %v", got, w.waiting, w.pods)
	}
}

func TestNodeQueuesCountEachPodOnce(t *testing.T) {
	var q nodeQueues
	now := time.Now()
	q.add("a", "n1", now)
	q.add("b", "n1", now)
	q.add("a", "n2", now) // a re-reserved elsewhere
	q.remove("c")         // never queued
	if q.len("n1") != 1 || q.len("n2") != 1 {
		t.Errorf("n1 %d, n2 %d; want 1 and 1", q.len("n1"), q.len("n2"))
	}
	q.remove("a")
	q.remove("a")
	q.remove("b")
	if q.len("n1") != 0 || q.len("n2") != 0 || len(q.queued) != 0 {
		t.Errorf("pods %v left queued after every pod left", q.queued)
	}
}

// TestWaitingPodReservedBeforeSeen: a pod Reserve placed before the
// informer showed it is not counted as waiting when the informer does.
func TestWaitingPodReservedBeforeSeen(t *testing.T) {
	var w waitingPods
	p := waitingFor("s", 1, nil, "")[0]
	w.reserve(p.UID, true, time.Now())
	w.set(p, time.Now())
	if got := w.count("s"); got != 0 {
		t.Errorf("%d waiting, want 0", got)
	}
	w.reserve(p.UID, false, time.Now())
	if got := w.count("s"); got != 1 {
		t.Errorf("unreserved: %d waiting, want 1", got)
	}
	w.remove(p.UID)
	w.reserve("never-seen", false, time.Now())
	if got := w.count("s"); got != 0 || len(w.pods) != 0 {
		t.Errorf("after removal: %d waiting, %v", got, w.pods)
	}
}

func TestWaitingBehindLeavesThePodOut(t *testing.T) {
	var w waitingPods
	pods := waitingFor("s", 3, nil, "")
	for _, p := range pods {
		w.set(p, time.Now())
	}
	if got := w.arrivals(pods[0], time.Now()).behind; got != 2 {
		t.Errorf("behind %d, want 2", got)
	}
	other := gpuPod("other", gpu(1, 1000, 10))
	other.Spec.SchedulerName = "s"
	if got := w.arrivals(other, time.Now()).behind; got != 3 {
		t.Errorf("a pod not followed: behind %d, want 3", got)
	}
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
				h.plugin.waiting.set(p, time.Now())
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
