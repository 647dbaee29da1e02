package plugins

import (
	"fmt"
	"strings"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// boundPod is a pod of namespace ns bound to node holding the assignment
// allocated (and, if given, the MIG slices).
func boundPod(ns, name, node, allocated, migSlices string, containers int) *corev1.Pod {
	limits := make([]corev1.ResourceList, containers)
	for i := range limits {
		limits[i] = gpu(1, 1000, 0)
	}
	p := gpuPod(name, limits...)
	p.Namespace = ns
	p.UID = types.UID("uid-" + ns + "-" + name)
	p.Spec.NodeName = node
	p.Annotations[nvidia.AllocatedAnnotation] = allocated
	p.Annotations[devices.AssignedNode] = node
	if migSlices != "" {
		p.Annotations[nvidia.MIGAllocationsAnnotation] = migSlices
	}
	return p
}

// metricsFixture is a cache with two shared cards (three containers of two
// pods on them), a MIG card with two slices (one the device plugin
// reported), and a memory quota in default.
func metricsFixture(t *testing.T) *harness {
	h := newHarness(t, nil,
		gpuNode("n1", card("n1-g0", 10000), card("n1-g1", 20000)),
		a100MIGNode("m1", "GPU-m"),
		boundPod("default", "a", "n1", "n1-g0,NVIDIA,3000,20:;", "", 1),
		boundPod("team", "b", "n1", "n1-g0,NVIDIA,1000,10:;n1-g1,NVIDIA,2000,0:;", "", 2),
		boundPod("mig", "ready", "m1", "GPU-m,NVIDIA,4864,15:;",
			`[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"1g.5gb","placement":{"start":6,"size":1},"migUUID":"MIG-1","gpuInstanceID":13,"computeInstanceID":0}]`, 1),
		boundPod("mig", "pending", "m1", "GPU-m,NVIDIA,4864,15:;",
			`[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"1g.5gb","placement":{"start":5,"size":1}}]`, 1),
		deviceQuota("gpu", map[string]int64{"limits.nvidia.com/gpumem": 8000}),
	)
	waitForQuota(t, h, true)
	waitForCache(t, h, 2, 4)
	return h
}

// waitForCache waits until the device cache holds the nodes and pods.
func waitForCache(t *testing.T, h *harness, nodes, pods int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s := h.plugin.cache.Stats(); s.Nodes != nodes || s.Pods != pods; s = h.plugin.cache.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("cache holds %+v, want %d nodes, %d pods", s, nodes, pods)
		}
		time.Sleep(time.Millisecond)
	}
}

