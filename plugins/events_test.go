package plugins

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// wantEvent matches a recorded event; note is a regular expression
// matched against the whole message.
type wantEvent struct {
	eventType, reason, note string
}

func checkEvents(t *testing.T, got []recordedEvent, want []wantEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %d: %+v", got, len(want), want)
	}
	for i, w := range want {
		g := got[i]
		if g.object != "default/p" || g.eventType != w.eventType || g.reason != w.reason || !regexp.MustCompile("^(?:"+w.note+")$").MatchString(g.note) {
			t.Errorf("event %d = %+v, want %s %s on default/p matching %q", i, g, w.eventType, w.reason, w.note)
		}
	}
}

// TestFilteringEvents: HAMi's FilteringSucceed and FilteringFailed on the
// pod, with the nodes grouped by the node-independent reason and each
// node's detail.
func TestFilteringEvents(t *testing.T) {
	sick := card("sick-g0", 40000)
	sick.healthy = false
	nodes := []string{"small-a", "small-b", "sick", "big"}
	h := newHarness(t, &configv1.HAMiArgs{SuccessEvents: ptr.To(true)},
		gpuNode("small-a", card("a0", 4000)),
		gpuNode("small-b", card("b0", 4000), card("b1", 4000)),
		gpuNode("sick", sick),
		eightCardNode("big"),
	)
	run := func(pod *corev1.Pod) (fwk.CycleState, []string) {
		var infos []fwk.NodeInfo
		for _, n := range nodes {
			infos = append(infos, h.nodeInfo(n))
		}
		state, st := h.preFilter(pod, infos...)
		if !st.IsSuccess() {
			t.Fatalf("PreFilter: %v", st)
		}
		var fit []string
		for _, ni := range infos {
			if st := h.plugin.Filter(h.ctx, state, pod, ni); st.IsSuccess() {
				fit = append(fit, ni.Node().Name)
			}
		}
		return state, fit
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		// bind is the node Reserve takes; "" runs PostFilter.
		bind string
		want []wantEvent
	}{
		{name: "no node fits: the total, then the nodes per reason", pod: gpuPod("p", gpu(1, 50000, 0)),
			want: []wantEvent{
				{corev1.EventTypeWarning, EventFilteringFailed, `no available node, 4 nodes do not meet: ` +
					`3 nodes insufficient NVIDIA devices: insufficient memory\(big \[8/8 cards: insufficient memory\],small-a \[1/1 cards: insufficient memory\],small-b \[2/2 cards: insufficient memory\]\); ` +
					`1 nodes insufficient NVIDIA devices: unhealthy\(sick \[1/1 cards: unhealthy\]\)`},
			}},
		{name: "fits: the chosen node, the rejected count and each fit node's score", pod: gpuPod("p", gpu(1, 3000, 0)), bind: "big",
			want: []wantEvent{
				{corev1.EventTypeNormal, EventFilteringSucceed, `find fit node\(big\), 1 nodes not fit, 3 nodes fit\(big:\d+\.\d\d,small-a:\d+\.\d\d,small-b:\d+\.\d\d\)`},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.handle.recorder.take()
			state, _ := run(tt.pod)
			if tt.bind == "" {
				if _, st := h.plugin.PostFilter(h.ctx, state, tt.pod, nil); st.Code() != fwk.Unschedulable || st.Message() != "" {
					t.Errorf("PostFilter = %v, want Unschedulable without a reason", st)
				}
			} else {
				if st := h.plugin.Reserve(h.ctx, state, tt.pod, tt.bind); !st.IsSuccess() {
					t.Fatal(st)
				}
				h.plugin.Unreserve(h.ctx, state, tt.pod, tt.bind)
			}
			checkEvents(t, h.handle.recorder.take(), tt.want)
		})
	}
}

// TestFilteringFailedNote: the reasons sorted, the nodes sorted within,
// the detail left out when it says nothing more; the note stays within the
// events API's limit.
func TestFilteringFailedNote(t *testing.T) {
	got := filteringFailedNote(map[string]nodeRejection{
		"n2": {reason: "insufficient NVIDIA devices: insufficient memory", detail: "2/8 cards: insufficient memory"},
		"n1": {reason: "insufficient NVIDIA devices: insufficient memory", detail: "1/1 cards: insufficient memory"},
		"n3": {reason: "no NVIDIA device on node"},
	})
	want := "no available node, 3 nodes do not meet: " +
		"2 nodes insufficient NVIDIA devices: insufficient memory(n1 [1/1 cards: insufficient memory],n2 [2/8 cards: insufficient memory]); " +
		"1 nodes no NVIDIA device on node(n3)"
	if got != want {
		t.Errorf("note\n%q, want\n%q", got, want)
	}
	if filteringFailedNote(nil) != "" {
		t.Error("a note without rejections")
	}
	many := map[string]nodeRejection{}
	for i := range 500 {
		many[fmt.Sprintf("node-%03d", i)] = nodeRejection{reason: "insufficient NVIDIA devices: insufficient memory", detail: "8/8 cards: insufficient memory"}
	}
	if note := truncateNote(filteringFailedNote(many)); len(note) > maxEventNote || !strings.HasPrefix(note, "no available node, 500 nodes do not meet: ") {
		t.Errorf("note of 500 nodes: %d bytes, starting %.60q", len(note), note)
	}
}

