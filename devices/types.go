package devices

// Card is one physical device on a node, as its device plugin registered it.
type Card struct {
	// UUID identifies the card, e.g. GPU-c53c0221-f097-5b48-427f-1a4f0f0ab91d.
	UUID string
	// Index is the vendor's device index (NVML index for NVIDIA).
	Index int
	// Split is how many containers may share the card at once.
	Split int32
	// MemoryMiB is the card's memory as registered (already scaled).
	MemoryMiB int32
	// Cores is the card's core capacity; 100 is one whole card.
	Cores int32
	// Model is the registered type, e.g. "NVIDIA-Tesla T4".
	Model string
	// NUMA is the NUMA node the card is attached to.
	NUMA int
	// Mode is the sharing mode: hami-core, mig or mps.
	Mode string
	// Healthy is false when the device plugin reported the card unhealthy.
	Healthy bool
	// Cordoned cards take no new work (hami.io/device-cordon).
	Cordoned bool
}

// Usage is what the containers placed on one card consume of it.
type Usage struct {
	// Sharers is the number of containers using the card.
	Sharers int32
	// MemoryMiB is the memory granted to them.
	MemoryMiB int32
	// Cores is the core share granted to them.
	Cores int32
}

// Add accounts one more grant on the card.
func (u *Usage) Add(g Grant) {
	u.Sharers++
	u.MemoryMiB += g.MemoryMiB
	u.Cores += g.Cores
}

// Sub removes one grant from the card, never going below zero.
func (u *Usage) Sub(g Grant) {
	u.Sharers = max(u.Sharers-1, 0)
	u.MemoryMiB = max(u.MemoryMiB-g.MemoryMiB, 0)
	u.Cores = max(u.Cores-g.Cores, 0)
}

// Request is what one container asks of one vendor's cards.
// A zero Count means the container asks for nothing.
type Request struct {
	// Count is the number of cards.
	Count int32
	// MemoryMiB is the memory per card; 0 means MemoryPercent applies.
	MemoryMiB int32
	// MemoryPercent is the share of each card's memory (1-100), used when
	// MemoryMiB is 0.
	MemoryPercent int32
	// Cores is the share of each card's cores in percent; 100 is exclusive.
	Cores int32
}

// IsZero reports whether the container asks for no card.
func (r Request) IsZero() bool { return r.Count == 0 }

// MemoryOn resolves the memory the request needs on a given card.
func (r Request) MemoryOn(c *Card) int32 {
	if r.MemoryMiB > 0 {
		return r.MemoryMiB
	}
	return int32(int64(c.MemoryMiB) * int64(r.MemoryPercent) / 100)
}

// Grant is one card given to one container.
type Grant struct {
	UUID string
	// Vendor is the vendor word written in the assignment (e.g. NVIDIA).
	Vendor    string
	MemoryMiB int32
	Cores     int32
}

// Assignment is the cards given to each container of a pod, init
// containers first, then regular containers. A container without a card has
// an empty entry, so the index of an entry is the index of its container.
type Assignment [][]Grant

// Empty reports whether no container got a card.
func (a Assignment) Empty() bool {
	for _, c := range a {
		if len(c) > 0 {
			return false
		}
	}
	return true
}

// ApplyGrants adds every grant of a to the usage of the card it names, or
// removes it when add is false. cards and used are index-aligned; grants
// naming a card not in cards are ignored.
func ApplyGrants(cards []Card, used []Usage, a Assignment, add bool) {
	for _, container := range a {
		for _, g := range container {
			for i := range cards {
				if cards[i].UUID != g.UUID {
					continue
				}
				if add {
					used[i].Add(g)
				} else {
					used[i].Sub(g)
				}
			}
		}
	}
}

// Grants calls fn for every grant of every container.
func (a Assignment) Grants(fn func(Grant)) {
	for _, c := range a {
		for _, g := range c {
			fn(g)
		}
	}
}

// Preferences are the pod-level annotations that steer card choice.
type Preferences struct {
	// UseModels and AvoidModels are upper-cased substrings of card models.
	UseModels, AvoidModels []string
	// UseUUIDs and AvoidUUIDs are exact card UUIDs.
	UseUUIDs, AvoidUUIDs []string
	// NUMABind asks for all cards of a container on one NUMA node.
	NUMABind bool
	// Mode restricts cards to a sharing mode (hami-core, mig, mps); empty: any.
	Mode string
	// Policy orders the cards tried: binpack or spread.
	Policy CardPolicy
	// Exclusive asks for cards no other container uses (policy "mutex").
	Exclusive bool
}

// PodRequest is what a pod asks of one vendor: one Request per container,
// init containers first, plus the pod's card preferences.
type PodRequest struct {
	Containers  []Request
	Preferences Preferences
}

// IsZero reports whether no container asks for a card of this vendor.
func (p PodRequest) IsZero() bool {
	for _, r := range p.Containers {
		if !r.IsZero() {
			return false
		}
	}
	return true
}

// CardPolicy orders a node's cards when several could take a container.
type CardPolicy string

const (
	// CardSpread prefers the least used cards.
	CardSpread CardPolicy = "spread"
	// CardBinpack prefers the most used cards.
	CardBinpack CardPolicy = "binpack"
)

// NodePolicy orders nodes.
type NodePolicy string

const (
	// NodeBinpack prefers the most used nodes.
	NodeBinpack NodePolicy = "binpack"
	// NodeSpread prefers the least used nodes.
	NodeSpread NodePolicy = "spread"
)
