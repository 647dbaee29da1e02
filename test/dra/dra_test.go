package dra

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// mixed is a cluster of both kinds: device-plugin NVIDIA nodes, and DRA
// nodes of HAMi's, Hygon's and Ascend's drivers.
const mixed = "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB; " +
	"1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra; " +
	"1 node x 2 cards of Hygon DCU Z100 32 GiB, dra; " +
	"1 node x 2 cards of Ascend910B4 32 GiB, dra"

// The DRA nodes publish their driver's slice (the node's pool, owned by
// the Node) and no HAMi registration; the device-plugin node publishes
// nothing and keeps HAMi's; every DRA driver's DeviceClass is there.
func TestMixedClusterSlices(t *testing.T) {
	c := newCluster(t, "mixed-slices", mixed, nil)
	for _, n := range c.nodes {
		s, _, err := simnode.NodeSpec(n)
		if err != nil {
			t.Fatal(err)
		}
		live, err := controlPlane.Client.CoreV1().Nodes().Get(c.ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		list, err := controlPlane.Client.ResourceV1().ResourceSlices().List(c.ctx, metav1.ListOptions{
			FieldSelector: resourceapi.ResourceSliceSelectorNodeName + "=" + n.Name,
		})
		if err != nil {
			t.Fatal(err)
		}
		if s.DRA == "" {
			if len(list.Items) != 0 || live.Annotations[nvidia.RegisterAnnotation] == "" {
				t.Errorf("device-plugin node %s: %d slices, register %q", n.Name, len(list.Items), live.Annotations[nvidia.RegisterAnnotation])
			}
			continue
		}
		if len(list.Items) != 1 {
			t.Fatalf("DRA node %s: %d slices, want 1", n.Name, len(list.Items))
		}
		got, want := list.Items[0], s.ResourceSlice(live)
		if got.Spec.Driver != s.DRA || got.Spec.Pool.Name != n.Name || *got.Spec.NodeName != n.Name {
			t.Errorf("slice of %s: driver %s pool %s node %v", n.Name, got.Spec.Driver, got.Spec.Pool.Name, got.Spec.NodeName)
		}
		if !apiequality.Semantic.DeepEqual(got.Spec.Devices, want.Spec.Devices) || !apiequality.Semantic.DeepEqual(got.OwnerReferences, want.OwnerReferences) {
			t.Errorf("slice of %s:\n%+v\nowners %+v\nwant devices\n%+v\nowners %+v", n.Name, got.Spec.Devices, got.OwnerReferences, want.Spec.Devices, want.OwnerReferences)
		}
		if _, ok := live.Status.Allocatable[nvidia.DefaultCountName]; ok || live.Annotations[nvidia.RegisterAnnotation] != "" {
			t.Errorf("DRA node %s carries HAMi's registration or nvidia.com/gpu", n.Name)
		}
		if _, err := controlPlane.Client.ResourceV1().DeviceClasses().Get(c.ctx, s.DRA, metav1.GetOptions{}); err != nil {
			t.Errorf("DeviceClass of %s: %v", s.DRA, err)
		}
	}
}

// A native claim asking capacity is allocated by kube-scheduler's
// DynamicResources, from the default profile or hami-scheduler's: its
// consumed memory is what it asked, the cores the driver's default; the
// kubelet starts the pod once the claim is allocated and reserved, and
// hami-core's limits follow the claim.
func TestNativeClaimAskingCapacity(t *testing.T) {
	c := newCluster(t, "native-claim", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra", nil)
	for _, scheduler := range []string{corev1.DefaultSchedulerName, profile.SchedulerName} {
		t.Run(scheduler, func(t *testing.T) {
			name := "by-" + scheduler
			c.capacityClaim(name, simnode.HAMiDRADriver, "memory=10Gi")
			c.claimPod(name, name, c.node(0), scheduler)
			pod := c.waitRunning(name)
			claim := c.checkReserved(name, pod)
			consumed := claim.Status.Allocation.Devices.Results[0].ConsumedCapacity
			if m, cores := consumed["memory"], consumed["cores"]; m.String() != "10Gi" || cores.String() != "100" {
				t.Errorf("consumed %v: want memory 10Gi and cores 100", consumed)
			}
			got, ok := agent.PreparedDevices(c.ns, name)
			if !ok || len(got["c"]) != 1 {
				t.Fatalf("prepared %+v, %v: want one device for container c", got, ok)
			}
			d := got["c"][0]
			if d.MemoryMiB != 10240 || d.Cores != 100 || !d.Enforced || d.Device != claim.Status.Allocation.Devices.Results[0].Device {
				t.Errorf("container c got %+v: want hami-core limits 10240 MiB and 100%% on the allocated device", d)
			}
		})
	}
}

// The kubelet starts a pod bound to a DRA node only once its claim is
// allocated and reserved for it, as 1.37's does: before, the pod stays
// Pending with a FailedPrepareDynamicResources event; a claim whose device
// the node does not publish is refused by the driver. (The pods are bound
// without a scheduler; the resource claim controller reserves an
// allocated claim for such a pod.)
func TestKubeletPreparesOnlyWhatItMay(t *testing.T) {
	c := newCluster(t, "kubelet-prepare", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra", nil)
	node := c.node(0)
	// allocate allocates the claim the device (as a scheduler would) and
	// reserves it for the pod (as the resource claim controller does for
	// a pod bound without a scheduler, which may come first).
	allocate := func(name, device string, reserveFor *corev1.Pod) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			claim, err := c.claim(name)
			if err != nil {
				return err
			}
			if claim.Status.Allocation == nil {
				claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
					Request: "gpu", Driver: simnode.HAMiDRADriver, Pool: node, Device: device,
				}}}}
			}
			if !slices.ContainsFunc(claim.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == reserveFor.UID }) {
				claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: reserveFor.Name, UID: reserveFor.UID})
			}
			_, err = controlPlane.Client.ResourceV1().ResourceClaims(c.ns).UpdateStatus(c.ctx, claim, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// pending waits until the kubelet reports the pod Pending with its
	// container ContainerCreating (its status may follow its event).
	pending := func(name string) {
		t.Helper()
		c.eventually("pod "+name+" Pending, ContainerCreating", func() (bool, string) {
			p, err := c.pod(name)
			if err != nil {
				return false, err.Error()
			}
			return p.Status.Phase == corev1.PodPending && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == "ContainerCreating", fmt.Sprintf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
		})
	}

	t.Run("allocated and reserved later", func(t *testing.T) {
		c.capacityClaim("late", simnode.HAMiDRADriver)
		pod := c.claimPod("late", "late", node, "")
		msg := c.waitEvent("late", "FailedPrepareDynamicResources")
		if !strings.Contains(msg, "is not allowed to use ResourceClaim late") {
			t.Errorf("event %q: want the claim not reserved for the pod", msg)
		}
		pending("late")
		allocate("late", "hami-gpu-0", pod)
		// The claim's change does not wake the kubelet; the pod's does (or
		// its resync, a minute later).
		c.nudge("late")
		c.waitRunning("late")
		c.checkReserved("late", pod)
	})
	t.Run("a device the node does not publish", func(t *testing.T) {
		c.capacityClaim("ghost", simnode.HAMiDRADriver)
		pod := c.claimPod("ghost", "ghost", node, "")
		allocate("ghost", "hami-gpu-9", pod)
		c.nudge("ghost")
		c.eventually("the driver's refusal", func() (bool, string) {
			msg := c.waitEvent("ghost", "FailedPrepareDynamicResources")
			return strings.Contains(msg, "requested device is not allocatable: hami-gpu-9"), msg
		})
		pending("ghost")
		if _, ok := agent.PreparedDevices(c.ns, "ghost"); ok {
			t.Errorf("a refused claim's pod got devices")
		}
		c.deletePod("ghost")
	})
}

