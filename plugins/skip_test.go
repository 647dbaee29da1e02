package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// TestPodsAskingNoDeviceAreSkippedEverywhere: a pod that asks for no
// managed device is skipped by PreFilter, and every other extension point
// then lets it through without an error, an API call, a cache entry or a
// node lock. Before the fix, Score (which the framework still calls for a
// plugin without PreScore) failed with "read HAMi cycle state: not found"
// and the pod stayed Pending.
func TestPodsAskingNoDeviceAreSkippedEverywhere(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
	}{
		{name: "plain pod", pod: gpuPod("plain", nil)},
		{name: "cpu only", pod: gpuPod("cpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})},
		{name: "nvidia.com/gpu: 0", pod: gpuPod("zero", gpu(0, 0, 0))},
		{name: "nvidia.com/gpu: 0 beside a container without limits", pod: gpuPod("zero2", nil, gpu(0, 0, 0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod
			h := newHarness(t, nil, eightCardNode("n1"), pod)
			ni := h.nodeInfo("n1")
			before := len(h.client.Actions())

			state, st := h.preFilter(pod, ni)
			if st.Code() != fwk.Skip {
				t.Fatalf("PreFilter code = %v (%v), want Skip", st.Code(), st.Message())
			}
			// Filter: every node passes.
			if st := h.plugin.Filter(h.ctx, state, pod, ni); !st.IsSuccess() {
				t.Errorf("Filter: %v", st)
			}
			// PreFilterExtensions, as preemption and nominated pods call them.
			other := gpuPod("other", gpu(1, 1000, 0))
			other.Spec.NodeName = "n1"
			otherInfo, err := framework.NewPodInfo(other)
			if err != nil {
				t.Fatal(err)
			}
			if st := h.plugin.AddPod(h.ctx, state, pod, otherInfo, ni); !st.IsSuccess() {
				t.Errorf("AddPod: %v", st)
			}
			if st := h.plugin.RemovePod(h.ctx, state, pod, otherInfo, ni); !st.IsSuccess() {
				t.Errorf("RemovePod: %v", st)
			}
			// PreScore skips Score; Score itself still copes.
			if st := h.plugin.PreScore(h.ctx, state, pod, []fwk.NodeInfo{ni}); st.Code() != fwk.Skip {
				t.Errorf("PreScore code = %v (%v), want Skip", st.Code(), st.Message())
			}
			if score, st := h.plugin.Score(h.ctx, state, pod, ni); !st.IsSuccess() || score != 0 {
				t.Errorf("Score = %d, %v; want 0, success", score, st)
			}
			// NormalizeScore (policy-aware vendor scores) leaves it alone.
			scores := fwk.NodeScoreList{{Name: "n1", Score: 7}}
			if st := h.plugin.ScoreExtensions().NormalizeScore(h.ctx, state, pod, scores); !st.IsSuccess() || scores[0].Score != 7 {
				t.Errorf("NormalizeScore = %v, score %d; want success, 7 unchanged", st, scores[0].Score)
			}
			if st := h.plugin.Reserve(h.ctx, state, pod, "n1"); !st.IsSuccess() {
				t.Errorf("Reserve: %v", st)
			}
			if _, st := h.plugin.PreBindPreFlight(h.ctx, state, pod, "n1"); st.Code() != fwk.Skip {
				t.Errorf("PreBindPreFlight code = %v, want Skip", st.Code())
			}
			if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
				t.Errorf("PreBind: %v", st)
			}
			h.plugin.Unreserve(h.ctx, state, pod, "n1")

			if after := h.client.Actions(); len(after) != before {
				t.Errorf("API calls for a skipped pod: %v", after[before:])
			}
			if s := h.plugin.Cache().Stats(); s.Pods != 0 {
				t.Errorf("cache holds %d pods, want none", s.Pods)
			}
			node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
			if lock, held := node.Annotations[devices.NodeLock]; held {
				t.Errorf("node locked for a skipped pod: %q", lock)
			}
			got, _ := h.client.CoreV1().Pods(pod.Namespace).Get(h.ctx, pod.Name, metav1.GetOptions{})
			if len(got.Annotations) != 0 || len(got.Labels) != 0 {
				t.Errorf("skipped pod got annotations %v, labels %v", got.Annotations, got.Labels)
			}
		})
	}
}

// TestFrameworkSchedulesPodsAskingNoDevice runs a pod that asks for no
// managed device through the framework's scheduling and binding cycle
// extension points with HAMi enabled by multiPoint, as the hami-scheduler
// profile does: nothing may fail, and HAMi writes nothing.
func TestFrameworkSchedulesPodsAskingNoDevice(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
	}{
		{name: "plain pod", pod: gpuPod("plain", nil)},
		{name: "nvidia.com/gpu: 0", pod: gpuPod("zero", gpu(0, 0, 0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod
			h := newHarness(t, nil, eightCardNode("n1"), eightCardNode("n2"), pod)
			nodes := []fwk.NodeInfo{h.nodeInfo("n1"), h.nodeInfo("n2")}
			f := h.framework(nodes)
			before := len(h.client.Actions())
			state := framework.NewCycleState()
			if _, st, _ := f.RunPreFilterPlugins(h.ctx, state, pod); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			for _, ni := range nodes {
				if st := f.RunFilterPlugins(h.ctx, state, pod, ni); !st.IsSuccess() {
					t.Fatalf("Filter %s: %v", ni.Node().Name, st)
				}
			}
			if st := f.RunPreScorePlugins(h.ctx, state, pod, nodes); !st.IsSuccess() {
				t.Fatalf("PreScore: %v", st)
			}
			if _, st := f.RunScorePlugins(h.ctx, state, pod, nodes); !st.IsSuccess() {
				t.Fatalf("Score: %v", st)
			}
			if st := f.RunReservePluginsReserve(h.ctx, state, pod, "n1"); !st.IsSuccess() {
				t.Fatalf("Reserve: %v", st)
			}
			if st := f.RunPreBindPreFlights(h.ctx, state, pod, "n1"); !st.IsSuccess() && !st.IsSkip() {
				t.Fatalf("PreBindPreFlight: %v", st)
			}
			if st := f.RunPreBindPlugins(h.ctx, state, pod, "n1"); !st.IsSuccess() {
				t.Fatalf("PreBind: %v", st)
			}
			f.RunReservePluginsUnreserve(h.ctx, state, pod, "n1")
			for _, a := range h.client.Actions()[before:] {
				if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
					t.Errorf("write for a pod asking no device: %v", a)
				}
			}
			node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
			if lock, held := node.Annotations[devices.NodeLock]; held {
				t.Errorf("node locked for a skipped pod: %q", lock)
			}
		})
	}
}

