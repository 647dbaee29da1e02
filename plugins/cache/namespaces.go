package cache

import (
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// DeviceUse is the memory (MiB) and cores a namespace's pods hold of one
// vendor's cards, as HAMi's quota counts them.
type DeviceUse struct {
	MemoryMiB int64
	Cores     int64
}

// NamespaceUse returns what the pods of namespace (assumed ones included)
// hold of vendor vi's cards.
func (c *Cache) NamespaceUse(namespace string, vi int) DeviceUse {
	c.mu.RLock()
	defer c.mu.RUnlock()
	use := c.namespaces[namespace]
	if vi >= len(use) {
		return DeviceUse{}
	}
	return use[vi]
}

// AssignmentUse is what an assignment holds in all, with HAMi's accounting
// of init containers (per card, the larger of the biggest init grant and
// the sum of the regular grants).
func AssignmentUse(a devices.Assignment, inits int) DeviceUse {
	var cardBuf [8]devices.Card
	cards := cardBuf[:0]
	a.Grants(func(g devices.Grant) {
		for _, c := range cards {
			if c.UUID == g.UUID {
				return
			}
		}
		cards = append(cards, devices.Card{UUID: g.UUID})
	})
	var usedBuf [8]devices.Usage
	used := usedBuf[:0]
	for range cards {
		used = append(used, devices.Usage{})
	}
	devices.ApplyGrants(cards, used, a, inits, true)
	var total DeviceUse
	for _, u := range used {
		total.MemoryMiB += u.MemoryMiB
		total.Cores += u.Cores
	}
	return total
}

// chargeNamespace adds (or removes) a pod's use to its namespace's totals.
func (c *Cache) chargeNamespaceLocked(p *podState, add bool) {
	if p.namespace == "" {
		return
	}
	use := c.namespaces[p.namespace]
	if use == nil {
		use = make([]DeviceUse, len(c.registry.Vendors()))
		c.namespaces[p.namespace] = use
	}
	for vi, a := range p.assignments {
		if vi >= len(use) {
			break
		}
		d := AssignmentUse(a, p.inits)
		if add {
			use[vi].MemoryMiB += d.MemoryMiB
			use[vi].Cores += d.Cores
		} else {
			use[vi].MemoryMiB -= d.MemoryMiB
			use[vi].Cores -= d.Cores
		}
	}
}
