// Package cache is the scheduler's in-memory view of every node's cards and
// what the pods placed on them use. Informers feed it (nodes: inventory;
// pods: the assignment annotations written at bind), the plugin assumes a
// pod's assignment at Reserve and forgets it at Unreserve, and a restarted
// scheduler rebuilds the same usage from the pods' annotations.
package cache

import (
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Cache is safe for concurrent use.
type Cache struct {
	registry *devices.Registry

	mu    sync.RWMutex
	nodes map[string]*nodeState
	pods  map[types.UID]*podState
	// podsByNode indexes pods by node, whether or not the node is known yet.
	podsByNode map[string]map[types.UID]struct{}
	// namespaces totals, per namespace and vendor, what its pods hold.
	namespaces map[string][]DeviceUse
	// blocked lists, per node, the pods with an unreadable assignment there.
	blocked map[string]map[types.UID]string
}

// nodeState is one node's inventory and usage, per vendor (index-aligned
// with the registry's vendors).
type nodeState struct {
	vendors []vendorState
	// resourceVersion is the node object's, 0 when it is not a number.
	resourceVersion uint64
	// load is the node's score for NodeLoads, valid while loaded (apply
	// clears it).
	load   float32
	loaded bool
}

// vendorState is one vendor's cards on a node. cards is never modified once
// set (a new inventory replaces the slice), so readers may keep it.
type vendorState struct {
	cards []devices.Card
	used  []devices.Usage
	// err says why the node's cards of this vendor cannot be used.
	err error
}

// podState is what one pod holds.
type podState struct {
	key       string
	namespace string
	node      string
	// assignments is index-aligned with the registry's vendors.
	assignments []devices.Assignment
	// slices holds, per vendor, the MIG slices the pod reserves (nil for
	// none): every container's, for as long as the pod is counted.
	slices [][]devices.SliceReservation
	// inits is how many leading entries of each assignment are init
	// containers (0 once they have all succeeded: the assignments then hold
	// the regular containers alone).
	inits int
	// assumed is true from Reserve until an informer event confirms it.
	assumed bool
	// unreadable says why the pod's assignment cannot be decoded; such a
	// pod blocks its node's cards.
	unreadable string
}

// New returns an empty cache for the registry's vendors.
func New(registry *devices.Registry) *Cache {
	return &Cache{
		registry:   registry,
		nodes:      map[string]*nodeState{},
		pods:       map[types.UID]*podState{},
		podsByNode: map[string]map[types.UID]struct{}{},
		namespaces: map[string][]DeviceUse{},
		blocked:    map[string]map[types.UID]string{},
	}
}

// ErrUnknownNode is returned for nodes the cache has not seen.
var ErrUnknownNode = fmt.Errorf("node not in the device cache yet")

// Snapshot copies the usage of one vendor's cards on a node into dst
// (grown when too small) and returns the cards, the usage and why the
// node's cards cannot be used, if they cannot. cards is nil when the node
// has none of the vendor's cards.
func (c *Cache) Snapshot(node string, vendor int, dst []devices.Usage) ([]devices.Card, []devices.Usage, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[node]
	if !ok {
		return nil, dst[:0], ErrUnknownNode
	}
	v := &n.vendors[vendor]
	if v.err != nil {
		return nil, dst[:0], v.err
	}
	for _, why := range c.blocked[node] {
		return nil, dst[:0], errors.New(why)
	}
	dst = append(dst[:0], v.used...)
	return v.cards, dst, nil
}

// Holding is what one pod holds on its node: its assignment per vendor
// (index-aligned with the registry's vendors) and how many of each
// assignment's entries are init containers, which HAMi accounts apart
// (a card's use is the larger of the biggest init grant and the sum of the
// regular grants).
type Holding struct {
	// Key is the pod's namespace/name.
	Key         string
	Node        string
	Assignments []devices.Assignment
	Inits       int
	// Assumed is set from Reserve until the API confirms the assignment.
	Assumed bool
	// Slices holds the pod's MIG reservations per vendor (nil for none).
	Slices [][]devices.SliceReservation
}

// Apply adds the pod's use of vendor vi's cards to used, or removes it.
func (h Holding) Apply(cards []devices.Card, used []devices.Usage, vi int, add bool) {
	if vi < len(h.Assignments) {
		devices.ApplyGrants(cards, used, h.Assignments[vi], h.Inits, add)
		var res []devices.SliceReservation
		if vi < len(h.Slices) {
			res = h.Slices[vi]
		}
		devices.ApplyReservations(cards, used, h.Assignments[vi], res, add)
	}
}

// HoldingsOn returns what each pod on the node holds (a copy).
func (c *Cache) HoldingsOn(node string) map[types.UID]Holding {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[types.UID]Holding, len(c.podsByNode[node]))
	for uid := range c.podsByNode[node] {
		if p := c.pods[uid]; p.unreadable == "" {
			out[uid] = p.holding()
		}
	}
	return out
}

