package dra

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Share is one card a container of the pod gets on a DRA node.
type Share struct {
	// Container indexes devices.Containers(pod): init containers first.
	Container int
	// Resource is the container's card-count resource of the vendor, which
	// the kubelet maps to the claim's request.
	Resource corev1.ResourceName
	Grant    devices.Grant
	Device   Device
}

// ClaimLabel marks the claims hami-scheduler writes for its pods.
const ClaimLabel = "hami.io/claim"

// Claim is the ResourceClaim that gives the pod's containers their shares
// on the node, with its allocation and its reservation for the pod (to be
// written to the claim's status once the claim exists), and the pod
// status that refers each container to its requests (its claim name to
// be set once the claim exists).
type Claim struct {
	Object   *resourceapi.ResourceClaim
	Mappings []corev1.ContainerExtendedResourceRequest
}

// NewClaim builds the claim for the pod's shares: one request per share,
// naming the driver's DeviceClass and, by a CEL selector, the card's
// UUID, and asking the grant's memory (bytes) and cores as capacity; one
// result per request on that device, with a share ID when the device is
// shared and the capacity the grant consumes under the device's request
// policies. The claim is owned by the pod and carries kube-scheduler's
// extended-resource-claim annotation, as the claims kube-scheduler writes
// for extended resources do. newShareID draws a share ID.
func NewClaim(pod *corev1.Pod, node string, shares []Share, newShareID func() types.UID) (*Claim, error) {
	containers := devices.Containers(pod)
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pod.Namespace,
			GenerateName: pod.Name + "-hami-",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
			Annotations: map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"},
			Labels:      map[string]string{ClaimLabel: "true"},
			Finalizers:  []string{resourceapi.Finalizer},
		},
	}
	allocation := &resourceapi.AllocationResult{
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}
	var mappings []corev1.ContainerExtendedResourceRequest
	perContainer := map[int]int{}
	for _, s := range shares {
		if s.Container < 0 || s.Container >= len(containers) {
			return nil, fmt.Errorf("share for container %d: the pod has %d containers", s.Container, len(containers))
		}
		name := fmt.Sprintf("container-%d-card-%d", s.Container, perContainer[s.Container])
		perContainer[s.Container]++
		request, result, err := requestAndResult(name, s, newShareID)
		if err != nil {
			return nil, err
		}
		claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, request)
		allocation.Devices.Results = append(allocation.Devices.Results, result)
		mappings = append(mappings, corev1.ContainerExtendedResourceRequest{
			ContainerName: containers[s.Container].Name, ResourceName: string(s.Resource), RequestName: name,
		})
	}
	if len(shares) == 0 {
		return nil, fmt.Errorf("no share to claim")
	}
	claim.Status = resourceapi.ResourceClaimStatus{
		Allocation:  allocation,
		ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}},
	}
	return &Claim{Object: claim, Mappings: mappings}, nil
}

// requestAndResult is one share's request and its allocation result.
func requestAndResult(name string, s Share, newShareID func() types.UID) (resourceapi.DeviceRequest, resourceapi.DeviceRequestAllocationResult, error) {
	d := s.Device
	exact := &resourceapi.ExactDeviceRequest{
		DeviceClassName: d.Driver.DeviceClass,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           1,
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf("device.attributes[%q].uuid == %q", d.Driver.Name, d.Card.UUID),
		}}},
	}
	result := resourceapi.DeviceRequestAllocationResult{Request: name, Driver: d.Key.Driver, Pool: d.Key.Pool, Device: d.Key.Device}
	if !d.Shared {
		return resourceapi.DeviceRequest{Name: name, Exactly: exact}, result, nil
	}
	memory := int64(s.Grant.MemoryMiB) * MiB
	if d.Driver.Cores == "" && s.Grant.Cores >= d.Card.Cores {
		// Exclusive use, on a driver that shares memory only: all of it.
		memory = d.MemoryBytes
	}
	requests := map[resourceapi.QualifiedName]resource.Quantity{d.Driver.Memory: quantity(memory, true)}
	consumedMemory, err := consume(d.Memory, memory, d.MemoryBytes)
	if err != nil {
		return resourceapi.DeviceRequest{}, result, fmt.Errorf("card %s %s: %w", d.Card.UUID, d.Driver.Memory, err)
	}
	result.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{d.Driver.Memory: quantity(consumedMemory, true)}
	if d.Driver.Cores != "" {
		cores := int64(s.Grant.Cores)
		consumedCores, err := consume(d.Cores, cores, int64(d.Card.Cores))
		if err != nil {
			return resourceapi.DeviceRequest{}, result, fmt.Errorf("card %s %s: %w", d.Card.UUID, d.Driver.Cores, err)
		}
		requests[d.Driver.Cores] = quantity(cores, false)
		result.ConsumedCapacity[d.Driver.Cores] = quantity(consumedCores, false)
	}
	exact.Capacity = &resourceapi.CapacityRequirements{Requests: requests}
	result.ShareID = ptr.To(newShareID())
	return resourceapi.DeviceRequest{Name: name, Exactly: exact}, result, nil
}

// consume is what a request of n takes of a capacity of total under its
// request policy, as kube-scheduler's allocator computes it: at least the
// range's minimum, rounded up to its step (counted from the minimum), or
// one of its valid values; an error when the result exceeds the range's
// maximum or the capacity.
func consume(policy *resourceapi.CapacityRequestPolicy, n, total int64) (int64, error) {
	v := n
	if policy != nil {
		switch {
		case len(policy.ValidValues) > 0:
			v = -1
			for _, q := range policy.ValidValues {
				if x := q.Value(); x >= n && (v < 0 || x < v) {
					v = x
				}
			}
			if v < 0 {
				return 0, fmt.Errorf("%d is above every valid value", n)
			}
		case policy.ValidRange != nil:
			r := policy.ValidRange
			lo := int64(0)
			if r.Min != nil {
				lo = r.Min.Value()
			}
			v = max(v, lo)
			if r.Step != nil && r.Step.Value() > 0 {
				step := r.Step.Value()
				v = lo + (v-lo+step-1)/step*step
			}
			if r.Max != nil && v > r.Max.Value() {
				return 0, fmt.Errorf("%d is above the maximum %s", n, r.Max.String())
			}
		}
	}
	if v > total {
		return 0, fmt.Errorf("%d is above the capacity %d", v, total)
	}
	return v, nil
}