const wantDeviceMetrics = `
# HELP hami_gpu_core_allocated_ratio [ALPHA] Device core allocated for a certain GPU
# TYPE hami_gpu_core_allocated_ratio gauge
hami_gpu_core_allocated_ratio{device_index="0",device_type="NVIDIA A100-SXM4-40GB",device_uuid="GPU-m",node="m1",zone="vGPU"} 30
hami_gpu_core_allocated_ratio{device_index="0",device_type="NVIDIA-A100",device_uuid="n1-g0",node="n1",zone="vGPU"} 30
hami_gpu_core_allocated_ratio{device_index="1",device_type="NVIDIA-A100",device_uuid="n1-g1",node="n1",zone="vGPU"} 0
# HELP hami_gpu_core_limit_ratio [ALPHA] Device core limit for a certain GPU
# TYPE hami_gpu_core_limit_ratio gauge
hami_gpu_core_limit_ratio{device_index="0",device_type="NVIDIA A100-SXM4-40GB",device_uuid="GPU-m",node="m1",zone="vGPU"} 100
hami_gpu_core_limit_ratio{device_index="0",device_type="NVIDIA-A100",device_uuid="n1-g0",node="n1",zone="vGPU"} 100
hami_gpu_core_limit_ratio{device_index="1",device_type="NVIDIA-A100",device_uuid="n1-g1",node="n1",zone="vGPU"} 100
# HELP hami_gpu_memory_allocated_bytes [ALPHA] Device memory allocated for a certain GPU
# TYPE hami_gpu_memory_allocated_bytes gauge
hami_gpu_memory_allocated_bytes{device_cores="100",device_index="0",device_type="NVIDIA A100-SXM4-40GB",device_uuid="GPU-m",node="m1",zone="vGPU"} 1.0200547328e+10
hami_gpu_memory_allocated_bytes{device_cores="100",device_index="0",device_type="NVIDIA-A100",device_uuid="n1-g0",node="n1",zone="vGPU"} 4.194304e+09
hami_gpu_memory_allocated_bytes{device_cores="100",device_index="1",device_type="NVIDIA-A100",device_uuid="n1-g1",node="n1",zone="vGPU"} 2.097152e+09
# HELP hami_gpu_memory_limit_bytes [ALPHA] Device memory limit for a certain GPU
# TYPE hami_gpu_memory_limit_bytes gauge
hami_gpu_memory_limit_bytes{device_index="0",device_type="NVIDIA A100-SXM4-40GB",device_uuid="GPU-m",node="m1",zone="vGPU"} 4.294967296e+10
hami_gpu_memory_limit_bytes{device_index="0",device_type="NVIDIA-A100",device_uuid="n1-g0",node="n1",zone="vGPU"} 1.048576e+10
hami_gpu_memory_limit_bytes{device_index="1",device_type="NVIDIA-A100",device_uuid="n1-g1",node="n1",zone="vGPU"} 2.097152e+10
# HELP hami_gpu_shared_count [ALPHA] Number of containers sharing this GPU
# TYPE hami_gpu_shared_count gauge
hami_gpu_shared_count{device_index="0",device_type="NVIDIA A100-SXM4-40GB",device_uuid="GPU-m",node="m1",zone="vGPU"} 2
hami_gpu_shared_count{device_index="0",device_type="NVIDIA-A100",device_uuid="n1-g0",node="n1",zone="vGPU"} 2
hami_gpu_shared_count{device_index="1",device_type="NVIDIA-A100",device_uuid="n1-g1",node="n1",zone="vGPU"} 1
# HELP hami_node_gpu_memory_allocated_ratio [ALPHA] GPU Memory Allocated Percentage on a certain GPU
# TYPE hami_node_gpu_memory_allocated_ratio gauge
hami_node_gpu_memory_allocated_ratio{device_index="0",device_type="NVIDIA A100-SXM4-40GB",device_uuid="GPU-m",node="m1",zone="vGPU"} 0.2375
hami_node_gpu_memory_allocated_ratio{device_index="0",device_type="NVIDIA-A100",device_uuid="n1-g0",node="n1",zone="vGPU"} 0.4
hami_node_gpu_memory_allocated_ratio{device_index="1",device_type="NVIDIA-A100",device_uuid="n1-g1",node="n1",zone="vGPU"} 0.1
# HELP hami_node_gpu_mig_instance_info [ALPHA] Realized MIG instance identity and scheduler placement
# TYPE hami_node_gpu_mig_instance_info gauge
hami_node_gpu_mig_instance_info{compute_instance_id="0",device_index="0",device_uuid="GPU-m",gpu_instance_id="13",mig_uuid="MIG-1",node="m1",placement_size="1",placement_start="6",profile="1g.5gb",zone="vGPU"} 1
# HELP hami_node_gpu_overview [ALPHA] GPU overview on a certain node
# TYPE hami_node_gpu_overview gauge
hami_node_gpu_overview{device_cores="100",device_index="0",device_memory_limit="10000",device_type="NVIDIA-A100",device_uuid="n1-g0",node="n1",zone="vGPU"} 4.194304e+09
hami_node_gpu_overview{device_cores="100",device_index="0",device_memory_limit="40960",device_type="NVIDIA A100-SXM4-40GB",device_uuid="GPU-m",node="m1",zone="vGPU"} 1.0200547328e+10
hami_node_gpu_overview{device_cores="100",device_index="1",device_memory_limit="20000",device_type="NVIDIA-A100",device_uuid="n1-g1",node="n1",zone="vGPU"} 2.097152e+09
# HELP hami_resource_quota_limit [ALPHA] resourcequota limit for a certain device
# TYPE hami_resource_quota_limit gauge
hami_resource_quota_limit{namespace="default",quota_name="nvidia.com/gpumem",zone="vGPU"} 8000
# HELP hami_resource_quota_used [ALPHA] resourcequota usage for a certain device
# TYPE hami_resource_quota_used gauge
hami_resource_quota_used{limit="0",namespace="default",quota_name="nvidia.com/gpucores",zone="vGPU"} 20
hami_resource_quota_used{limit="0",namespace="mig",quota_name="nvidia.com/gpucores",zone="vGPU"} 30
hami_resource_quota_used{limit="0",namespace="mig",quota_name="nvidia.com/gpumem",zone="vGPU"} 9728
hami_resource_quota_used{limit="0",namespace="team",quota_name="nvidia.com/gpucores",zone="vGPU"} 10
hami_resource_quota_used{limit="0",namespace="team",quota_name="nvidia.com/gpumem",zone="vGPU"} 3000
hami_resource_quota_used{limit="8000",namespace="default",quota_name="nvidia.com/gpumem",zone="vGPU"} 3000
# HELP hami_scheduler_cache_size [ALPHA] Objects in the scheduler's device cache, by kind (nodes, cards, pods, assumed_pods, unreadable_pods)
# TYPE hami_scheduler_cache_size gauge
hami_scheduler_cache_size{kind="assumed_pods"} 0
hami_scheduler_cache_size{kind="cards"} 3
hami_scheduler_cache_size{kind="nodes"} 2
hami_scheduler_cache_size{kind="pods"} 4
hami_scheduler_cache_size{kind="unreadable_pods"} 0
# HELP hami_vgpu_core_allocated_ratio [ALPHA] vGPU core allocated from a container
# TYPE hami_vgpu_core_allocated_ratio gauge
hami_vgpu_core_allocated_ratio{container_index="0",device_uuid="GPU-m",namespace="mig",node="m1",pod="pending",zone="vGPU"} 15
hami_vgpu_core_allocated_ratio{container_index="0",device_uuid="GPU-m",namespace="mig",node="m1",pod="ready",zone="vGPU"} 15
hami_vgpu_core_allocated_ratio{container_index="0",device_uuid="n1-g0",namespace="default",node="n1",pod="a",zone="vGPU"} 20
hami_vgpu_core_allocated_ratio{container_index="0",device_uuid="n1-g0",namespace="team",node="n1",pod="b",zone="vGPU"} 10
hami_vgpu_core_allocated_ratio{container_index="0",device_uuid="n1-g1",namespace="team",node="n1",pod="b",zone="vGPU"} 0
# HELP hami_vgpu_memory_allocated_bytes [ALPHA] vGPU memory allocated from a container
# TYPE hami_vgpu_memory_allocated_bytes gauge
hami_vgpu_memory_allocated_bytes{container_index="0",device_uuid="GPU-m",namespace="mig",node="m1",pod="pending",zone="vGPU"} 5.100273664e+09
hami_vgpu_memory_allocated_bytes{container_index="0",device_uuid="GPU-m",namespace="mig",node="m1",pod="ready",zone="vGPU"} 5.100273664e+09
hami_vgpu_memory_allocated_bytes{container_index="0",device_uuid="n1-g0",namespace="default",node="n1",pod="a",zone="vGPU"} 3.145728e+09
hami_vgpu_memory_allocated_bytes{container_index="0",device_uuid="n1-g0",namespace="team",node="n1",pod="b",zone="vGPU"} 1.048576e+09
hami_vgpu_memory_allocated_bytes{container_index="0",device_uuid="n1-g1",namespace="team",node="n1",pod="b",zone="vGPU"} 2.097152e+09
`

