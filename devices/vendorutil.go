package devices

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Helpers for vendor packages: reading container quantities and the pod
// annotations every vendor shares.

// ContainerQuantity reads a whole, non-negative quantity that fits in an
// int32 from the container's limits, then its requests. ok is false when
// neither names the resource.
func ContainerQuantity(c *corev1.Container, name corev1.ResourceName) (v int32, ok bool, err error) {
	if name == "" {
		return 0, false, nil
	}
	q, ok := c.Resources.Limits[name]
	if !ok {
		q, ok = c.Resources.Requests[name]
	}
	if !ok {
		return 0, false, nil
	}
	n, exact := q.AsInt64()
	if !exact || n < 0 || n > math.MaxInt32 {
		return 0, false, fmt.Errorf("%s %s is not a whole number between 0 and %d", name, q.String(), math.MaxInt32)
	}
	return int32(n), true, nil
}

// ScaleMemory multiplies a memory request by a vendor's memoryFactor
// (0 and 1 leave it unchanged) and refuses a product above int32.
func ScaleMemory(name corev1.ResourceName, mib, factor int32) (int32, error) {
	if factor <= 1 {
		return mib, nil
	}
	scaled := int64(mib) * int64(factor)
	if scaled > math.MaxInt32 {
		return 0, fmt.Errorf("%s %d times memoryFactor %d is above %d MiB (memory is counted in MiB, not bytes)", name, mib, factor, math.MaxInt32)
	}
	return int32(scaled), nil
}

// SplitList splits a comma-separated annotation value, trimming items and
// dropping empty ones.
func SplitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// SplitUpperList is SplitList with every item upper-cased, for card type
// selectors (matched case-insensitively as substrings).
func SplitUpperList(s string) []string {
	out := SplitList(s)
	for i := range out {
		out[i] = strings.ToUpper(out[i])
	}
	return out
}

// ApplyGPUSchedulerPolicy reads hami.io/gpu-scheduler-policy for vendors
// other than NVIDIA: binpack or spread set the card order, mutex asks for
// cards nobody else uses; numa and topology-aware are accepted and change
// nothing (HAMi enforces neither for these vendors). Anything else is an
// error that names the annotation.
func ApplyGPUSchedulerPolicy(p *Preferences, value string) error {
	for _, item := range SplitList(value) {
		switch item {
		case string(CardBinpack), string(CardSpread):
			p.Policy = CardPolicy(item)
		case "mutex":
			p.Exclusive = true
		case "numa", "topology-aware":
		default:
			return fmt.Errorf("annotation %s=%q: %q is not one of binpack, spread, numa, mutex, topology-aware", CardPolicyAnnotation, value, item)
		}
	}
	return nil
}

// KeepModel keeps the cards whose model contains word, case-insensitively:
// HAMi offers a vendor only such cards. It filters cards in place.
func KeepModel(cards []Card, word string) []Card {
	upper := strings.ToUpper(word)
	kept := cards[:0]
	for _, c := range cards {
		if strings.Contains(strings.ToUpper(c.Model), upper) {
			kept = append(kept, c)
		}
	}
	return kept
}

// CountAllocatable reports whether the node advertises a positive
// allocatable quantity of the named resource: the device plugin is serving.
func CountAllocatable(node *corev1.Node, name corev1.ResourceName) bool {
	q, ok := node.Status.Allocatable[name]
	return ok && q.Sign() > 0
}

// WholeCapacity reads the node's capacity of the named resource, a whole
// non-negative number; ok is false when the node has none.
func WholeCapacity(node *corev1.Node, name corev1.ResourceName) (n int64, ok bool, err error) {
	q, ok := node.Status.Capacity[name]
	if !ok {
		return 0, false, nil
	}
	n, exact := q.AsInt64()
	if !exact || n < 0 {
		return 0, false, fmt.Errorf("capacity %s %s is not a whole number >= 0", name, q.String())
	}
	return n, true, nil
}

// CapacityChanged reports whether the named capacity differs.
func CapacityChanged(old, updated *corev1.Node, name corev1.ResourceName) bool {
	oq, oldOK := old.Status.Capacity[name]
	nq, newOK := updated.Status.Capacity[name]
	return oldOK != newOK || oq.Cmp(nq) != 0
}

// AllocatableChanged reports whether the named allocatable differs.
func AllocatableChanged(old, updated *corev1.Node, name corev1.ResourceName) bool {
	oq, oldOK := old.Status.Allocatable[name]
	nq, newOK := updated.Status.Allocatable[name]
	return oldOK != newOK || oq.Cmp(nq) != 0
}

// ParseContainers reads every container's request with parse, init
// containers first (the order of assignments). asked is false, and req
// empty, when no container asks for a card; otherwise req.Inits is set.
func ParseContainers(pod *corev1.Pod, parse func(*corev1.Container) (Request, error)) (req PodRequest, asked bool, err error) {
	for _, c := range Containers(pod) {
		r, err := parse(c)
		if err != nil {
			return PodRequest{}, false, fmt.Errorf("container %s: %w", c.Name, err)
		}
		asked = asked || !r.IsZero()
		req.Containers = append(req.Containers, r)
	}
	if !asked {
		return PodRequest{}, false, nil
	}
	req.Inits = len(pod.Spec.InitContainers)
	return req, true, nil
}

// CountOnlyRequest reads a container that asks for cards by count alone
// (resource name): each card is asked as its whole memory and 0 cores, as
// HAMi's requests for such vendors do (they only order the cards).
func CountOnlyRequest(name corev1.ResourceName) func(*corev1.Container) (Request, error) {
	return func(c *corev1.Container) (Request, error) {
		n, _, err := ContainerQuantity(c, name)
		if err != nil || n <= 0 {
			return Request{}, err
		}
		return Request{Count: n, MemoryPercent: 100}, nil
	}
}

// WholeCardRequest reads a container that asks for whole cards by count
// (resource name): each card is asked with all its memory and all its
// cores, so it fits only an unused card.
func WholeCardRequest(name corev1.ResourceName) func(*corev1.Container) (Request, error) {
	return func(c *corev1.Container) (Request, error) {
		n, _, err := ContainerQuantity(c, name)
		if err != nil || n <= 0 {
			return Request{}, err
		}
		return Request{Count: n, MemoryPercent: 100, Cores: 100}, nil
	}
}

// UUIDPreferences are the card preferences a pod gives by uuid (use and
// avoid annotation keys) and by the card policy annotation; vendors whose
// pods also choose a card type or a mode add those.
func UUIDPreferences(annotations map[string]string, use, avoid string) (Preferences, error) {
	p := Preferences{UseUUIDs: SplitList(annotations[use]), AvoidUUIDs: SplitList(annotations[avoid])}
	if err := ApplyGPUSchedulerPolicy(&p, annotations[CardPolicyAnnotation]); err != nil {
		return Preferences{}, err
	}
	return p, nil
}

// RegisterChanged reports whether a node update may change the inventory
// of a vendor registered in annotation register with count resource
// count: the register, the cordon list or the allocatable count changed.
func RegisterChanged(old, updated *corev1.Node, register string, count corev1.ResourceName) bool {
	return old.Annotations[register] != updated.Annotations[register] ||
		old.Annotations[DeviceCordon] != updated.Annotations[DeviceCordon] ||
		AllocatableChanged(old, updated, count)
}
