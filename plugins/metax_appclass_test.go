package plugins

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/metax"
)

// MetaX sGPU app-class pods (metax-tech.com/sgpu-app-class) through the
// plugin: the usage cache counts the online and offline pods on each card
// (devices.Usage.Online, Offline) from Fit's grants (assumed and
// nominated pods) and from annotations (running pods), and the vendor's
// Fit and score read them, as HAMi's PodInfos.

// onlineYAML is HAMi's examples/metax/sgpu/online.yaml: one sGPU, 4 GiB;
// the webhook adds nothing to an online pod.
func onlineYAML(name string) *corev1.Pod {
	p := gpuPod(name, merge(count(metax.DefaultSGPUCountName, 1), count(metax.DefaultSGPUMemoryName, 4)))
	p.Annotations[metax.AppClassAnnotation] = metax.Online
	return p
}

// offlineYAML is HAMi's examples/metax/sgpu/offline.yaml: one sGPU, 60
// vcore, 4 GiB, with the best-effort policy the webhook adds.
func offlineYAML(name string) *corev1.Pod {
	p := gpuPod(name, merge(count(metax.DefaultSGPUCountName, 1), count(metax.DefaultSGPUCoresName, 60), count(metax.DefaultSGPUMemoryName, 4)))
	p.Annotations[metax.AppClassAnnotation] = metax.Offline
	p.Annotations[metax.QoSPolicyAnnotation] = metax.BestEffort
	return p
}

// plainSGPU is an sGPU pod without app class: 4 GiB, 30 vcore.
func plainSGPU(name string) *corev1.Pod {
	p := gpuPod(name, merge(count(metax.DefaultSGPUCountName, 1), count(metax.DefaultSGPUCoresName, 30), count(metax.DefaultSGPUMemoryName, 4)))
	p.Annotations[metax.QoSPolicyAnnotation] = metax.BestEffort
	return p
}

// runningSGPU is pod bound to node and running, holding the sGPU
// assignment its annotations record (as HAMi's scheduler wrote them).
func runningSGPU(p *corev1.Pod, node, assignment string) *corev1.Pod {
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	p.Annotations[metax.SGPUToAllocateAnnotation] = assignment
	p.Annotations[metax.SGPUAllocatedAnnotation] = assignment
	p.Annotations[devices.AssignedNode] = node
	return p
}

// sgpuIndex is the sGPU vendor's index in the plugin's registry.
func (h *harness) sgpuIndex() int {
	h.t.Helper()
	i := slices.IndexFunc(h.plugin.registry.Vendors(), func(v devices.Vendor) bool { return v.Name() == metax.SGPUWord })
	if i < 0 {
		h.t.Fatal("no sGPU vendor")
	}
	return i
}

