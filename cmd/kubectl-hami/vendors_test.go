package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// vendorCluster is a node with NVIDIA GPUs and Ascend 910B4 NPUs, a node
// with Hygon DCUs, a pod holding a GPU and an NPU, and one holding a DCU.
func vendorCluster(t *testing.T) []runtime.Object {
	t.Helper()
	var objects []runtime.Object
	for i, group := range []string{
		"1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB",
		"1 node x 2 cards of Hygon DCU Z100 32 GiB",
	} {
		spec, err := simnode.ParseSpec(group)
		if err != nil {
			t.Fatal(err)
		}
		n := spec.Build([]string{"mixed", "dcu"}[i], 0)[0]
		if i == 0 {
			npus, err := simnode.ParseSpec("1 node x 2 cards of Ascend910B4 32 GiB")
			if err != nil {
				t.Fatal(err)
			}
			npus.AddTo(n)
		}
		objects = append(objects, n)
	}
	grant := func(vendor, uuid string, mem int32) string {
		return devices.EncodeAssignment(devices.Assignment{{{UUID: uuid, Vendor: vendor, MemoryMiB: mem}}})
	}
	bound := func(name, node string, annotations map[string]string) *corev1.Pod {
		annotations[devices.AssignedNode] = node
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: annotations},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	// simnode's ids of other vendors: a prefix and the UUID's last group.
	id := func(prefix, node string, i int) string {
		u := simnode.CardUUID(node, i)
		return prefix + u[len(u)-12:]
	}
	npu, dcu := id("npu-", "mixed-0", 0), id("DCU-", "dcu-0", 1)
	return append(objects,
		bound("two-vendors", "mixed-0", map[string]string{
			nvidia.AllocatedAnnotation:                grant(nvidia.VendorWord, simnode.CardUUID("mixed-0", 0), 2000),
			ascend.AllocatedAnnotation("Ascend910B4"): grant("Ascend910B4", npu, 8192),
		}),
		bound("dcu", "dcu-0", map[string]string{hygon.AllocatedAnnotation: grant(hygon.VendorWord, dcu, 4000)}),
	)
}

// cardsByVendor are the node's cards as vendor/index -> memory used.
func cardsByVendor(doc Top) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, n := range doc.Nodes {
		out[n.Name] = map[string]int64{}
		for _, c := range n.Cards {
			out[n.Name][c.Vendor+"/"+string(rune('0'+c.Index))] = c.MemoryMiB.Used
		}
	}
	return out
}

func TestTopVendors(t *testing.T) {
	nvidiaOnly := filepath.Join(t.TempDir(), "device-config.yaml")
	if err := os.WriteFile(nvidiaOnly, []byte("nvidia:\n  resourceCountName: nvidia.com/gpu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		want  map[string]map[string]int64
		error map[string]string // node -> part of its Error
	}{
		{name: "the chart's vendors by default", args: []string{"top", "-o", "json"},
			want: map[string]map[string]int64{
				"dcu-0":   {"DCU/0": 0, "DCU/1": 4000},
				"mixed-0": {"NVIDIA/0": 2000, "NVIDIA/1": 0, "Ascend910B4/0": 8192, "Ascend910B4/1": 0},
			}},
		{name: "the vendors of a device config", args: []string{"top", "-o", "json", "--device-config", nvidiaOnly},
			want: map[string]map[string]int64{"mixed-0": {"NVIDIA/0": 2000, "NVIDIA/1": 0}}},
		{name: "a node without cards of the vendors read", args: []string{"top", "dcu-0", "-o", "json", "--device-config", nvidiaOnly},
			want: map[string]map[string]int64{"dcu-0": {}}, error: map[string]string{"dcu-0": "no card registered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, vendorCluster(t), tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			var doc Top
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			got := cardsByVendor(doc)
			if len(got) != len(tt.want) {
				t.Errorf("nodes %v, want %v", got, tt.want)
			}
			for node, cards := range tt.want {
				if !mapsEqual(got[node], cards) {
					t.Errorf("node %s: cards %v, want %v", node, got[node], cards)
				}
			}
			for _, n := range doc.Nodes {
				if want := tt.error[n.Name]; !strings.Contains(n.Error, want) || (want == "") != (n.Error == "") {
					t.Errorf("node %s: error %q, want one containing %q", n.Name, n.Error, want)
				}
			}
		})
	}
	// The table names each card's vendor; cards come by vendor in the
	// chart's order (NVIDIA, then the Ascend chips), then index.
	table, err := run(t, vendorCluster(t), "top", "mixed-0")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(table, "\n")
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "NVIDIA       0 ") }); i < 0 ||
		!strings.HasPrefix(lines[i+2], "Ascend910B4  0 ") || !strings.Contains(lines[i+2], "8192/32768") {
		t.Errorf("table:\n%s", table)
	}
	if _, err := run(t, vendorCluster(t), "top", "--device-config", filepath.Join(t.TempDir(), "missing.yaml")); err == nil ||
		!strings.Contains(err.Error(), "read device config") {
		t.Errorf("missing device config: error %v", err)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if got, ok := a[k]; !ok || got != v {
			return false
		}
	}
	return true
}
