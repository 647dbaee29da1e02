package cache

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// SetNode decodes the node's inventory for every vendor and recomputes its
// usage from the pods known to be on it. A vendor whose annotation cannot
// be decoded gets an error that Snapshot returns; other vendors and nodes
// are unaffected.
func (c *Cache) SetNode(node *corev1.Node) {
	vendors := c.registry.Vendors()
	n := &nodeState{vendors: make([]vendorState, len(vendors))}
	for i, v := range vendors {
		cards, err := v.Inventory(node)
		n.vendors[i] = vendorState{cards: cards, used: make([]devices.Usage, len(cards)), err: err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[node.Name] = n
	for uid := range c.podsByNode[node.Name] {
		n.apply(c.pods[uid], true)
	}
}

// NodeChanged reports whether an update of the node may change any vendor's
// inventory, so that SetNode is worth calling.
func (c *Cache) NodeChanged(old, updated *corev1.Node) bool {
	for _, v := range c.registry.Vendors() {
		if v.InventoryChanged(old, updated) {
			return true
		}
	}
	return false
}

// RemoveNode forgets a node's inventory. Pods on it stay accounted until
// they are deleted, so a node that comes back gets its usage again.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
}