// compareCollector registers a fresh collector over sources on a new
// registry and compares what it gathers with the exposition text. (It does
// not lint, as component-base's testutil would: HAMi's hami_gpu_shared_count
// breaks the "_count" rule, and dashboards need the name as it is.)
func compareCollector(sources []*Plugin, expected string, names ...string) error {
	reg := metrics.NewKubeRegistry()
	reg.CustomMustRegister(newDeviceCollector(func() []*Plugin { return sources }))
	return promtestutil.GatherAndCompare(reg, strings.NewReader(expected), names...)
}

// TestDeviceCollector renders HAMi's gauges from a fixture cache, with
// HAMi's names, labels and units; two sources over the same nodes and
// pods (two profiles) give each series once.
func TestDeviceCollector(t *testing.T) {
	h := metricsFixture(t)
	for _, sources := range [][]*Plugin{{h.plugin}, {h.plugin, h.plugin}} {
		if err := compareCollector(sources, wantDeviceMetrics); err != nil {
			t.Errorf("%d sources: %v", len(sources), err)
		}
	}
	// No source (no profile enables HAMi yet): no series.
	if err := compareCollector(nil, "", "hami_gpu_memory_limit_bytes", "hami_scheduler_cache_size"); err != nil {
		t.Error(err)
	}
}

