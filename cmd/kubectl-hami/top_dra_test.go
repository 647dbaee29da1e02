package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

const (
	draA = "GPU-d0a0a0a0-0000-4000-8000-0000000000d0"
	draB = "GPU-d1b1b1b1-1111-4000-8000-0000000000d1"
	draN = "GPU-e0e0e0e0-2222-4000-8000-0000000000e0"
)

// publishedSlice is the node's ResourceSlice of the driver, one device
// per card UUID, shared, of 40 GiB (its pool named after the node), as
// the driver's model publishes it.
func publishedSlice(driver dra.Driver, node string, uuids ...string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver.Name},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver.Name, NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}},
	}
	for i, uuid := range uuids {
		d := resourceapi.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type": {StringValue: ptr.To(driver.Type)}, "uuid": {StringValue: ptr.To(uuid)},
				"productName": {StringValue: ptr.To("NVIDIA A100-SXM4-40GB")}, "minor": {IntValue: ptr.To(int64(i))},
			},
			Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{driver.Memory: {Value: resource.MustParse("40Gi")}},
			AllowMultipleAllocations: ptr.To(true),
		}
		if driver.Cores != "" {
			d.Capacity[driver.Cores] = resourceapi.DeviceCapacity{Value: resource.MustParse("100")}
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	return s
}

// allocatedClaim is a claim of namespace ml allocated a share of the
// node's device (capacity as "memory=4Gi"; none: the device whole),
// reserved for the pods, which use it in their first container through
// their entry "gpu".
func allocatedClaim(name string, driver dra.Driver, node, device string, pods []*corev1.Pod, capacity map[string]string) *resourceapi.ResourceClaim {
	r := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: driver.Name, Pool: node, Device: device}
	if capacity != nil {
		r.ShareID = ptr.To(types.UID("share-" + name))
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{}
		for k, v := range capacity {
			r.ConsumedCapacity[resourceapi.QualifiedName(k)] = resource.MustParse(v)
		}
	}
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{r}}}},
	}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To(name)})
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
	return c
}

// claimPod is a running pod of namespace ml bound to the node, without
// HAMi's annotations (a claim gives it its card).
func claimPod(name, node string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	return p
}

// draCluster mixes a device-plugin node with two DRA nodes, one of HAMi's
// driver and one of NVIDIA's, and a node moving from the device plugin to
// HAMi's driver: its register annotation still lists the card the driver
// publishes (one card), and a pod the device plugin served runs beside a
// claim. On the DRA nodes: hami-scheduler's claim for a pod (named in its
// status for nvidia.com/gpu), a native claim asking capacity shared by
// two pods, a claim reserved for no pod, a device allocated whole.
func draCluster() []runtime.Object {
	register := func(uuid string) string {
		return `[{"id":"` + uuid + `","count":10,"devmem":40960,"devcore":100,"type":"NVIDIA A100-SXM4-40GB","mode":"hami-core","health":true}]`
	}
	served := pod("ml", "served", "moving-0", corev1.PodRunning, draN+",NVIDIA,8000,20:;", "cuda")
	mover := claimPod("mover", "moving-0", "cuda")
	infer := claimPod("infer", "dra-0", "server")
	infer.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "infer-hami-x",
		RequestMappings: []corev1.ContainerExtendedResourceRequest{{ContainerName: "server", ResourceName: string(nvidia.DefaultCountName), RequestName: "container-0-gpu-0"}}}
	hamiClaim := allocatedClaim("infer-hami-x", dra.HAMiCore, "dra-0", "gpu-0", nil, map[string]string{"memory": "10000Mi", "cores": "30"})
	hamiClaim.Status.Allocation.Devices.Results[0].Request = "container-0-gpu-0"
	hamiClaim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "infer", UID: infer.UID}}
	a, b := claimPod("a", "dra-0", "c"), claimPod("b", "dra-0", "c")
	whole := claimPod("whole", "dra-1", "c")
	return []runtime.Object{
		node("gpu-a", nil, map[string]string{nvidia.RegisterAnnotation: register(t4a)}),
		node("dra-0", nil, nil),
		node("dra-1", nil, nil),
		node("moving-0", nil, map[string]string{nvidia.RegisterAnnotation: register(draN)}),
		publishedSlice(dra.HAMiCore, "dra-0", draA, draB),
		publishedSlice(dra.NVIDIAGPU, "dra-1", t4b),
		publishedSlice(dra.HAMiCore, "moving-0", draN),
		pod("ml", "trainer", "gpu-a", corev1.PodRunning, t4a+",NVIDIA,4000,30:;", "trainer"),
		hamiClaim,
		allocatedClaim("shared", dra.HAMiCore, "dra-0", "gpu-1", []*corev1.Pod{a, b}, map[string]string{"memory": "5Gi", "cores": "20"}),
		allocatedClaim("orphan", dra.HAMiCore, "dra-0", "gpu-1", nil, map[string]string{"memory": "1Gi", "cores": "5"}),
		allocatedClaim("whole", dra.NVIDIAGPU, "dra-1", "gpu-0", []*corev1.Pod{whole}, nil),
		allocatedClaim("mover", dra.HAMiCore, "moving-0", "gpu-0", []*corev1.Pod{mover}, map[string]string{"memory": "2Gi", "cores": "10"}),
		served, mover, infer, a, b, whole,
	}
}
