package plugins

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// candidatesCluster is four 8-card nodes, "most" holding the most, "some"
// less, "few" least, "none" nothing, and returns the harness with
// candidateNodes 2.
func candidatesCluster(t *testing.T, nodes ...*corev1.Node) *harness {
	t.Helper()
	if len(nodes) == 0 {
		nodes = []*corev1.Node{eightCardNode("most"), eightCardNode("some"), eightCardNode("few"), eightCardNode("none")}
	}
	objs := make([]runtime.Object, len(nodes))
	for i, n := range nodes {
		objs[i] = n
	}
	h := newHarness(t, &configv1.HAMiArgs{CandidateNodes: ptr.To[int32](2)}, objs...)
	h.schedule(gpuPod("r1", gpu(4, 30000, 60)), "most")
	h.schedule(gpuPod("r2", gpu(2, 30000, 60)), "some")
	h.schedule(gpuPod("r3", gpu(1, 1000, 10)), "few")
	return h
}

// offered runs PreFilter and returns the node names it offers (nil: every
// node) and the state.
func offered(t *testing.T, h *harness, pod *corev1.Pod) ([]string, fwk.CycleState) {
	t.Helper()
	state := framework.NewCycleState()
	res, st := h.plugin.PreFilter(h.ctx, state, pod, nil)
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	if res.AllNodes() {
		return nil, state
	}
	names := res.NodeNames.UnsortedList()
	slices.Sort(names)
	return names, state
}

func TestOfferCandidates(t *testing.T) {
	tainted := eightCardNode("most")
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "team-a", Effect: corev1.TaintEffectNoSchedule}}
	cordoned := eightCardNode("most")
	cordoned.Spec.Unschedulable = true
	labelled := func(name string) *corev1.Node {
		n := eightCardNode(name)
		n.Labels = map[string]string{"pool": "a"}
		return n
	}
	tests := []struct {
		name  string
		nodes []*corev1.Node
		pod   func(*corev1.Pod)
		want  []string
	}{
		{name: "binpack: the two fullest", want: []string{"most", "some"}},
		{name: "spread: the two emptiest", pod: func(p *corev1.Pod) { p.Annotations[devices.NodePolicyAnnotation] = "spread" }, want: []string{"few", "none"}},
		{name: "cards full on the fullest: the next ones", pod: func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = gpu(6, 20000, 10) }, want: []string{"few", "some"}},
		{name: "untolerated taint", nodes: []*corev1.Node{tainted, eightCardNode("some"), eightCardNode("few"), eightCardNode("none")}, want: []string{"few", "some"}},
		{name: "tolerated taint", nodes: []*corev1.Node{tainted, eightCardNode("some"), eightCardNode("few"), eightCardNode("none")},
			pod: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "team-a", Effect: corev1.TaintEffectNoSchedule}}
			}, want: []string{"most", "some"}},
		{name: "cordoned", nodes: []*corev1.Node{cordoned, eightCardNode("some"), eightCardNode("few"), eightCardNode("none")}, want: []string{"few", "some"}},
		{name: "node selector", nodes: []*corev1.Node{eightCardNode("most"), eightCardNode("some"), labelled("few"), labelled("none")},
			pod: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "a"} }, want: []string{"few", "none"}},
		{name: "may preempt: every node", pod: func(p *corev1.Pod) { p.Spec.Priority = ptr.To[int32](1000) }},
		{name: "pod anti-affinity: every node", pod: func(p *corev1.Pod) { p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}} }},
		{name: "host port: every node", pod: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 80}}
		}},
		{name: "claim: every node", pod: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		}},
		{name: "fits nowhere: every node", pod: func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = gpu(9, 1000, 10) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := candidatesCluster(t, tt.nodes...)
			pod := gpuPod("new", gpu(1, 1000, 10))
			if tt.pod != nil {
				tt.pod(pod)
			}
			got, _ := offered(t, h, pod)
			if !slices.Equal(got, tt.want) {
				t.Errorf("offered %v, want %v (nil: every node)", got, tt.want)
			}
		})
	}
}

// TestCandidatesSmallCluster: with no more nodes than candidateNodes,
// PreFilter offers every node, as before.
func TestCandidatesSmallCluster(t *testing.T) {
	h := newHarness(t, &configv1.HAMiArgs{CandidateNodes: ptr.To[int32](2)}, eightCardNode("a"), eightCardNode("b"))
	if got, _ := offered(t, h, gpuPod("new", gpu(1, 1000, 10))); got != nil {
		t.Errorf("offered %v, want every node", got)
	}
	off := newHarness(t, &configv1.HAMiArgs{CandidateNodes: ptr.To[int32](0)}, eightCardNode("a"), eightCardNode("b"), eightCardNode("c"))
	if got, _ := offered(t, off, gpuPod("new", gpu(1, 1000, 10))); got != nil {
		t.Errorf("candidateNodes 0: offered %v, want every node", got)
	}
}

// TestCandidatesQueues: a candidate whose queue is over its bound ranks
// behind the others, as in NormalizeScore.
func TestCandidatesQueues(t *testing.T) {
	h := candidatesCluster(t)
	for i := range 4 {
		h.schedule(gpuPod("q"+itoa(i), gpu(1, 1000, 1)), "most")
	}
	if got, _ := offered(t, h, gpuPod("new", gpu(1, 1000, 10))); !slices.Equal(got, []string{"few", "some"}) {
		t.Errorf("offered %v, want some and few (most's queue is over 2 s)", got)
	}
}

// TestCandidatesFullPass: when another plugin turned every candidate away,
// PostFilter owes the pod a pass over every node, which its next PreFilter
// gives, once. Filter keeps the fit PreFilter made for a candidate.
func TestCandidatesFullPass(t *testing.T) {
	h := candidatesCluster(t)
	pod := gpuPod("new", gpu(1, 1000, 10))
	got, state := offered(t, h, pod)
	if len(got) != 2 {
		t.Fatalf("offered %v, want two candidates", got)
	}
	s, _ := readState(state)
	if fit, ok := s.fit("most"); !ok || !fit.offered {
		t.Errorf("no fit kept for candidate most")
	}
	if st := h.plugin.Filter(h.ctx, state, pod, h.nodeInfo("most")); !st.IsSuccess() {
		t.Errorf("Filter on a candidate: %v", st)
	}
	if _, st := h.plugin.PostFilter(h.ctx, state, pod, nil); st.Code() != fwk.Unschedulable {
		t.Errorf("PostFilter: %v", st)
	}
	if got, _ := offered(t, h, pod); got != nil {
		t.Errorf("after a narrowed failure: offered %v, want every node", got)
	}
	if got, _ := offered(t, h, pod); len(got) != 2 {
		t.Errorf("the attempt after: offered %v, want two candidates again", got)
	}
}

func TestFitsHint(t *testing.T) {
	tests := []struct {
		nodes      int
		candidates int32
		want       int
	}{
		{nodes: 2000, candidates: 100, want: 100},
		{nodes: 50, candidates: 100, want: 50},
		{nodes: 2000, candidates: 0, want: 2000},
		{nodes: 0, candidates: 100, want: 0},
	}
	for _, tt := range tests {
		if got := fitsHint(tt.nodes, tt.candidates); got != tt.want {
			t.Errorf("fitsHint(%d, %d) = %d, want %d", tt.nodes, tt.candidates, got, tt.want)
		}
	}
}