// TestDeviceCollectorFollowsTheCache: the gauges are the cache's at scrape
// time: an assumed pod counts at once, and a card's allocation goes when
// its pod is forgotten.
func TestDeviceCollectorFollowsTheCache(t *testing.T) {
	h := newHarness(t, nil, gpuNode("solo", card("solo-g0", 10000)))
	sources := []*Plugin{h.plugin}
	want := func(memMiB int, assumed int) string {
		return fmt.Sprintf(`
# HELP hami_gpu_memory_allocated_bytes [ALPHA] Device memory allocated for a certain GPU
# TYPE hami_gpu_memory_allocated_bytes gauge
hami_gpu_memory_allocated_bytes{device_cores="100",device_index="0",device_type="NVIDIA-A100",device_uuid="solo-g0",node="solo",zone="vGPU"} %d
# HELP hami_scheduler_cache_size [ALPHA] Objects in the scheduler's device cache, by kind (nodes, cards, pods, assumed_pods, unreadable_pods)
# TYPE hami_scheduler_cache_size gauge
hami_scheduler_cache_size{kind="assumed_pods"} %d
hami_scheduler_cache_size{kind="cards"} 1
hami_scheduler_cache_size{kind="nodes"} 1
hami_scheduler_cache_size{kind="pods"} %d
hami_scheduler_cache_size{kind="unreadable_pods"} 0
`, memMiB*mib, assumed, assumed)
	}
	if err := compareCollector(sources, want(0, 0), "hami_gpu_memory_allocated_bytes", "hami_scheduler_cache_size"); err != nil {
		t.Error(err)
	}
	pod := gpuPod("p", gpu(1, 2500, 0))
	state := h.schedule(pod, "solo")
	if err := compareCollector(sources, want(2500, 1), "hami_gpu_memory_allocated_bytes", "hami_scheduler_cache_size"); err != nil {
		t.Error(err)
	}
	h.plugin.Unreserve(h.ctx, state, pod, "solo")
	if err := compareCollector(sources, want(0, 0), "hami_gpu_memory_allocated_bytes", "hami_scheduler_cache_size"); err != nil {
		t.Error(err)
	}
}

func TestNormalizedCores(t *testing.T) {
	for _, tt := range []struct {
		model               string
		total               int32
		used                int64
		wantLimit, wantUsed float64
	}{
		{"NVIDIA-A100", 100, 30, 100, 30},
		{"AMD-MI300X", 304, 100, 100, 33},
		{"amd-mi210", 104, 104, 100, 100},
		{"AMD-MI300X", 0, 5, 0, 5},
	} {
		if l, u := normalizedCores(tt.model, tt.total, tt.used); l != tt.wantLimit || u != tt.wantUsed {
			t.Errorf("normalizedCores(%q, %d, %d) = %v, %v; want %v, %v", tt.model, tt.total, tt.used, l, u, tt.wantLimit, tt.wantUsed)
		}
	}
}

// TestEventCounters: an undecodable pod assignment and node register are
// counted by object; a stale lock's take-over by reason.
func TestEventCounters(t *testing.T) {
	value := func(c interface{ Inc() }) float64 {
		v, _ := testutil.GetCounterMetricValue(c.(metrics.CounterMetric))
		return v
	}
	pods, nodes := value(undecodableAnnotations.WithLabelValues("pod")), value(undecodableAnnotations.WithLabelValues("node"))
	expired := value(nodeLockTakeOvers.WithLabelValues("expired"))

	broken := gpuNode("broken", card("x0", 10000))
	broken.Annotations[nvidia.RegisterAnnotation] = "[{not json"
	stale := eightCardNode("n1")
	stale.Annotations[devices.NodeLock] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + ",default,gone"
	garbled := boundPod("default", "garbled", "n1", "not an assignment", "", 1)
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, broken, stale, garbled, pod)
	if got := value(undecodableAnnotations.WithLabelValues("pod")); got != pods+1 {
		t.Errorf("pod annotations counted %v -> %v, want one more", pods, got)
	}
	if got := value(undecodableAnnotations.WithLabelValues("node")); got != nodes+1 {
		t.Errorf("node annotations counted %v -> %v, want one more", nodes, got)
	}
	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, "garbled", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.plugin.cache.Stats().UnreadablePods != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the garbled pod never left the cache")
		}
		time.Sleep(time.Millisecond)
	}
	state := h.schedule(pod, "n1")
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if got := value(nodeLockTakeOvers.WithLabelValues("expired")); got != expired+1 {
		t.Errorf("expired take-overs %v -> %v, want one more", expired, got)
	}
}

// TestSeriesFromRegistration: every series of a known label value is
// served once the metrics are registered, before any event, so that a
// scrape (and a dashboard's rate) sees them at zero.
func TestSeriesFromRegistration(t *testing.T) {
	RegisterMetrics()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if got[f.GetName()] == nil {
					got[f.GetName()] = map[string]bool{}
				}
				got[f.GetName()][l.GetName()+"="+l.GetValue()] = true
			}
		}
	}
	for name, want := range map[string][]string{
		"hami_scheduler_node_lock_wait_seconds":        prefixed("result=", lockWaitResults),
		"hami_scheduler_handover_duration_seconds":     prefixed("result=", handOverResults),
		"hami_scheduler_node_lock_takeovers_total":     prefixed("reason=", takeOverReasons),
		"hami_scheduler_prebind_failures_total":        prefixed("reason=", preBindReasons),
		"hami_scheduler_undecodable_annotations_total": prefixed("object=", undecodableKinds),
	} {
		for _, label := range want {
			if !got[name][label] {
				t.Errorf("%s{%s} not served after registration", name, label)
			}
		}
	}
}

func prefixed(prefix string, values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = prefix + v
	}
	return out
}
