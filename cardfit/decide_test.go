package cardfit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeCards are cards of memory (MiB) each, one pod per card at most; a
// pod asks the memory of its first container's "mem" limit.
type fakeCards struct {
	free   []int64
	placed map[string]bool // pod name -> placed
}

func (c *fakeCards) Simulate() (Placement, bool) {
	return &fakeSim{free: append([]int64(nil), c.free...)}, true
}
func (c *fakeCards) Placed(p *corev1.Pod) bool     { return c.placed[p.Name] }
func (c *fakeCards) Describe(p *corev1.Pod) string { return fmt.Sprintf("%d MiB", asks(p)) }
func (c *fakeCards) Default(*corev1.Pod) error     { return nil }

type fakeSim struct{ free []int64 }

func asks(p *corev1.Pod) int64 {
	q := p.Spec.Containers[0].Resources.Limits["mem"]
	return q.Value()
}

func (s *fakeSim) Place(p *corev1.Pod) (string, string, bool) {
	for i, f := range s.free {
		if f >= asks(p) {
			s.free[i] = -1
			return fmt.Sprint(i), "", true
		}
	}
	return "", "insufficient memory", false
}

func (s *fakeSim) Fork() Placement { return &fakeSim{free: append([]int64(nil), s.free...)} }

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// wl is a workload of one pod set of n pods asking mem MiB, in the check's
// state (Pending with its quota reserved at reserved, or Ready since
// passed).
func wl(name string, n int32, mem int64, state string, at time.Time) *workload {
	w := &workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	w.Spec.PodSets = []podSet{{Name: "main", Count: n, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"mem": *resource.NewQuantity(mem, resource.DecimalSI)}},
	}}}}}}
	w.Status.Conditions = []metav1.Condition{{Type: condQuotaReserved, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
	w.Status.AdmissionChecks = []checkState{{Name: "card-fit", State: state, LastTransitionTime: metav1.NewTime(at)}}
	return w
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name      string
		free      []int64
		placed    map[string]int // pod set key -> placed pods
		workloads []*workload
		want      map[string]string // workload -> state, "" for no answer
		message   map[string]string // workload -> part of the message
	}{{
		name:      "the fragmented case: each card too small, the totals enough",
		free:      []int64{20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000},
		workloads: []*workload{wl("train", 8, 30000, statePending, now)},
		want:      map[string]string{"train": stateRetry},
		message:   map[string]string{"train": "pod set main: 0 of 8 pods fit on the cards free now (each asks 30000 MiB); pod 1: insufficient memory"},
	}, {
		name:      "all pods fit",
		free:      []int64{40000, 40000},
		workloads: []*workload{wl("fits", 2, 30000, statePending, now)},
		want:      map[string]string{"fits": stateReady},
		message:   map[string]string{"fits": "all 2 pods fit"},
	}, {
		name:      "some pods fit: sent back all the same",
		free:      []int64{40000, 10000},
		workloads: []*workload{wl("half", 2, 30000, statePending, now)},
		want:      map[string]string{"half": stateRetry},
		message:   map[string]string{"half": "1 of 2 pods fit"},
	}, {
		name: "the oldest reservation first; the next sees what it took",
		free: []int64{40000},
		workloads: []*workload{
			wl("second", 1, 30000, statePending, now.Add(time.Second)),
			wl("first", 1, 30000, statePending, now),
		},
		want: map[string]string{"first": stateReady, "second": stateRetry},
	}, {
		name:      "a promise holds the cards of a workload passed, not placed",
		free:      []int64{40000, 40000},
		workloads: []*workload{wl("passed", 2, 30000, stateReady, now.Add(-time.Second)), wl("next", 1, 30000, statePending, now)},
		want:      map[string]string{"next": stateRetry},
		message:   map[string]string{"next": "2 pods of 1 workloads passed before and not placed yet are counted"},
	}, {
		name:      "placed pods release their part of the promise",
		free:      []int64{40000, 40000},
		placed:    map[string]int{"ns/passed/main": 1},
		workloads: []*workload{wl("passed", 2, 30000, stateReady, now.Add(-time.Second)), wl("next", 1, 30000, statePending, now)},
		want:      map[string]string{"next": stateReady},
	}, {
		name:      "an expired promise holds nothing",
		free:      []int64{40000},
		workloads: []*workload{wl("passed", 1, 30000, stateReady, now.Add(-time.Hour)), wl("next", 1, 30000, statePending, now)},
		want:      map[string]string{"next": stateReady},
	}, {
		name: "an evicted workload still holding its quota is not answered",
		free: []int64{40000},
		workloads: func() []*workload {
			w := wl("evicted", 1, 30000, statePending, now)
			w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: condEvicted, Status: metav1.ConditionTrue})
			return []*workload{w}
		}(),
		want: map[string]string{},
	}, {
		name: "a workload without quota reserved is not answered",
		free: []int64{40000},
		workloads: func() []*workload {
			w := wl("queued", 1, 30000, statePending, now)
			w.Status.Conditions = nil
			return []*workload{w}
		}(),
		want: map[string]string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &round{cards: &fakeCards{free: tc.free}, checks: map[string]bool{"card-fit": true}, now: now, timeout: time.Minute, placed: tc.placed}
			decisions, _, ok := r.decide(tc.workloads)
			if !ok {
				t.Fatal("cards not known")
			}
			got := map[string]string{}
			for _, d := range decisions {
				got[d.wl.Name] = d.state
				if want := tc.message[d.wl.Name]; !strings.Contains(d.message, want) {
					t.Errorf("%s: message %q does not contain %q", d.wl.Name, d.message, want)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("decisions %v, want %v", got, tc.want)
			}
		})
	}
}

// Ready marks every pod set's pods with the workload and pod set.
func TestReadyMarksPods(t *testing.T) {
	r := &round{cards: &fakeCards{free: []int64{40000}}, checks: map[string]bool{"card-fit": true}, now: now, timeout: time.Minute}
	decisions, _, _ := r.decide([]*workload{wl("w", 1, 1000, statePending, now)})
	if len(decisions) != 1 || len(decisions[0].updates) != 1 {
		t.Fatalf("decisions %+v", decisions)
	}
	u := decisions[0].updates[0]
	if u.Name != "main" || u.Annotations[WorkloadAnnotation] != "w" || u.Annotations[PodSetAnnotation] != "main" {
		t.Errorf("pod set update %+v", u)
	}
}

func TestPlacedPods(t *testing.T) {
	pod := func(name, wl string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: map[string]string{WorkloadAnnotation: wl, PodSetAnnotation: "main"}}}
	}
	cards := &fakeCards{placed: map[string]bool{"a": true, "b": true}}
	got := placedPods(cards, []*corev1.Pod{pod("a", "w"), pod("b", "w"), pod("c", "w"), {ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "ns"}}})
	if fmt.Sprint(got) != "map[ns/w/main:2]" {
		t.Errorf("placed %v", got)
	}
}

func TestRetryAfter(t *testing.T) {
	r := &runner{c: &Controller{opts: Options{RetryBase: 5 * time.Second, RetryMax: time.Minute}}}
	for retries, want := range map[int32]time.Duration{0: 5 * time.Second, 1: 10 * time.Second, 3: 40 * time.Second, 4: time.Minute, 40: time.Minute} {
		if got := r.retryAfter(&checkState{RetryCount: &retries}); got != want {
			t.Errorf("%d retries: %s, want %s", retries, got, want)
		}
	}
}
