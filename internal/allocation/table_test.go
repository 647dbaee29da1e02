package allocation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/simnode"
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
		"gpu-0  NVIDIA  #0    " + card0[:12] + "  NVIDIA A100  1/10    3000/40960    30/100  trainer",
		"gpu-0  NVIDIA  #1",
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
		"dcu-0    DCU          #0",
		"mixed-0  Ascend910B4  #1",
		"mixed-0  NVIDIA       #0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
