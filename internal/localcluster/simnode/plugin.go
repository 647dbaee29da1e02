package simnode

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// plugin is one device plugin endpoint as the kubelet sees it: it
// registers one extended resource, and the kubelet calls its Allocate once
// for each container whose limits ask a positive amount of that resource
// (init containers first, in the pod's order). model is what the vendor's
// plugin does in that call; several endpoints of one vendor share it.
type plugin struct {
	resource corev1.ResourceName
	model    allocator
}

// allocator is one vendor's device plugin Allocate, as far as the API
// server sees it. Each vendor's model says, in its file, which plugin and
// version it follows.
type allocator interface {
	allocate(ctx context.Context, dp *devicePlugin, call allocateCall) error
}

// allocateCall is one kubelet call of a device plugin's Allocate.
type allocateCall struct {
	// admitted is the pod the kubelet admits. No real plugin is told it:
	// a model finds its pod from the API, and hands what it found to
	// dp.check, which compares the two. Only the simulated vendors without
	// a public plugin read it (see plugin_hami.go).
	admitted *corev1.Pod
	// container is the container's index in devices.Containers (init
	// containers first); again only the simulated vendors read it.
	container int
	// resource is the endpoint's resource, and devices the number of
	// device ids the kubelet passes: the container's limit of it.
	resource corev1.ResourceName
	devices  int
}

// kubeletCall is one Allocate the kubelet makes while admitting a pod.
type kubeletCall struct {
	plugin plugin
	call   allocateCall
}

// kubeletCalls are the Allocate calls the kubelet makes to admit the pod:
// for each container, init containers first, one per resource of its
// limits that a device plugin registers, in the order of the resource
// names (the kubelet walks a map; every model here is indifferent to the
// order). Requests without limits are not the device manager's: it reads
// limits only; nor are, with DRAExtendedResource, the resources
// kube-scheduler backed by a claim (status.extendedResourceClaimStatus).
func kubeletCalls(pod *corev1.Pod) []kubeletCall {
	var out []kubeletCall
	for i, c := range devices.Containers(pod) {
		names := make([]corev1.ResourceName, 0, len(c.Resources.Limits))
		for name := range c.Resources.Limits {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			p, ok := pluginFor(name)
			if !ok || !positive(c, name) || draBacked(pod, c.Name, name) {
				continue
			}
			out = append(out, kubeletCall{plugin: p, call: allocateCall{
				admitted: pod, container: i, resource: name, devices: quantity(c, name),
			}})
		}
	}
	return out
}

// check is the simulator's own check of the pod a model found, before the
// model writes anything: a pod other than the admitted one means the
// protocol between scheduler and plugin failed. The real plugin would
// serve the wrong pod; here the call fails and counts as mismatched.
func (dp *devicePlugin) check(found *corev1.Pod, call allocateCall) error {
	if found.UID == call.admitted.UID {
		return nil
	}
	dp.mismatched.Add(1)
	return fmt.Errorf("device plugin found pod %s/%s on node %s, not %s/%s",
		found.Namespace, found.Name, dp.node, call.admitted.Namespace, call.admitted.Name)
}

// pluginFor is the device plugin endpoint that registers the resource.
func pluginFor(resource corev1.ResourceName) (plugin, bool) {
	p, ok := pluginsByResource()[resource]
	return p, ok
}

// pluginsByResource maps every registered resource to its endpoint, built
// once.
var pluginsByResource = sync.OnceValue(func() map[corev1.ResourceName]plugin {
	m := map[corev1.ResourceName]plugin{}
	for _, k := range kinds {
		for _, p := range k.plugins {
			m[p.resource] = p
		}
	}
	return m
})

// endpoints are a vendor's endpoints for the resources, sharing one model.
func endpoints(model allocator, resources ...corev1.ResourceName) []plugin {
	out := make([]plugin, len(resources))
	for i, r := range resources {
		out[i] = plugin{resource: r, model: model}
	}
	return out
}

// positive reports whether the container's limits ask a positive amount
// of the resource.
func positive(c *corev1.Container, name corev1.ResourceName) bool {
	q, ok := c.Resources.Limits[name]
	return ok && q.Sign() > 0
}

// quantity is a container's whole limit of a resource (0 when absent or
// not a small whole number).
func quantity(c *corev1.Container, name corev1.ResourceName) int {
	q, ok := c.Resources.Limits[name]
	if !ok {
		return 0
	}
	n, exact := q.AsInt64()
	if !exact || n < 0 || n > 1<<16 {
		return 0
	}
	return int(n)
}

// draBacked reports whether the container's resource is one kube-scheduler
// allocated through DRA (a request mapping of the pod's
// extendedResourceClaimStatus): the device manager skips it.
func draBacked(pod *corev1.Pod, container string, resource corev1.ResourceName) bool {
	s := pod.Status.ExtendedResourceClaimStatus
	if s == nil || !utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) {
		return false
	}
	return slices.ContainsFunc(s.RequestMappings, func(m corev1.ContainerExtendedResourceRequest) bool {
		return m.ContainerName == container && corev1.ResourceName(m.ResourceName) == resource
	})
}