// sgpuUsage is the cache's usage of node's sGPUs.
func (h *harness) sgpuUsage(node string) []devices.Usage {
	h.t.Helper()
	_, used, err := h.plugin.Cache().Snapshot(node, h.sgpuIndex(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return used
}

// sgpuHeld is the sGPU assignment the cache holds for pod, encoded.
func (h *harness) sgpuHeld(pod *corev1.Pod) string {
	h.t.Helper()
	held, ok := h.plugin.Cache().Holding(pod.UID)
	if !ok {
		h.t.Fatalf("%s holds nothing", pod.Name)
	}
	return devices.EncodeAssignment(held.Assignments[h.sgpuIndex()])
}

// TestMetaxAppClassHAMiExamples: offline.yaml then online.yaml on a node
// with one sGPU (HAMi's examples): both are placed, on the same card, with
// HAMi's annotations; the card then refuses a second offline pod (online
// work suspends offline work) and a pod without app class, but takes a
// second online pod.
func TestMetaxAppClassHAMiExamples(t *testing.T) {
	off, on := offlineYAML("offline"), onlineYAML("online")
	h := newHarness(t, metaxKunlunArgs(t, devices.NodeBinpack), sgpuNode("n1", 0), off, on)

	state := h.schedule(off, "n1")
	if st := h.plugin.PreBind(h.ctx, state, off, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind offline: %v", st)
	}
	h.releaseLock("n1")
	state = h.schedule(on, "n1")
	if st := h.plugin.PreBind(h.ctx, state, on, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind online: %v", st)
	}
	for _, tt := range []struct {
		pod  *corev1.Pod
		want map[string]string
	}{
		{off, map[string]string{
			metax.SGPUToAllocateAnnotation:   "n1-sgpu-0,Metax-SGPU,4096,60:;",
			metax.SGPUAllocatedAnnotation:    "n1-sgpu-0,Metax-SGPU,4096,60:;",
			metax.DevicesAllocatedAnnotation: `[[{"uuid":"n1-sgpu-0","compute":60,"vRam":4096}]]`,
		}},
		// Online pods are granted 0 cores (compute left out).
		{on, map[string]string{
			metax.SGPUToAllocateAnnotation:   "n1-sgpu-0,Metax-SGPU,4096,0:;",
			metax.SGPUAllocatedAnnotation:    "n1-sgpu-0,Metax-SGPU,4096,0:;",
			metax.DevicesAllocatedAnnotation: `[[{"uuid":"n1-sgpu-0","vRam":4096}]]`,
		}},
	} {
		got, err := h.client.CoreV1().Pods("default").Get(h.ctx, tt.pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, w := range tt.want {
			if got.Annotations[k] != w {
				t.Errorf("%s: %s = %q, want %q", tt.pod.Name, k, got.Annotations[k], w)
			}
		}
		if _, ok := got.Annotations[metax.PredicateTimeAnnotation]; !ok {
			t.Errorf("%s: no %s", tt.pod.Name, metax.PredicateTimeAnnotation)
		}
	}
	if got, want := h.sgpuUsage("n1")[0], (devices.Usage{Sharers: 2, MemoryMiB: 8192, Cores: 60, Online: 1, Offline: 1}); got != want {
		t.Errorf("card usage %+v, want %+v", got, want)
	}

	for _, p := range []*corev1.Pod{offlineYAML("offline2"), plainSGPU("plain")} {
		_, st := h.filter(p, "n1")
		if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "sharing mode not wanted") {
			t.Errorf("%s: Filter = %v, want Unschedulable (sharing mode not wanted)", p.Name, st)
		}
	}
	if _, st := h.filter(onlineYAML("online2"), "n1"); !st.IsSuccess() {
		t.Errorf("second online pod: %v", st)
	}
}

// TestMetaxAppClassOnlineAvoidsOfflineCards: an online pod placed on an
// sGPU node takes, among the cards that fit, the one with the fewest
// online pods and not one running offline pods alone (HAMi's
// prioritizeOnlineDevices), from the counts the cache rebuilt from the
// running pods' annotations.
func TestMetaxAppClassOnlineAvoidsOfflineCards(t *testing.T) {
	// Cards 0-3: two online pods, offline work only, nothing, one online.
	running := []*corev1.Pod{
		runningSGPU(onlineYAML("on-a"), "n1", "n1-sgpu-0,Metax-SGPU,4096,0:;"),
		runningSGPU(onlineYAML("on-b"), "n1", "n1-sgpu-0,Metax-SGPU,4096,0:;"),
		runningSGPU(offlineYAML("off-a"), "n1", "n1-sgpu-1,Metax-SGPU,4096,60:;"),
		runningSGPU(onlineYAML("on-c"), "n1", "n1-sgpu-3,Metax-SGPU,4096,0:;"),
	}
	objs := []runtime.Object{sgpuNode("n1", 0, 0, 0, 0)}
	for _, p := range running {
		objs = append(objs, p)
	}
	pod := onlineYAML("p")
	objs = append(objs, pod)
	h := newHarness(t, metaxKunlunArgs(t, devices.NodeBinpack), objs...)
	waitForPods(t, h, len(running))
	want := []devices.Usage{
		{Sharers: 2, MemoryMiB: 8192, Online: 2},
		{Sharers: 1, MemoryMiB: 4096, Cores: 60, Offline: 1},
		{},
		{Sharers: 1, MemoryMiB: 4096, Online: 1},
	}
	if got := h.sgpuUsage("n1"); !slices.Equal(got, want) {
		t.Fatalf("usage rebuilt from annotations %+v, want %+v", got, want)
	}
	// The idle card first (no online pod), then card 3 (one online pod).
	h.schedule(pod, "n1")
	if got := h.sgpuHeld(pod); got != "n1-sgpu-2,Metax-SGPU,4096,0:;" {
		t.Errorf("first online pod: %s, want the idle card", got)
	}
	next := onlineYAML("q")
	if _, err := h.client.CoreV1().Pods("default").Create(h.ctx, next, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.schedule(next, "n1")
	// Cards 2 (the assumed pod) and 3 now run one online pod each, both
	// before card 0 (two) and card 1 (offline work only); the tie keeps
	// the walk order, which starts from the last card.
	if got := h.sgpuHeld(next); got != "n1-sgpu-3,Metax-SGPU,4096,0:;" {
		t.Errorf("second online pod: %s, want card 3", got)
	}
	if got := h.sgpuUsage("n1"); got[2].Online != 1 || got[3].Online != 2 {
		t.Errorf("usage after two assumed online pods: %+v", got)
	}
}

// TestMetaxAppClassOfflineRefusedByOnlineWork: an offline pod is refused
// on a card running an online pod, whether that pod runs (rebuilt from its
// annotations, cache.SetPod) or is only assumed (Reserve), and placed on
// another card; Unreserve and a preemption's removal of the online pod
// free the card for it.
func TestMetaxAppClassOfflineRefusedByOnlineWork(t *testing.T) {
	onCard0 := func(p *corev1.Pod) *corev1.Pod {
		p.Annotations[metax.SGPUUseUUIDAnnotation] = "n1-sgpu-0"
		return p
	}

	t.Run("running online pod", func(t *testing.T) {
		online := runningSGPU(onlineYAML("online"), "n1", "n1-sgpu-0,Metax-SGPU,4096,0:;")
		offline := offlineYAML("offline")
		h := newHarness(t, metaxKunlunArgs(t, devices.NodeBinpack), sgpuNode("n1", 0, 0), online, offline)
		if err := h.plugin.Cache().SetPod(online); err != nil {
			t.Fatal(err)
		}
		if got := h.sgpuUsage("n1")[0]; got.Online != 1 {
			t.Fatalf("running online pod not counted: %+v", got)
		}
		state, st := h.filter(onCard0(offlineYAML("pinned")), "n1")
		if st.Code() != fwk.Unschedulable || !strings.Contains(explained(state, "n1", st), "sharing mode not wanted") {
			t.Errorf("offline pod on the online card: %v, want Unschedulable (sharing mode not wanted)", explained(state, "n1", st))
		}
		h.schedule(offline, "n1")
		if got := h.sgpuHeld(offline); got != "n1-sgpu-1,Metax-SGPU,4096,60:;" {
			t.Errorf("offline pod: %s, want the other card", got)
		}
		if got := h.sgpuUsage("n1")[1]; got.Offline != 1 {
			t.Errorf("assumed offline pod not counted: %+v", got)
		}

		// Preemption simulates evicting the online pod: its class goes
		// with it, and the offline pod fits the card.
		pinned := onCard0(offlineYAML("pinned"))
		ni := h.nodeInfo("n1")
		state, _ = h.preFilter(pinned, ni)
		victim, err := framework.NewPodInfo(online)
		if err != nil {
			t.Fatal(err)
		}
		sim := state.Clone()
		if st := h.plugin.RemovePod(h.ctx, sim, pinned, victim, ni); !st.IsSuccess() {
			t.Fatal(st)
		}
		if st := h.plugin.Filter(h.ctx, sim, pinned, ni); !st.IsSuccess() {
			t.Errorf("with the online pod removed: %v", explained(sim, "n1", st))
		}
		if st := h.plugin.AddPod(h.ctx, sim, pinned, victim, ni); !st.IsSuccess() {
			t.Fatal(st)
		}
		if st := h.plugin.Filter(h.ctx, sim, pinned, ni); st.IsSuccess() {
			t.Error("online pod added back: the offline pod still fits its card")
		}

		// Once the online pod is gone, its card takes offline work.
		h.plugin.Cache().RemovePod(online)
		if got := h.sgpuUsage("n1")[0]; got != (devices.Usage{}) {
			t.Errorf("after RemovePod: %+v", got)
		}
		if _, st := h.filter(onCard0(offlineYAML("pinned")), "n1"); !st.IsSuccess() {
			t.Errorf("offline pod after the online pod left: %v", st)
		}
	})

	t.Run("assumed online pod", func(t *testing.T) {
		online, pinned := onlineYAML("online"), onCard0(offlineYAML("pinned"))
		h := newHarness(t, metaxKunlunArgs(t, devices.NodeBinpack), sgpuNode("n1", 0, 0), online, pinned)
		state := h.schedule(onCard0(online), "n1")
		if got := h.sgpuUsage("n1")[0]; got != (devices.Usage{Sharers: 1, MemoryMiB: 4096, Online: 1}) {
			t.Fatalf("assumed online pod: %+v", got)
		}
		if _, st := h.filter(pinned, "n1"); st.Code() != fwk.Unschedulable {
			t.Errorf("offline pod beside an assumed online pod: %v, want Unschedulable", st)
		}
		h.plugin.Unreserve(h.ctx, state, online, "n1")
		if _, st := h.filter(pinned, "n1"); !st.IsSuccess() {
			t.Errorf("after Unreserve: %v", st)
		}
	})
}

// TestMetaxAppClassNominatedPodsCount: an online pod nominated to a node
// (AddPod) counts as online work on the card it would take, so an offline
// pod cannot join the offline work running there.
func TestMetaxAppClassNominatedPodsCount(t *testing.T) {
	running := runningSGPU(offlineYAML("running"), "n1", "n1-sgpu-0,Metax-SGPU,4096,30:;")
	nominated, offline := onlineYAML("nominated"), offlineYAML("offline")
	h := newHarness(t, metaxKunlunArgs(t, devices.NodeBinpack), sgpuNode("n1", 0), running, nominated, offline)
	waitForPods(t, h, 1)
	ni := h.nodeInfo("n1")
	state, st := h.preFilter(offline, ni)
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	info, err := framework.NewPodInfo(nominated)
	if err != nil {
		t.Fatal(err)
	}
	sim := state.Clone()
	if st := h.plugin.AddPod(h.ctx, sim, offline, info, ni); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := h.plugin.Filter(h.ctx, sim, offline, ni); st.Code() != fwk.Unschedulable || !strings.Contains(explained(sim, "n1", st), "sharing mode not wanted") {
		t.Errorf("offline pod beside a nominated online pod: %v, want Unschedulable (sharing mode not wanted)", explained(sim, "n1", st))
	}
	if st := h.plugin.Filter(h.ctx, state, offline, ni); !st.IsSuccess() {
		t.Errorf("without the nominated pod (offline work only): %v", explained(state, "n1", st))
	}
}

// TestMetaxAppClassOnlineScore: an online pod ranks nodes by HAMi's
// online score (x10000, negated under spread): -20 per online pod on its
// card, so the node whose card runs fewer online pods comes first under
// either policy, against the binpack order of usage alone.
func TestMetaxAppClassOnlineScore(t *testing.T) {
	for _, policy := range []devices.NodePolicy{devices.NodeBinpack, devices.NodeSpread} {
		t.Run(string(policy), func(t *testing.T) {
			objs := []runtime.Object{sgpuNode("busy", 0), sgpuNode("calm", 0)}
			for _, p := range []*corev1.Pod{
				runningSGPU(onlineYAML("b1"), "busy", "busy-sgpu-0,Metax-SGPU,4096,0:;"),
				runningSGPU(onlineYAML("b2"), "busy", "busy-sgpu-0,Metax-SGPU,4096,0:;"),
				runningSGPU(onlineYAML("c1"), "calm", "calm-sgpu-0,Metax-SGPU,4096,0:;"),
			} {
				objs = append(objs, p)
			}
			pod := onlineYAML("p")
			objs = append(objs, pod)
			h := newHarness(t, metaxKunlunArgs(t, policy), objs...)
			waitForPods(t, h, 3)
			got, scores := h.rank(pod, "busy", "calm")
			if want := []string{"calm", "busy"}; !slices.Equal(got, want) {
				t.Errorf("node order %v (scores %v), want %v", got, scores, want)
			}
		})
	}
}
