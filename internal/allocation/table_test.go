package allocation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

func TestWriteTable(t *testing.T) {
	spec := simnode.Spec{Nodes: 1, Cards: 2, Model: "NVIDIA A100", MemoryMiB: 40960, Split: 10, Cores: 100}
	node := *spec.Build("gpu", 0)[0]
	card0 := simnode.CardUUID("gpu-0", 0)
	limits := corev1.ResourceList{nvidia.DefaultCountName: resource.MustParse("1")}
	pods := []corev1.Pod{
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "trainer",
				Annotations: map[string]string{nvidia.AllocatedAnnotation: card0 + ",NVIDIA,3000,30:;", devices.AssignedNode: "gpu-0"}},
			Spec:   corev1.PodSpec{NodeName: "gpu-0", Containers: []corev1.Container{{Name: "cuda", Resources: corev1.ResourceRequirements{Limits: limits}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "waiting"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "cuda", Resources: corev1.ResourceRequirements{Limits: limits}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/1 nodes are available: 1 insufficient NVIDIA devices",
			}}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec:       corev1.PodSpec{NodeName: "gpu-0", Containers: []corev1.Container{{Name: "nginx"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		},
	}
	var out strings.Builder
	vendors := nvidiaOnly(t)
	WriteTable(&out, vendors, Read(vendors, []corev1.Node{node}, pods), pods)
	got := out.String()
	for _, want := range []string{
		"default    trainer  Running  gpu-0  cuda       NVIDIA  #0 " + card0[:12] + "  3000 MiB  30%",
		"gpu-0  device-plugin  NVIDIA  #0    " + card0[:12] + "  NVIDIA A100  1/10    3000/40960    30/100  trainer",
		"gpu-0  device-plugin  NVIDIA  #1",
		"default/waiting is pending: 0/1 nodes are available: 1 insufficient NVIDIA devices",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "web") {
		t.Errorf("table lists a pod that asks for no card:\n%s", got)
	}
}

// Pods of other vendors are listed, and every row names the card's vendor.
func TestWriteTableVendors(t *testing.T) {
	vendors, nodes, uuid := vendorCluster(t)
	dcu := cardRef{"dcu-0", hygon.VendorWord, 0}
	key, value := allocated(vendors, hygon.VendorWord, devices.Grant{UUID: uuid[dcu], MemoryMiB: 2000, Cores: 20})
	pods := []corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dcu", Annotations: map[string]string{key: value, devices.AssignedNode: "dcu-0"}},
		Spec:       corev1.PodSpec{NodeName: "dcu-0", Containers: []corev1.Container{{Name: "rocm"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
	var out strings.Builder
	WriteTable(&out, vendors, Read(vendors, nodes, pods), pods)
	got := out.String()
	for _, want := range []string{
		"default    dcu  Running  dcu-0  rocm       DCU     #0 " + uuid[dcu],
		"dcu-0    device-plugin  DCU          #0",
		"mixed-0  device-plugin  Ascend910B4  #1",
		"mixed-0  device-plugin  NVIDIA       #0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

// A DRA card shows its driver as its kind, and a pod holding it by a
// claim is listed with the card, though it asks no count resource; a
// card a device plugin registers and a driver publishes too is one row,
// of both kinds.
func TestWriteTableDRA(t *testing.T) {
	vendors := nvidiaOnly(t)
	s := nodeSlice(dra.HAMiCore, "dra-0", draDevice(dra.HAMiCore, 0, "GPU-h0", 40*gib, true))
	moving := nodeSlice(dra.HAMiCore, "moving-0", draDevice(dra.HAMiCore, 0, "GPU-m0", 40*gib, true))
	d := dra.Inventory([]*resourceapi.ResourceSlice{&s}, func(string) int32 { return 10 }).Devices[0]
	p := runningPod("native", "dra-0", "c")
	claim := nativeClaim("gpu", d, []*corev1.Pod{&p}, "memory=4Gi", "cores=25")
	pods := []corev1.Pod{p}
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "dra-0"}}, {ObjectMeta: metav1.ObjectMeta{Name: "moving-0", Annotations: map[string]string{
		nvidia.RegisterAnnotation: `[{"id":"GPU-m0","index":0,"count":10,"devmem":40960,"devcore":100,"type":"NVIDIA-A100","health":true}]`,
	}}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{nvidia.DefaultCountName: resource.MustParse("10")}}}}
	r := ReadCluster(Cluster{Vendors: vendors, Nodes: nodes, Pods: pods,
		Slices: []resourceapi.ResourceSlice{s, moving}, Claims: []resourceapi.ResourceClaim{claim}})
	var out strings.Builder
	WriteTable(&out, vendors, r, pods)
	got := out.String()
	for _, want := range []string{
		"ns         native  Running  dra-0  c          NVIDIA  #0 GPU-h0  4096 MiB  25%",
		"dra-0     hami-core-gpu.project-hami.io                NVIDIA  #0    GPU-h0  NVIDIA A100-SXM4-40GB  1/10    4096/40960    25/100  ns/native",
		"moving-0  device-plugin+hami-core-gpu.project-hami.io  NVIDIA  #0    GPU-m0  NVIDIA-A100            0/10    0/40960       0/100   -",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
