//go:build !k8s1.33 && !k8s1.30

// Package dranodes is the HAMi plugin's side of DRA nodes: nodes whose
// cards a DRA driver publishes as shareable devices (ResourceSlices)
// instead of HAMi's device plugin registering them in node annotations.
// It keeps the cards of every node from the ResourceSlice informer, reads
// what every allocated claim takes of them from kube-scheduler's shared
// DRA manager (the one account kube-scheduler's own DynamicResources
// keeps, allocations in flight included), and writes the ResourceClaim
// that gives a pod its shares.
package dranodes

import (
	"fmt"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices/dra"
)

// Inventory is every node's DRA cards, from the ResourceSlice informer.
// Safe for concurrent use.
type Inventory struct {
	// split is the number of containers that may share one card of the
	// vendor (HAMi's device split count).
	split func(vendor string) int32

	mu sync.RWMutex
	// slices holds each node's slices of known drivers, by slice name.
	slices map[string]map[string]*resourceapi.ResourceSlice
	// nodes caches Inventory of a node's slices until they change.
	nodes map[string]*dra.NodeDevices
}

// NewInventory feeds an inventory from the ResourceSlice informer.
func NewInventory(logger klog.Logger, informer cache.SharedIndexInformer, split func(vendor string) int32) (*Inventory, cache.ResourceEventHandlerRegistration, error) {
	inv := &Inventory{split: split, slices: map[string]map[string]*resourceapi.ResourceSlice{}, nodes: map[string]*dra.NodeDevices{}}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { inv.set(logger, obj) },
		UpdateFunc: func(old, obj any) { inv.remove(old); inv.set(logger, obj) },
		DeleteFunc: func(obj any) { inv.remove(obj) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("watch ResourceSlices: %w", err)
	}
	return inv, reg, nil
}

// nodeSlice returns the slice and its node when the slice is a known
// driver's and local to one node.
func nodeSlice(obj any) (*resourceapi.ResourceSlice, string, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*resourceapi.ResourceSlice)
	if !ok || s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
		return nil, "", false
	}
	if _, known := dra.DriverNamed(s.Spec.Driver); !known {
		return nil, "", false
	}
	return s, *s.Spec.NodeName, true
}

func (inv *Inventory) set(logger klog.Logger, obj any) {
	s, node, ok := nodeSlice(obj)
	if !ok {
		return
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.slices[node] == nil {
		inv.slices[node] = map[string]*resourceapi.ResourceSlice{}
	}
	inv.slices[node][s.Name] = s
	delete(inv.nodes, node)
	logger.V(5).Info("DRA cards changed", "node", node, "slice", klog.KObj(s))
}

func (inv *Inventory) remove(obj any) {
	s, node, ok := nodeSlice(obj)
	if !ok {
		return
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	delete(inv.slices[node], s.Name)
	if len(inv.slices[node]) == 0 {
		delete(inv.slices, node)
	}
	delete(inv.nodes, node)
}

// Node returns the node's DRA cards; nil when it publishes none. The
// result is shared and must not be changed.
func (inv *Inventory) Node(node string) *dra.NodeDevices {
	inv.mu.RLock()
	nd, ok := inv.nodes[node]
	slices := inv.slices[node]
	inv.mu.RUnlock()
	if ok || len(slices) == 0 {
		return nd
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if nd, ok := inv.nodes[node]; ok {
		return nd
	}
	list := make([]*resourceapi.ResourceSlice, 0, len(inv.slices[node]))
	for _, s := range inv.slices[node] {
		list = append(list, s)
	}
	devices := dra.Inventory(list, inv.split)
	inv.nodes[node] = &devices
	return &devices
}

// Nodes returns the names of the nodes that publish DRA slices of known
// drivers.
func (inv *Inventory) Nodes() []string {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	names := make([]string, 0, len(inv.slices))
	for n := range inv.slices {
		names = append(names, n)
	}
	return names
}

// Empty reports whether no node publishes DRA cards of a known driver.
func (inv *Inventory) Empty() bool {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return len(inv.slices) == 0
}

// Published reports whether the node still publishes the device.
func (inv *Inventory) Published(node string, key dra.DeviceKey) bool {
	nd := inv.Node(node)
	if nd == nil {
		return false
	}
	for _, d := range nd.Devices {
		if d.Key == key {
			return true
		}
	}
	return false
}
