package plugins

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// fakeDRAView is a DRA account of NVIDIA's cards (vendor 0), by node:
// the cards a driver publishes and what the claims take of them.
type fakeDRAView struct {
	cardsOf map[string][]devices.Card
	usedOf  map[string][]devices.Usage
	// claimUse is what each namespace's claims take of the cards, MiB
	// and cores.
	claimUse map[string][2]int64
}

func (v fakeDRAView) cards(node string, vi int, dst []devices.Usage) ([]devices.Card, []devices.Usage, error) {
	if vi != 0 {
		return nil, dst[:0], nil
	}
	return v.cardsOf[node], append(dst[:0], v.usedOf[node]...), nil
}

func (v fakeDRAView) nodes() []string {
	var out []string
	for n := range v.cardsOf {
		out = append(out, n)
	}
	return out
}

func (v fakeDRAView) namespaceUse(ns string, vi int) (int64, int64) {
	if vi != 0 {
		return 0, 0
	}
	return v.claimUse[ns][0], v.claimUse[ns][1]
}

func (v fakeDRAView) claimNamespaces() []string {
	var out []string
	for ns := range v.claimUse {
		out = append(out, ns)
	}
	return out
}

func (fakeDRAView) holding(*corev1.Pod, string) (devicecache.Holding, bool) {
	return devicecache.Holding{}, false
}

// fakeDRARoute serves the view; it reserves nothing.
type fakeDRARoute struct{ v draView }

func (r fakeDRARoute) view() (draView, error) { return r.v, nil }

func (fakeDRARoute) reserve(*corev1.Pod, string, []devices.Assignment) (draBinding, error) {
	return nil, errors.New("no reservation in this test")
}

func (fakeDRARoute) dropStale(context.Context, *corev1.Pod) error { return nil }

// draCard is a shared DRA card of 40960 MiB.
func draCard(uuid string, index int) devices.Card {
	return devices.Card{UUID: uuid, Index: index, Split: 10, MemoryMiB: 40960, Cores: 100, Model: "NVIDIA A100-SXM4-40GB", Mode: devices.DefaultMode, Healthy: true}
}

// TestDeviceCollectorDRACards: HAMi's card gauges cover the cards DRA
// drivers publish, with what the claims take of them, each card once: a
// card a device plugin still registers (a node moving to a driver with
// its register annotation left) is the device cache's, as the scheduler
// accounts it; pods a device plugin served on a DRA card count beside
// the claims.
func TestDeviceCollectorDRACards(t *testing.T) {
	const cardGauges = "hami_gpu_memory_allocated_bytes"
	series := func(node, uuid string, index int, memMiB int) string {
		return fmt.Sprintf(`hami_gpu_memory_allocated_bytes{device_cores="100",device_index="%d",device_type="NVIDIA A100-SXM4-40GB",device_uuid="%s",node="%s",zone="vGPU"} %d
`, index, uuid, node, memMiB*mib)
	}
	header := "# HELP hami_gpu_memory_allocated_bytes [ALPHA] Device memory allocated for a certain GPU\n# TYPE hami_gpu_memory_allocated_bytes gauge\n"
	tests := []struct {
		name string
		// objs are the cluster's nodes and pods; view the DRA account.
		objs []corev1.Node
		pods []*corev1.Pod
		view fakeDRAView
		want string
	}{{
		name: "a DRA node's cards, with the claims' use",
		objs: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "d1"}}},
		view: fakeDRAView{cardsOf: map[string][]devices.Card{"d1": {draCard("d1-g0", 0), draCard("d1-g1", 1)}},
			usedOf: map[string][]devices.Usage{"d1": {{Sharers: 2, MemoryMiB: 6144, Cores: 45}, {}}}},
		want: header + series("d1", "d1-g0", 0, 6144) + series("d1", "d1-g1", 1, 0),
	}, {
		name: "a node moving: the device plugin's card, once",
		objs: []corev1.Node{*gpuNode("m1", card("m1-g0", 40960))},
		view: fakeDRAView{cardsOf: map[string][]devices.Card{"m1": {draCard("m1-g0", 0)}},
			usedOf: map[string][]devices.Usage{"m1": {{Sharers: 1, MemoryMiB: 2048, Cores: 10}}}},
		want: header + `hami_gpu_memory_allocated_bytes{device_cores="100",device_index="0",device_type="NVIDIA-A100",device_uuid="m1-g0",node="m1",zone="vGPU"} 0
`,
	}, {
		name: "a pod the device plugin served on a DRA card counts beside the claims",
		objs: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "d1"}}},
		pods: []*corev1.Pod{boundPod("default", "served", "d1", "d1-g0,NVIDIA,8000,20:;", "", 1)},
		view: fakeDRAView{cardsOf: map[string][]devices.Card{"d1": {draCard("d1-g0", 0)}},
			usedOf: map[string][]devices.Usage{"d1": {{Sharers: 1, MemoryMiB: 2048, Cores: 10}}}},
		want: header + series("d1", "d1-g0", 0, 10048),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			for i := range tt.objs {
				if _, err := h.client.CoreV1().Nodes().Create(context.Background(), &tt.objs[i], metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range tt.pods {
				if _, err := h.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			waitForCache(t, h, len(tt.objs), len(tt.pods))
			h.plugin.dra = fakeDRARoute{v: tt.view}
			if err := compareCollector([]*Plugin{h.plugin}, tt.want, cardGauges); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDeviceCollectorDRAQuota: what a namespace's claims take of DRA
// cards counts in hami_resource_quota_used beside its pods' grants, as the
// scheduler's quota check counts it; a namespace with claims alone has
// its row.
func TestDeviceCollectorDRAQuota(t *testing.T) {
	h := newHarness(t, nil, gpuNode("n1", card("n1-g0", 40960)), boundPod("ml", "served", "n1", "n1-g0,NVIDIA,8000,20:;", "", 1))
	waitForCache(t, h, 1, 1)
	h.plugin.dra = fakeDRARoute{v: fakeDRAView{claimUse: map[string][2]int64{"ml": {2048, 10}, "claims-only": {1024, 5}}}}
	want := `
# HELP hami_resource_quota_used [ALPHA] resourcequota usage for a certain device
# TYPE hami_resource_quota_used gauge
hami_resource_quota_used{limit="0",namespace="claims-only",quota_name="nvidia.com/gpucores",zone="vGPU"} 5
hami_resource_quota_used{limit="0",namespace="claims-only",quota_name="nvidia.com/gpumem",zone="vGPU"} 1024
hami_resource_quota_used{limit="0",namespace="ml",quota_name="nvidia.com/gpucores",zone="vGPU"} 30
hami_resource_quota_used{limit="0",namespace="ml",quota_name="nvidia.com/gpumem",zone="vGPU"} 10048
`
	if err := compareCollector([]*Plugin{h.plugin}, want, "hami_resource_quota_used"); err != nil {
		t.Error(err)
	}
}
