package cache

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// The read-only views below copy what a metrics scrape needs under the
// read lock and return; callers may keep the results. Card slices are
// never modified once set (vendorState.cards), so they are shared, not
// copied; usage and per-namespace totals are copied.

// NodeCards is one vendor's cards on one node and their usage.
type NodeCards struct {
	Node   string
	Vendor int
	Cards  []devices.Card
	Used   []devices.Usage
}

// AllCards returns the cards of every node and vendor whose inventory could
// be read, with their usage (a copy).
func (c *Cache) AllCards() []NodeCards {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []NodeCards
	for name, n := range c.nodes {
		for vi := range n.vendors {
			v := &n.vendors[vi]
			if v.err != nil || len(v.cards) == 0 {
				continue
			}
			out = append(out, NodeCards{Node: name, Vendor: vi, Cards: v.cards, Used: append([]devices.Usage(nil), v.used...)})
		}
	}
	return out
}

// PodHolding is what one pod holds, with its identity.
type PodHolding struct {
	UID       types.UID
	Namespace string
	Name      string
	Holding
}

// AllHoldings returns what every pod with a readable assignment holds,
// assumed ones included. The assignments are shared and must not be
// modified.
func (c *Cache) AllHoldings() []PodHolding {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]PodHolding, 0, len(c.pods))
	for uid, p := range c.pods {
		if p.unreadable != "" {
			continue
		}
		name := p.key
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		out = append(out, PodHolding{UID: uid, Namespace: p.namespace, Name: name, Holding: p.holding()})
	}
	return out
}

// NamespaceUses returns, per namespace that ever held a card, what its
// pods hold per vendor (index-aligned with the registry's vendors).
func (c *Cache) NamespaceUses() map[string][]DeviceUse {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string][]DeviceUse, len(c.namespaces))
	for ns, use := range c.namespaces {
		out[ns] = append([]DeviceUse(nil), use...)
	}
	return out
}

// CardUse is what an assignment holds on one card.
type CardUse struct {
	UUID      string
	MemoryMiB int64
	Cores     int64
}

// AssignmentCardUse is what an assignment holds per card, in the order the
// cards first appear, with HAMi's accounting of init containers (as
// AssignmentUse, card by card).
func AssignmentCardUse(a devices.Assignment, inits int) []CardUse {
	var cards []devices.Card
	a.Grants(func(g devices.Grant) {
		for _, c := range cards {
			if c.UUID == g.UUID {
				return
			}
		}
		cards = append(cards, devices.Card{UUID: g.UUID})
	})
	if len(cards) == 0 {
		return nil
	}
	used := make([]devices.Usage, len(cards))
	devices.ApplyGrants(cards, used, a, inits, true)
	out := make([]CardUse, len(cards))
	for i, c := range cards {
		out[i] = CardUse{UUID: c.UUID, MemoryMiB: used[i].MemoryMiB, Cores: used[i].Cores}
	}
	return out
}

// NodeLoad is one node's HAMi node score before any new pod: how used its
// cards are (devices.NodeTally over every vendor's usable cards).
type NodeLoad struct {
	Node  string
	Score float32
}

// NodeLoads appends to dst the load of every node that has usable cards of
// a vendor asks reports true for. It copies nothing but the scores, which
// it keeps per node until the node's usage changes, for a cheap pass over
// every node.
func (c *Cache) NodeLoads(asks func(vi int) bool, dst []NodeLoad) []NodeLoad {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, n := range c.nodes {
		if len(c.blocked[name]) > 0 {
			continue
		}
		wanted := false
		for vi := range n.vendors {
			v := &n.vendors[vi]
			if v.err == nil && len(v.cards) > 0 && asks(vi) {
				wanted = true
				break
			}
		}
		if !wanted {
			continue
		}
		if !n.loaded {
			var tally devices.NodeTally
			for vi := range n.vendors {
				if v := &n.vendors[vi]; v.err == nil {
					tally.Add(v.cards, v.used)
				}
			}
			n.load, n.loaded = tally.Score(), true
		}
		dst = append(dst, NodeLoad{Node: name, Score: n.load})
	}
	return dst
}

// VisitCards calls fn with each node's name, vendor vi's cards there and
// their usage, for every node whose inventory can be read and whose cards
// may take work (no pod holds an unreadable assignment there), under the
// read lock: fn must not keep or modify what it is given, nor call the
// cache.
func (c *Cache) VisitCards(vi int, fn func(node string, cards []devices.Card, used []devices.Usage)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for name, n := range c.nodes {
		if vi >= len(n.vendors) || len(c.blocked[name]) > 0 {
			continue
		}
		v := &n.vendors[vi]
		if v.err != nil || len(v.cards) == 0 {
			continue
		}
		fn(name, v.cards, v.used)
	}
}
