package plugins

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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

func (fakeDRAView) namespaceUse(string, int) (int64, int64) { return 0, 0 }

func (fakeDRAView) holding(*corev1.Pod, string) (devicecache.Holding, bool) {
	return devicecache.Holding{}, false
}

// fakeDRARoute serves the view; it reserves nothing.
type fakeDRARoute struct{ v draView }

func (r fakeDRARoute) view() (draView, error) { return r.v, nil }

func (fakeDRARoute) reserve(*corev1.Pod, string, []devices.Assignment) (draBinding, error) {
	return nil, errors.New("no reservation in this test")
}

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
			deadline := time.Now().Add(5 * time.Second)
			for s := h.plugin.cache.Stats(); s.Nodes != len(tt.objs) || s.Pods != len(tt.pods); s = h.plugin.cache.Stats() {
				if time.Now().After(deadline) {
					t.Fatalf("cache holds %+v, want %d nodes, %d pods", s, len(tt.objs), len(tt.pods))
				}
				time.Sleep(time.Millisecond)
			}
			h.plugin.dra = fakeDRARoute{v: tt.view}
			if err := compareCollector([]*Plugin{h.plugin}, tt.want, cardGauges); err != nil {
				t.Error(err)
			}
		})
	}
}