// framework is a scheduling framework over nodes whose profile enables the
// harness's plugin by multiPoint, as the hami-scheduler profile does, with
// the default queue sort and binder.
func (h *harness) framework(nodes []fwk.NodeInfo, opts ...frameworkruntime.Option) framework.Framework {
	h.t.Helper()
	schedmetrics.Register()
	registry := frameworkruntime.Registry{
		Name:               func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return h.plugin, nil },
		queuesort.Name:     queuesort.New,
		defaultbinder.Name: defaultbinder.New,
	}
	profile := &schedconfig.KubeSchedulerProfile{
		SchedulerName: "hami-scheduler",
		Plugins: &schedconfig.Plugins{MultiPoint: schedconfig.PluginSet{Enabled: []schedconfig.Plugin{
			{Name: queuesort.Name}, {Name: defaultbinder.Name}, {Name: Name, Weight: 10},
		}}},
	}
	var list []*corev1.Node
	for _, ni := range nodes {
		list = append(list, ni.Node())
	}
	opts = append([]frameworkruntime.Option{
		frameworkruntime.WithClientSet(h.client),
		frameworkruntime.WithInformerFactory(h.handle.informers),
		frameworkruntime.WithEventRecorder(h.handle.recorder),
		frameworkruntime.WithSnapshotSharedLister(schedcache.NewSnapshot(nil, list)),
	}, opts...)
	f, err := frameworkruntime.NewFramework(h.ctx, registry, profile, opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	return f
}
