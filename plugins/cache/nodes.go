package cache

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// SetNode decodes the node's inventory for every vendor and recomputes its
// usage from the pods known to be on it. A vendor whose annotation cannot
// be decoded gets an error that Snapshot returns; other vendors and nodes
// are unaffected. An object older (by resourceVersion) than the one the
// cache holds is ignored, so a late event never replaces a newer
// inventory; SetNode reports whether it applied the node.
func (c *Cache) SetNode(node *corev1.Node) bool {
	vendors := c.registry.Vendors()
	n := &nodeState{vendors: make([]vendorState, len(vendors)), resourceVersion: parseResourceVersion(node.ResourceVersion)}
	for i, v := range vendors {
		cards, err := v.Inventory(node)
		n.vendors[i] = vendorState{cards: cards, used: make([]devices.Usage, len(cards)), err: err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.nodes[node.Name]; ok && old.newerThan(n) {
		return false
	}
	c.nodes[node.Name] = n
	for uid := range c.podsByNode[node.Name] {
		n.apply(c.pods[uid], true)
	}
	return true
}

// parseResourceVersion reads the API server's resourceVersion as a number;
// 0 (unknown) for anything else, which never counts as older.
func parseResourceVersion(rv string) uint64 {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// newerThan reports whether n was read from a later object than other.
func (n *nodeState) newerThan(other *nodeState) bool {
	return n.resourceVersion != 0 && other.resourceVersion != 0 && n.resourceVersion > other.resourceVersion
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

// InventoryErr returns why vendor vi's inventory annotation on the node
// could not be decoded; nil when it could, or the node is unknown.
func (c *Cache) InventoryErr(node string, vi int) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[node]
	if !ok || vi >= len(n.vendors) {
		return nil
	}
	return n.vendors[vi].err
}