// TestBindingEvents: BindingSucceed after binding, BindingFailed with the
// error's text when PreBind fails (and the failure counted by reason), or
// when the pod is not bound after PreBind handed it over.
func TestBindingEvents(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares the API server; busy puts another pod's fresh lock
		// on the node.
		busy, patchFails bool
		// bindFails runs Unreserve after a successful PreBind.
		bindFails  bool
		wantReason string
		want       []wantEvent
	}{
		{name: "bound", want: []wantEvent{{corev1.EventTypeNormal, EventBindingSucceed, `Successfully binding node \[n1\] to default/p`}}},
		{name: "node lock busy", busy: true, wantReason: "lock_busy",
			want: []wantEvent{{corev1.EventTypeWarning, EventBindingFailed, `lock node n1: node n1: node lock held by another pod .*`}}},
		{name: "patch refused", patchFails: true, wantReason: "patch_error",
			want: []wantEvent{{corev1.EventTypeWarning, EventBindingFailed, `write device assignment to pod: apiserver unavailable`}}},
		{name: "not bound after the hand-over", bindFails: true,
			want: []wantEvent{{corev1.EventTypeWarning, EventBindingFailed, `pod was not bound to node n1; its device assignment is marked failed and the node lock released`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := gpuPod("p", gpu(1, 1000, 0))
			node := eightCardNode("n1")
			objs := []runtime.Object{node, pod}
			if tt.busy {
				node.Annotations[devices.NodeLock] = time.Now().UTC().Format(time.RFC3339) + ",default,holder"
				objs = append(objs, gpuPod("holder", gpu(1, 1000, 0)))
			}
			h := newHarness(t, &configv1.HAMiArgs{NodeLockWait: &metav1.Duration{Duration: 100 * time.Millisecond}, SuccessEvents: ptr.To(true)}, objs...)
			if tt.patchFails {
				h.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("apiserver unavailable")
				})
			}
			var before float64
			if tt.wantReason != "" {
				before, _ = testutil.GetCounterMetricValue(preBindFailures.WithLabelValues(tt.wantReason))
			}
			state := h.schedule(pod, "n1")
			h.handle.recorder.take()
			st := h.plugin.PreBind(h.ctx, state, pod, "n1")
			switch {
			case tt.wantReason != "":
				if st.IsSuccess() {
					t.Fatal("PreBind succeeded")
				}
				after, _ := testutil.GetCounterMetricValue(preBindFailures.WithLabelValues(tt.wantReason))
				if after != before+1 {
					t.Errorf("prebind failures %q went from %v to %v, want one more", tt.wantReason, before, after)
				}
			case !st.IsSuccess():
				t.Fatalf("PreBind: %v", st)
			case tt.bindFails:
				h.plugin.Unreserve(context.Background(), state, pod, "n1")
			default:
				h.plugin.PostBind(h.ctx, state, pod, "n1")
			}
			checkEvents(t, h.handle.recorder.take(), tt.want)
		})
	}
}

// TestHandOverDuration: the time from PreBind to the device plugin's
// bind-phase is observed once, by result.
func TestHandOverDuration(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	before, _ := testutil.GetHistogramMetricCount(handOverDuration.WithLabelValues("success"))
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	served := pod.DeepCopy()
	served.Annotations[devices.BindPhase] = devices.BindPhaseSuccess
	h.plugin.handOvers.observe(served, time.Now())
	h.plugin.handOvers.observe(served, time.Now())
	after, _ := testutil.GetHistogramMetricCount(handOverDuration.WithLabelValues("success"))
	if after != before+1 {
		t.Errorf("hand-overs observed went from %d to %d, want one more", before, after)
	}
}

// TestFilteringSucceedNoteIsBounded: with many fit nodes the note stops
// at the events API's limit.
func TestFilteringSucceedNoteIsBounded(t *testing.T) {
	h := newHarness(t, &configv1.HAMiArgs{SuccessEvents: ptr.To(true)})
	s := &cycleState{fits: map[string]*nodeFit{}, rejections: &nodeRejections{}}
	for i := range 500 {
		s.fits[fmt.Sprintf("node-%03d", i)] = &nodeFit{score: 12.5}
	}
	h.plugin.filteringSucceeded(gpuPod("p", gpu(1, 1000, 0)), s, "node-007")
	got := h.handle.recorder.take()
	if len(got) != 1 || len(got[0].note) > maxEventNote || !strings.HasPrefix(got[0].note, "find fit node(node-007), 0 nodes not fit, 500 nodes fit(node-000:12.50,node-001:12.50,") {
		t.Errorf("events %+v", got)
	}
}

// TestSuccessEventsAreOffByDefault: without successEvents a placed and
// bound pod gets no FilteringSucceed or BindingSucceed (two API writes per
// pod); failures are still recorded (TestBindingEvents).
func TestSuccessEventsAreOffByDefault(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	h.plugin.PostBind(h.ctx, state, pod, "n1")
	if got := h.handle.recorder.take(); len(got) != 0 {
		t.Errorf("events %+v, want none", got)
	}
}
