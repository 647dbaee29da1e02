//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// typedGPUNode registers cards of one model, as HAMi's device plugin would.
func typedGPUNode(name, model string, cards ...cardSpec) *corev1.Node {
	node := gpuNode(name, cards...)
	node.Annotations[nvidia.RegisterAnnotation] = strings.ReplaceAll(node.Annotations[nvidia.RegisterAnnotation], "NVIDIA-A100", model)
	return node
}

// signatureCluster is a few nodes of two models, NUMA nodes and uneven use.
func signatureCluster(t *testing.T) *harness {
	t.Helper()
	var big, small, numa []cardSpec
	for i := range 4 {
		big = append(big, card(fmt.Sprintf("big-%d", i), 40960))
		small = append(small, card(fmt.Sprintf("small-%d", i), 16384))
		c := card(fmt.Sprintf("numa-%d", i), 24576)
		c.numa = i / 2
		numa = append(numa, c)
	}
	nodes := []runtime.Object{
		typedGPUNode("big", "NVIDIA-A100", big...),
		typedGPUNode("small", "NVIDIA-V100", small...),
		typedGPUNode("numa", "NVIDIA-A30", numa...),
		typedGPUNode("busy", "NVIDIA-A100", card("busy-0", 40960), card("busy-1", 40960)),
	}
	h := newHarness(t, nil, nodes...)
	// Uneven use: the nodes score apart, and some requests fit only some.
	h.schedule(gpuPod("hold-big", gpu(1, 30000, 50)), "big")
	h.schedule(gpuPod("hold-busy", gpu(2, 20000, 60)), "busy")
	h.schedule(gpuPod("hold-numa", gpu(1, 8000, 30)), "numa")
	return h
}

// signature is the pod's signature as kube-scheduler builds it from this
// plugin's fragments (JSON of the fragments by key), "" when unsigned.
func signature(t *testing.T, h *harness, pod *corev1.Pod) string {
	t.Helper()
	fragments, st := h.plugin.SignPod(h.ctx, pod)
	if !st.IsSuccess() {
		if st.Code() != fwk.Unschedulable {
			t.Fatalf("SignPod %s: %v", pod.Name, st)
		}
		return ""
	}
	byKey := map[string]any{}
	for _, f := range fragments {
		byKey[f.Key] = f.Value
	}
	out, err := json.Marshal(byKey)
	if err != nil {
		t.Fatalf("signature of %s does not marshal: %v", pod.Name, err)
	}
	return string(out)
}

// outcome is what the plugin decides for the pod on every node of the
// cluster: PreFilter's status, then per node Filter's status, the cards it
// chose and Score. Two pods with one signature must have one outcome.
func outcome(t *testing.T, h *harness, pod *corev1.Pod) string {
	t.Helper()
	nodes := []string{"big", "small", "numa", "busy"}
	var infos []fwk.NodeInfo
	for _, n := range nodes {
		infos = append(infos, h.nodeInfo(n))
	}
	state, st := h.preFilter(pod, infos...)
	var b strings.Builder
	fmt.Fprintf(&b, "prefilter=%v:%s", st.Code(), st.Message())
	if !st.IsSuccess() {
		return b.String()
	}
	for _, ni := range infos {
		name := ni.Node().Name
		st := h.plugin.Filter(h.ctx, state, pod, ni)
		fmt.Fprintf(&b, " %s=%v:%s", name, st.Code(), st.Message())
		if !st.IsSuccess() {
			continue
		}
		s, _ := readState(state)
		if fit, ok := s.fit(name); ok {
			for _, a := range fit.assignments {
				fmt.Fprintf(&b, " %v", a)
			}
		}
		score, sst := h.plugin.Score(h.ctx, state, pod, ni)
		fmt.Fprintf(&b, " score=%d:%v", score, sst.Code())
	}
	return b.String()
}

// randomDevicePod draws a pod asking for NVIDIA cards in one of the shapes
// HAMi's users write.
func randomDevicePod(rng *rand.Rand, name string) *corev1.Pod {
	containers := 1 + rng.IntN(2)
	var limits []corev1.ResourceList
	for range containers {
		l := gpu(int64(1+rng.IntN(2)), int64([]int{0, 4000, 12000, 20000}[rng.IntN(4)]), int64([]int{0, 20, 50}[rng.IntN(3)]))
		if rng.IntN(4) == 0 {
			delete(l, "nvidia.com/gpumem")
			l["nvidia.com/gpumem-percentage"] = *resource.NewQuantity(int64(25*(1+rng.IntN(3))), resource.DecimalSI)
		}
		limits = append(limits, l)
	}
	pod := gpuPod(name, limits...)
	if rng.IntN(3) == 0 {
		pod.Annotations[nvidia.UseModelAnnotation] = []string{"A100", "V100", "A30"}[rng.IntN(3)]
	}
	if rng.IntN(3) == 0 {
		pod.Annotations[devices.NodePolicyAnnotation] = []string{"spread", "binpack"}[rng.IntN(2)]
	}
	return pod
}

