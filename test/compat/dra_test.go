package compat

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// draServed reports whether the API server serves resource.k8s.io/v1
// (1.34 and later); DRA nodes exist only there. Like every test of the
// running suite, it skips without a cluster (needsCluster).
func draServed(t *testing.T) bool {
	t.Helper()
	needsCluster(t)
	if serverVersion.Minor() < 34 {
		t.Skipf("Kubernetes %s serves no resource.k8s.io/v1", serverVersion)
		return false
	}
	return true
}

// newDRAEnv is newEnv whose DRA node groups have their drivers'
// DeviceClasses installed and their slices published.
func newDRAEnv(t *testing.T, name, nodes string) *env {
	t.Helper()
	e := newEnv(t, name, nodes)
	specs, err := simnode.ParseSpecs(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if err := localcluster.InstallDeviceClasses(t.Context(), controlPlane.Config, simnode.DeviceClasses(specs)); err != nil {
		t.Fatal(err)
	}
	list, err := controlPlane.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: groupLabel + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var built []*corev1.Node
	for i := range list.Items {
		built = append(built, &list.Items[i])
	}
	if err := simnode.WaitForSlices(t.Context(), controlPlane.Client, built, waitLimit); err != nil {
		t.Fatal(err)
	}
	return e
}

// A HAMi pod on a cluster whose only node runs HAMi's DRA driver: from
// 1.36 (DRAConsumableCapacity and DRAExtendedResource on by default) it
// runs with a claim hami-scheduler allocated, reserved and named in its
// status, consuming what it asked; on 1.34 and 1.35 (both alpha, off) DRA
// nodes take no HAMi pod, and the pod is refused with the reason.
func TestDRANode(t *testing.T) {
	if !draServed(t) {
		return
	}
	e := newDRAEnv(t, "dra-node", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra")
	e.create(e.pod("p", gpu{cards: 1, memory: 4000, cores: 30}))
	if serverVersion.Minor() < 36 {
		msg := e.waitUnschedulable("p")
		if !strings.Contains(msg, "no NVIDIA device on node") {
			t.Errorf("FailedScheduling %q: want the DRA node refused for want of NVIDIA devices", msg)
		}
		return
	}
	p := e.waitRunning("p")
	status := p.Status.ExtendedResourceClaimStatus
	if status == nil {
		t.Fatalf("pod %s runs without extendedResourceClaimStatus", p.Name)
	}
	claim, err := controlPlane.Client.ResourceV1().ResourceClaims(e.ns).Get(t.Context(), status.ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Allocation == nil || len(claim.Status.ReservedFor) != 1 || claim.Status.ReservedFor[0].UID != p.UID {
		t.Fatalf("claim %s status %+v: want allocated and reserved for the pod", claim.Name, claim.Status)
	}
	r := claim.Status.Allocation.Devices.Results[0]
	if m, c := r.ConsumedCapacity["memory"], r.ConsumedCapacity["cores"]; m.Value() != 4000*dra.MiB || c.Value() != 30 {
		t.Errorf("claim %s consumes %v, want 4000 MiB and 30 cores", claim.Name, r.ConsumedCapacity)
	}
}

// With NVIDIA's DeviceClass mapping nvidia.com/gpu installed, HAMi's pods
// keep running on device-plugin nodes, whatever the minor does with the
// mapping (1.36 and later apply it; 1.34 and 1.35 drop the field).
func TestDeviceClassMappingHAMiResource(t *testing.T) {
	if !draServed(t) {
		return
	}
	e := newEnv(t, "deviceclass", "1 node x 2 cards of NVIDIA A100 40 GiB, split 10")
	classes := controlPlane.Client.ResourceV1().DeviceClasses()
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec:       resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To(string(nvidia.DefaultCountName))},
	}
	if _, err := classes.Create(t.Context(), class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = classes.Delete(context.Background(), class.Name, metav1.DeleteOptions{}) })
	e.create(e.pod("p", gpu{cards: 1, memory: 4000}))
	if p := e.waitRunning("p"); p.Annotations[nvidia.AllocatedAnnotation] == "" {
		t.Errorf("pod runs without %s", nvidia.AllocatedAnnotation)
	}
	e.checkAccounting()
}
