package simnode

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// draDriver is the DRA driver running on a simulated node: its kubelet
// plugin, registered with the node's kubelet, publishing the node's
// devices (publisher) and preparing the claims the kubelet passes it, with
// a client of its own (5 QPS, burst 10 in the faithful mode: the kube-api
// flags' defaults of every modelled driver).
type draDriver struct {
	model *draModel
	node  string
	// allocatable are the devices it found on the node and publishes.
	allocatable map[string]resourceapi.Device
	client      kubernetes.Interface
	publisher   *publisher

	mu sync.Mutex
	// prepared is the driver's checkpoint: the claims it prepared.
	prepared map[types.UID][]PreparedDevice
}

// startDRADriver starts the spec's driver on the node: it publishes the
// node's slices.
func startDRADriver(ctx context.Context, client kubernetes.Interface, node *corev1.Node, s Spec) (*draDriver, error) {
	m := draModelOf(s)
	if m == nil {
		return nil, fmt.Errorf("node %s: no DRA driver in %q", node.Name, s.String())
	}
	d := &draDriver{model: m, node: node.Name, client: client, allocatable: map[string]resourceapi.Device{}, prepared: map[types.UID][]PreparedDevice{}}
	for _, dev := range m.devices(node.Name, s) {
		d.allocatable[dev.Name] = dev
	}
	p, err := startPublisher(ctx, client, node, s)
	if err != nil {
		return nil, err
	}
	d.publisher = p
	return d, nil
}

// claimRef is what the kubelet passes NodePrepareResources for a claim.
type claimRef struct {
	namespace, name string
	uid             types.UID
}

// nodePrepareResources is the kubelet plugin helper's NodePrepareResources
// (k8s.io/dynamic-resource-allocation kubeletplugin, 1.37): it reads every
// claim from the API with the driver's client ("get resource claims:
// retrieve claim ...", "not allocated", "got replaced" fail the whole
// call), then the driver prepares each. The outcome per claim UID is its
// devices or its error.
func (d *draDriver) nodePrepareResources(ctx context.Context, refs []claimRef) (map[types.UID][]PreparedDevice, map[types.UID]error, error) {
	claims := make([]*resourceapi.ResourceClaim, 0, len(refs))
	for _, ref := range refs {
		claim, err := d.client.ResourceV1().ResourceClaims(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("get resource claims: retrieve claim %s/%s: %w", ref.namespace, ref.name, err)
		case claim.Status.Allocation == nil:
			return nil, nil, fmt.Errorf("get resource claims: claim %s/%s not allocated", ref.namespace, ref.name)
		case claim.UID != ref.uid:
			return nil, nil, fmt.Errorf("get resource claims: claim %s/%s got replaced", ref.namespace, ref.name)
		}
		claims = append(claims, claim)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	devices, failures := map[types.UID][]PreparedDevice{}, map[types.UID]error{}
	for _, claim := range claims {
		if done, ok := d.prepared[claim.UID]; ok {
			// The driver's checkpoint has it: HAMi's driver refuses a
			// second prepare, the others return what they prepared.
			if d.model == hamiDRAModel {
				failures[claim.UID] = fmt.Errorf("error preparing devices for claim %s/%s:%s: claims in PrepareCompleted state are not supported when HAMiCoreSupport enabled",
					claim.Namespace, claim.Name, claim.UID)
				continue
			}
			devices[claim.UID] = done
			continue
		}
		prepared, err := d.model.prepare(claim, d.allocatable)
		if err != nil {
			failures[claim.UID] = err
			continue
		}
		if err := d.checkAllocation(claim); err != nil {
			failures[claim.UID] = err
			continue
		}
		d.prepared[claim.UID] = prepared
		devices[claim.UID] = prepared
	}
	return devices, failures, nil
}

// nodeUnprepareResources forgets the claim (the driver's Unprepare: its
// checkpoint entry goes; no API call).
func (d *draDriver) nodeUnprepareResources(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.prepared, uid)
}

// ViolationError is a simulated node's refusal of an allocation no real
// driver checks: a device of another node's pool or one the driver does
// not publish, a consumed capacity beyond the device's, or more consumed
// on a device, across the claims prepared on it, than it has. The real
// driver would prepare it (hami-core would enforce limits the card cannot
// hold); here the claim fails and Stats.DRAViolations counts it.
type ViolationError struct{ msg string }

func (e *ViolationError) Error() string { return "simulated node check: " + e.msg }

// checkAllocation is the simulation's own check of the driver's results
// of a claim (called with d.mu held), before anything is recorded.
func (d *draDriver) checkAllocation(claim *resourceapi.ResourceClaim) error {
	violation := func(format string, args ...any) error {
		return &ViolationError{msg: fmt.Sprintf("claim %s/%s: ", claim.Namespace, claim.Name) + fmt.Sprintf(format, args...)}
	}
	used := d.consumedByOthers(claim.UID)
	for _, r := range driverResults(claim, d.model.driver) {
		dev, ok := d.allocatable[r.Device]
		switch {
		case r.Pool != d.node:
			return violation("device %s of pool %s allocated on node %s (its pool is %s)", r.Device, r.Pool, d.node, d.node)
		case !ok:
			return violation("device %s is not one node %s publishes", r.Device, d.node)
		case (dev.AllowMultipleAllocations == nil || !*dev.AllowMultipleAllocations) && used[r.Device] != nil:
			return violation("device %s is not shareable and another prepared claim holds it", r.Device)
		}
		for _, name := range slices.Sorted(maps.Keys(r.ConsumedCapacity)) {
			q := r.ConsumedCapacity[name]
			c, ok := dev.Capacity[name]
			if !ok {
				return violation("device %s has no capacity %s (consumed %s)", r.Device, name, q.String())
			}
			if q.Sign() < 0 || q.Cmp(c.Value) > 0 {
				return violation("device %s: consumed %s %s, beyond its capacity %s", r.Device, name, q.String(), c.Value.String())
			}
			total := q.DeepCopy()
			if prev, ok := used[r.Device][name]; ok {
				total.Add(prev)
			}
			if total.Cmp(c.Value) > 0 {
				return violation("device %s over-committed: %s %s consumed by the claims prepared on it with this one, capacity %s", r.Device, name, total.String(), c.Value.String())
			}
			if used[r.Device] == nil {
				used[r.Device] = map[resourceapi.QualifiedName]resource.Quantity{}
			}
			used[r.Device][name] = total
		}
	}
	return nil
}

// consumedByOthers sums, per device and capacity, what the claims the
// driver prepared (other than uid) consume; a device held with no
// capacity consumed still appears.
func (d *draDriver) consumedByOthers(uid types.UID) map[string]map[resourceapi.QualifiedName]resource.Quantity {
	used := map[string]map[resourceapi.QualifiedName]resource.Quantity{}
	for other, prepared := range d.prepared {
		if other == uid {
			continue
		}
		for _, p := range prepared {
			if used[p.Device] == nil {
				used[p.Device] = map[resourceapi.QualifiedName]resource.Quantity{}
			}
			for name, q := range p.consumed {
				sum := used[p.Device][name]
				sum.Add(q)
				used[p.Device][name] = sum
			}
		}
	}
	return used
}