// mutation changes one thing of a pod; neutral ones change only what
// batching must see past (a replica's name, its own labels, Kubernetes'
// annotations), so that replicas do batch.
type mutation struct {
	name    string
	neutral bool
	apply   func(rng *rand.Rand, pod *corev1.Pod)
}

func firstLimits(pod *corev1.Pod) corev1.ResourceList { return pod.Spec.Containers[0].Resources.Limits }

var mutations = []mutation{
	{"count", false, func(_ *rand.Rand, p *corev1.Pod) {
		l := firstLimits(p)
		n := l["nvidia.com/gpu"]
		l["nvidia.com/gpu"] = *resource.NewQuantity(3-n.Value(), resource.DecimalSI)
	}},
	{"memory", false, func(rng *rand.Rand, p *corev1.Pod) {
		l := firstLimits(p)
		delete(l, "nvidia.com/gpumem-percentage")
		l["nvidia.com/gpumem"] = *resource.NewQuantity(int64(1000+rng.IntN(30000)), resource.DecimalSI)
	}},
	{"memory percentage", false, func(rng *rand.Rand, p *corev1.Pod) {
		l := firstLimits(p)
		delete(l, "nvidia.com/gpumem")
		l["nvidia.com/gpumem-percentage"] = *resource.NewQuantity(int64(10+rng.IntN(90)), resource.DecimalSI)
	}},
	{"cores", false, func(rng *rand.Rand, p *corev1.Pod) {
		firstLimits(p)["nvidia.com/gpucores"] = *resource.NewQuantity(int64(1+rng.IntN(100)), resource.DecimalSI)
	}},
	{"another container", false, func(_ *rand.Rand, p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "extra", Resources: corev1.ResourceRequirements{Limits: gpu(1, 16000, 0)}})
	}},
	{"sidecar", false, func(_ *rand.Rand, p *corev1.Pod) {
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "side", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Limits: gpu(1, 30000, 0)}})
	}},
	{"model", false, func(rng *rand.Rand, p *corev1.Pod) {
		p.Annotations[nvidia.UseModelAnnotation] = []string{"A100", "V100", "A30"}[rng.IntN(3)]
	}},
	{"avoided model", false, func(rng *rand.Rand, p *corev1.Pod) {
		p.Annotations[nvidia.AvoidModelAnnotation] = []string{"A100", "V100"}[rng.IntN(2)]
	}},
	{"card", false, func(rng *rand.Rand, p *corev1.Pod) {
		p.Annotations[nvidia.UseUUIDAnnotation] = []string{"big-1", "small-2", "numa-3", "busy-0"}[rng.IntN(4)]
	}},
	{"numa", false, func(_ *rand.Rand, p *corev1.Pod) {
		p.Annotations[nvidia.NUMABindAnnotation] = "true"
	}},
	{"node policy", false, func(_ *rand.Rand, p *corev1.Pod) {
		if p.Annotations[devices.NodePolicyAnnotation] == "spread" {
			p.Annotations[devices.NodePolicyAnnotation] = "binpack"
		} else {
			p.Annotations[devices.NodePolicyAnnotation] = "spread"
		}
	}},
	{"card policy", false, func(_ *rand.Rand, p *corev1.Pod) {
		p.Annotations[devices.CardPolicyAnnotation] = "spread"
	}},
	{"namespace", false, func(_ *rand.Rand, p *corev1.Pod) { p.Namespace = "other" }},
	{"priority", false, func(_ *rand.Rand, p *corev1.Pod) { p.Spec.Priority = new(int32(1000)) }},
	{"gang", false, func(_ *rand.Rand, p *corev1.Pod) {
		p.Labels = map[string]string{podGroupLabel: "train"}
	}},
	{"replica name", true, func(rng *rand.Rand, p *corev1.Pod) {
		p.Name = fmt.Sprintf("replica-%d", rng.IntN(1000))
		p.UID = types.UID("uid-" + p.Name)
	}},
	{"own labels", true, func(rng *rand.Rand, p *corev1.Pod) {
		p.Labels = map[string]string{"pod-template-hash": fmt.Sprint(rng.IntN(1000)), "app": "serve"}
	}},
	{"Kubernetes' annotations", true, func(rng *rand.Rand, p *corev1.Pod) {
		p.Annotations["batch.kubernetes.io/job-completion-index"] = fmt.Sprint(rng.IntN(100))
		p.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-12-05T05:00:00Z"
	}},
	{"a training replica's annotations", true, func(rng *rand.Rand, p *corev1.Pod) {
		p.Annotations["training.kubeflow.org/replica-index"] = fmt.Sprint(rng.IntN(100))
		p.Annotations["training.kubeflow.org/replica-type"] = "worker"
		p.Annotations["example.com/owner-note"] = fmt.Sprint(rng.IntN(100))
	}},
	{"marked unschedulable by its last attempt", false, func(_ *rand.Rand, p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}},
}