// NVIDIA's chart maps nvidia.com/gpu to its DeviceClass: a pod asking one
// nvidia.com/gpu on a "dra nvidia" node gets kube-scheduler's
// extended-resource claim, which the kubelet prepares for the container
// (the whole card's memory, the request policy's default); a native claim
// asking memory shares the card. The class goes at the end: it would keep
// HAMi's pods off device-plugin nodes (issue 33).
func TestNVIDIADriverAndItsDeviceClass(t *testing.T) {
	c := newCluster(t, "nvidia-dra", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra nvidia", nil)
	t.Cleanup(func() {
		// t.Context() is cancelled by now.
		err := controlPlane.Client.ResourceV1().DeviceClasses().Delete(context.Background(), simnode.NVIDIADRADriver, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete DeviceClass %s: %v", simnode.NVIDIADRADriver, err)
		}
	})
	class, err := controlPlane.Client.ResourceV1().DeviceClasses().Get(c.ctx, simnode.NVIDIADRADriver, metav1.GetOptions{})
	if err != nil || class.Spec.ExtendedResourceName == nil || *class.Spec.ExtendedResourceName != string(nvidia.DefaultCountName) {
		t.Fatalf("DeviceClass %s: %+v, %v: want extendedResourceName nvidia.com/gpu", simnode.NVIDIADRADriver, class, err)
	}
	c.capacityClaim("share", simnode.NVIDIADRADriver, "memory=8Gi")
	c.claimPod("share", "share", c.node(0), corev1.DefaultSchedulerName)
	c.waitRunning("share")
	c.devicePod("whole", c.node(0), corev1.DefaultSchedulerName, quantities(string(nvidia.DefaultCountName), 1))
	pod := c.waitRunning("whole")
	if pod.Status.ExtendedResourceClaimStatus == nil {
		t.Fatalf("pod whole: no extendedResourceClaimStatus")
	}
	c.checkReserved(pod.Status.ExtendedResourceClaimStatus.ResourceClaimName, pod)
	got, ok := agent.PreparedDevices(c.ns, "whole")
	if !ok || len(got["c"]) != 1 || !strings.HasPrefix(got["c"][0].Device, "gpu-") || got["c"][0].MemoryMiB != 40960 || got["c"][0].Enforced {
		t.Errorf("container c of whole got %+v, %v: want a whole gpu-<minor> (40960 MiB), not enforced", got, ok)
	}
}