// Holding returns what the pod holds, and where.
func (c *Cache) Holding(uid types.UID) (Holding, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.pods[uid]
	if !ok {
		return Holding{}, false
	}
	return p.holding(), true
}

// Assume accounts an assignment the scheduler has just chosen, before the
// API server knows of it.
func (c *Cache) Assume(pod *corev1.Pod, node string, assignments []devices.Assignment) error {
	if len(assignments) != len(c.registry.Vendors()) {
		return fmt.Errorf("assume %s: %d assignments for %d vendors", klog.KObj(pod), len(assignments), len(c.registry.Vendors()))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pods[pod.UID]; ok {
		if !old.assumed {
			return fmt.Errorf("assume %s: the pod already holds cards on node %s", klog.KObj(pod), old.node)
		}
		c.removePodLocked(pod.UID)
	}
	c.addPodLocked(pod.UID, &podState{key: klog.KObj(pod).String(), namespace: pod.Namespace, node: node, assignments: assignments, slices: assignedSlices(assignments), inits: len(pod.Spec.InitContainers), assumed: true})
	return nil
}

// Forget drops an assumed assignment (Unreserve) and reports whether there
// was one. A confirmed one stays: only the informer releases it.
func (c *Cache) Forget(pod *corev1.Pod) bool { return c.ForgetUID(pod.UID) }

// ForgetUID is Forget for the pod with uid.
func (c *Cache) ForgetUID(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pods[uid]; ok && p.assumed {
		c.removePodLocked(uid)
		return true
	}
	return false
}

func (c *Cache) addPodLocked(uid types.UID, p *podState) {
	c.pods[uid] = p
	if p.unreadable != "" {
		if c.blocked[p.node] == nil {
			c.blocked[p.node] = map[types.UID]string{}
		}
		c.blocked[p.node][uid] = p.unreadable
	}
	c.chargeNamespaceLocked(p, true)
	byNode := c.podsByNode[p.node]
	if byNode == nil {
		byNode = map[types.UID]struct{}{}
		c.podsByNode[p.node] = byNode
	}
	byNode[uid] = struct{}{}
	if n, ok := c.nodes[p.node]; ok {
		n.apply(p, true)
	}
}

func (c *Cache) removePodLocked(uid types.UID) {
	p, ok := c.pods[uid]
	if !ok {
		return
	}
	delete(c.pods, uid)
	c.chargeNamespaceLocked(p, false)
	if p.unreadable != "" {
		delete(c.blocked[p.node], uid)
		if len(c.blocked[p.node]) == 0 {
			delete(c.blocked, p.node)
		}
	}
	if byNode := c.podsByNode[p.node]; byNode != nil {
		delete(byNode, uid)
		if len(byNode) == 0 {
			delete(c.podsByNode, p.node)
		}
	}
	if n, ok := c.nodes[p.node]; ok {
		n.apply(p, false)
	}
}

// apply adds (or removes) a pod's grants to the usage of the cards it names.
// Grants naming cards the node does not list are ignored.
func (n *nodeState) apply(p *podState, add bool) {
	n.loaded = false
	for vi, a := range p.assignments {
		if vi >= len(n.vendors) {
			break
		}
		v := &n.vendors[vi]
		devices.ApplyGrants(v.cards, v.used, a, p.inits, add)
		var res []devices.SliceReservation
		if vi < len(p.slices) {
			res = p.slices[vi]
		}
		devices.ApplyReservations(v.cards, v.used, a, res, add)
	}
}

// assignedSlices lists, per vendor, the MIG slices the assignments' grants
// carry; nil when none has any.
func assignedSlices(assignments []devices.Assignment) [][]devices.SliceReservation {
	var out [][]devices.SliceReservation
	for vi, a := range assignments {
		if res := devices.Reservations(a); res != nil {
			if out == nil {
				out = make([][]devices.SliceReservation, len(assignments))
			}
			out[vi] = res
		}
	}
	return out
}

// Stats summarises the cache, for logs and tests.
type Stats struct {
	Nodes, Cards, Pods, AssumedPods int
	// UnreadablePods are pods whose assignment cannot be decoded (they
	// hold their node's cards).
	UnreadablePods int
}

// Stats returns counts of what the cache holds.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := Stats{Nodes: len(c.nodes), Pods: len(c.pods)}
	for _, n := range c.nodes {
		for _, v := range n.vendors {
			s.Cards += len(v.cards)
		}
	}
	for _, p := range c.pods {
		if p.assumed {
			s.AssumedPods++
		}
		if p.unreadable != "" {
			s.UnreadablePods++
		}
	}
	return s
}

func (p *podState) holding() Holding {
	return Holding{Key: p.key, Node: p.node, Assignments: p.assignments, Inits: p.inits, Assumed: p.assumed, Slices: p.slices}
}