func clonePod(p *corev1.Pod) *corev1.Pod {
	c := p.DeepCopy()
	for i := range c.Spec.Containers {
		c.Spec.Containers[i].Resources.Limits = c.Spec.Containers[i].Resources.Limits.DeepCopy()
	}
	return c
}

// TestSignPodSound: over random device pods and one change at a time, two
// pods with one signature always get one outcome (PreFilter, and Filter,
// cards and Score on every node), which is what lets opportunistic
// batching reuse the first pod's filtering and scoring for the second; and
// a change batching must see past (another replica) keeps the signature.
func TestSignPodSound(t *testing.T) {
	h := signatureCluster(t)
	rng := rand.New(rand.NewPCG(5, 98))
	differing := map[string]int{}
	for i := range 600 {
		base := randomDevicePod(rng, fmt.Sprintf("p%d", i))
		m := mutations[rng.IntN(len(mutations))]
		changed := clonePod(base)
		m.apply(rng, changed)
		sigBase, sigChanged := signature(t, h, base), signature(t, h, changed)
		outBase, outChanged := outcome(t, h, base), outcome(t, h, changed)
		if sigBase == "" || sigChanged == "" {
			t.Fatalf("%s: a device pod was not signed", m.name)
		}
		if m.neutral && sigBase != sigChanged {
			t.Errorf("%s: signature changed, replicas would not batch:\n%s\n%s", m.name, sigBase, sigChanged)
		}
		if sigBase == sigChanged && outBase != outChanged {
			t.Errorf("%s: one signature, two outcomes:\n%s\n%s", m.name, outBase, outChanged)
		}
		if outBase != outChanged {
			differing[m.name]++
		}
	}
	// The cluster is one where the changes matter: most non-neutral
	// changes turned up an outcome of their own at least once.
	for _, m := range mutations {
		if m.neutral && differing[m.name] > 0 {
			t.Errorf("%s changed the outcome %d times; it is not neutral", m.name, differing[m.name])
		}
	}
	if len(differing) < 8 {
		t.Errorf("only %d kinds of change altered an outcome (%v): the cluster does not tell pods apart", len(differing), differing)
	}
}

// TestSignPod: a pod asking no device signs with nothing of this plugin's,
// a device pod with one fragment.
func TestSignPod(t *testing.T) {
	h := newHarness(t, nil, eightCardNode("n1"))
	tests := []struct {
		name      string
		pod       *corev1.Pod
		wantCode  fwk.Code
		fragments int
	}{
		{"no device", gpuPod("plain", nil), fwk.Success, 0},
		{"device", gpuPod("dev", gpu(1, 1000, 10)), fwk.Success, 1},
		// NVIDIA's requests always parse (HAMi ignores what it cannot
		// read); the vendors' plugins' rules refuse some (unservable).
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fragments, st := h.plugin.SignPod(h.ctx, tt.pod)
			if st.Code() != tt.wantCode || len(fragments) != tt.fragments {
				t.Fatalf("SignPod = %d fragments, %v; want %d, %v", len(fragments), st, tt.fragments, tt.wantCode)
			}
			for _, f := range fragments {
				if f.Key != SignatureKey {
					t.Errorf("fragment key %q, want %q", f.Key, SignatureKey)
				}
			}
		})
	}
}

// TestSignPodUIDState: what the plugin keeps by a pod's UID and a
// signature cannot carry keeps the pod unsigned (a hold of its own, a
// full pass owed, a hand-over under way that may be resumed); whether it
// counts among the waiting pods is signed.
func TestSignPodUIDState(t *testing.T) {
	h := signatureCluster(t)
	gangMember := func(name string) *corev1.Pod {
		p := gpuPod(name, gpu(1, 8000, 0))
		p.Labels = map[string]string{podGroupLabel: "g"}
		return p
	}
	resumed := handedOverTo(gangMember("resumed"), "big", "big-0", 0)
	h.plugin.onPodSet(klog.Background(), resumed)
	if _, held := h.plugin.Cache().Holding(resumed.UID); !held {
		t.Fatal("the resumed hand-over holds no cards")
	}
	owed := gpuPod("owed", gpu(1, 8000, 0))
	h.plugin.fullPass.add(owed.UID)
	handedOver := handedOverTo(gangMember("handed-over"), "big", "big-0", 0)
	plain := gpuPod("plain", gpu(1, 8000, 0))
	for _, tt := range []struct {
		name   string
		pod    *corev1.Pod
		signed bool
	}{
		{"a pod with no state of its own", plain, true},
		{"a resumed hand-over's hold", resumed, false},
		{"a full pass owed", owed, false},
		{"a hand-over under way, not resumed yet", handedOver, false},
	} {
		if got := signature(t, h, tt.pod) != ""; got != tt.signed {
			t.Errorf("%s: signed %t, want %t", tt.name, got, tt.signed)
		}
	}
}
