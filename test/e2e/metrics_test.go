package e2e

import (
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/plugins"
)

// gauge returns the value of the scheduler's metric name whose labels
// include want, gathered from the process's registry (the in-process
// scheduler's), and how many series matched.
func gauge(t *testing.T, name string, want map[string]string) (float64, int) {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	var value float64
	matched := 0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			matched++
			value = metricValue(m)
		}
	}
	return value, matched
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return 0
}

// TestMetricsOfAScheduledPod: once a pod runs, HAMi's card and pod gauges
// on the scheduler's metrics registry show its grant, in bytes, with
// HAMi's labels.
func TestMetricsOfAScheduledPod(t *testing.T) {
	e := newEnv(t, "metrics")
	nodes := e.addNodes("1 node x 1 card of NVIDIA A100 40 GiB, split 10", nil)
	node := nodes[0].Name
	e.create(e.pod("p", gpu{cards: 1, memory: 3000, cores: 20}))
	p := e.waitRunning("p")
	a, err := devices.DecodeAssignment(p.Annotations[nvidia.AllocatedAnnotation])
	if err != nil || len(a) != 1 || len(a[0]) != 1 {
		t.Fatalf("pod's assignment %q: %v", p.Annotations[nvidia.AllocatedAnnotation], err)
	}
	g := a[0][0]
	card := map[string]string{"node": node, "device_uuid": g.UUID, "device_index": "0", "zone": "vGPU"}
	e.eventually("the card's metrics show the pod's grant", func() (bool, string) {
		got, n := gauge(t, "hami_gpu_memory_allocated_bytes", card)
		want := float64(g.MemoryMiB) * (1 << 20)
		return n == 1 && got == want, fmt.Sprintf("%d series, %v bytes, want %v", n, got, want)
	})
	if got, n := gauge(t, "hami_gpu_memory_limit_bytes", card); n != 1 || got != 40960*(1<<20) {
		t.Errorf("hami_gpu_memory_limit_bytes = %v (%d series), want 40 GiB", got, n)
	}
	if got, n := gauge(t, "hami_gpu_shared_count", card); n != 1 || got != 1 {
		t.Errorf("hami_gpu_shared_count = %v (%d series), want 1", got, n)
	}
	if got, n := gauge(t, "hami_gpu_core_allocated_ratio", card); n != 1 || got != float64(g.Cores) {
		t.Errorf("hami_gpu_core_allocated_ratio = %v (%d series), want %d", got, n, g.Cores)
	}
	pod := map[string]string{"namespace": e.ns, "node": node, "pod": "p", "container_index": "0", "device_uuid": g.UUID, "zone": "vGPU"}
	if got, n := gauge(t, "hami_vgpu_memory_allocated_bytes", pod); n != 1 || got != float64(g.MemoryMiB)*(1<<20) {
		t.Errorf("hami_vgpu_memory_allocated_bytes = %v (%d series), want %d MiB in bytes", got, n, g.MemoryMiB)
	}
	if _, n := gauge(t, "hami_scheduler_node_lock_wait_seconds", map[string]string{"result": "acquired"}); n != 1 {
		t.Errorf("hami_scheduler_node_lock_wait_seconds{result=acquired}: %d series, want 1", n)
	}

	// Gone with the pod.
	e.deletePod("p")
	e.eventually("the card's allocation released", func() (bool, string) {
		got, n := gauge(t, "hami_gpu_memory_allocated_bytes", card)
		_, pods := gauge(t, "hami_vgpu_memory_allocated_bytes", pod)
		return n == 1 && got == 0 && pods == 0, fmt.Sprintf("%v bytes, %d pod series", got, pods)
	})
}

// podEvents lists the reasons and messages of the pod's events of the
// given reasons.
func (e *env) podEvents(name string, reasons ...string) map[string][]string {
	e.t.Helper()
	list, err := controlPlane.Client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, ev := range list.Items {
		for _, r := range reasons {
			if ev.Reason == r {
				out[r] = append(out[r], ev.Type+" "+ev.Message)
			}
		}
	}
	return out
}

// TestEventsOfScheduling: HAMi's pod events, and a FailedScheduling
// message that counts nodes per reason whatever their card count.
func TestEventsOfScheduling(t *testing.T) {
	// HAMi's success events are off by default (two API writes per pod).
	t.Cleanup(func() { restartScheduler(t, nil) })
	restartScheduler(t, &hamiv1.HAMiArgs{SuccessEvents: ptr.To(true)})
	e := newEnv(t, "events")
	e.addNodes("1 node x 1 card of NVIDIA A100 40 GiB, split 10; 1 node x 2 cards of NVIDIA A100 40 GiB, split 10", nil)
	e.create(e.pod("fits", gpu{cards: 1, memory: 3000}))
	e.waitRunning("fits")
	e.eventually("FilteringSucceed and BindingSucceed on the pod", func() (bool, string) {
		evs := e.podEvents("fits", plugins.EventFilteringSucceed, plugins.EventBindingSucceed)
		ok := len(evs[plugins.EventFilteringSucceed]) == 1 && len(evs[plugins.EventBindingSucceed]) == 1 &&
			strings.HasPrefix(evs[plugins.EventFilteringSucceed][0], "Normal find fit node(") &&
			strings.Contains(evs[plugins.EventFilteringSucceed][0], "0 nodes not fit, 2 nodes fit(") &&
			strings.HasPrefix(evs[plugins.EventBindingSucceed][0], "Normal Successfully binding node [")
		return ok, fmt.Sprint(evs)
	})

	e.create(e.pod("too-big", gpu{cards: 1, memory: 50000}))
	msg := e.waitUnschedulable("too-big")
	if !strings.Contains(msg, "2 insufficient NVIDIA devices: insufficient memory") || strings.Contains(msg, "cards:") {
		t.Errorf("FailedScheduling %q: want both nodes counted under one node-independent reason", msg)
	}
	e.eventually("FilteringFailed on the pod", func() (bool, string) {
		evs := e.podEvents("too-big", plugins.EventFilteringFailed)[plugins.EventFilteringFailed]
		joined := strings.Join(evs, "\n")
		ok := strings.HasPrefix(joined, "Warning no available node, 2 nodes do not meet: 2 nodes insufficient NVIDIA devices: insufficient memory(") &&
			strings.Contains(joined, "[1/1 cards: insufficient memory]") && strings.Contains(joined, "[2/2 cards: insufficient memory]")
		return ok, joined
	})
}
