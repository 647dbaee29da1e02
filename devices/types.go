package devices

import (
	"slices"
	"strconv"
	"strings"
)

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
	// Group is a vendor-defined group of cards that the vendor's fit keeps
	// together (Ascend: the NPU's NetworkID, ascend.NoNetworkID for none);
	// 0 for vendors without one. The shared walk does not read it.
	Group int
	// Mode is the sharing mode: hami-core, mig or mps.
	Mode string
	// Healthy is false when the device plugin reported the card unhealthy.
	Healthy bool
	// Cordoned cards take no new work (hami.io/device-cordon).
	Cordoned bool
	// Links are the card's topology scores to other cards of the node
	// (hami.io/node-nvidia-score), encoded as "uuid=score" items joined by
	// ",", so that Card stays comparable; empty when the node publishes
	// none. Read them with LinkScores.
	Links string
	// MIG lists the MIG profiles of a card in mig mode (the register's
	// migProfiles), in the order FitPod tries them (see MIGProfile); nil
	// when it registers none. Shared and never modified, so that Card
	// stays comparable.
	MIG *MIGProfiles
}

// LinkScores decodes c.Links into a map from card UUID to score.
func (c *Card) LinkScores() map[string]int {
	if c.Links == "" {
		return nil
	}
	m := make(map[string]int)
	for item := range strings.SplitSeq(c.Links, ",") {
		i := strings.LastIndexByte(item, '=')
		if i < 0 {
			continue
		}
		if n, err := strconv.Atoi(item[i+1:]); err == nil {
			m[item[:i]] = n
		}
	}
	return m
}

// EncodeLinks encodes topology scores for Card.Links, in UUID order.
// UUIDs containing a separator cannot name a card and are left out.
func EncodeLinks(scores map[string]int) string {
	ids := make([]string, 0, len(scores))
	for id := range scores {
		if !strings.ContainsAny(id, ",:;") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(id)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(scores[id]))
	}
	return b.String()
}

// Usage is what the containers placed on one card consume of it. Sums are
// int64 so that many grants on one card cannot overflow; single grants and
// card capacities stay int32 (HAMi's annotation values).
type Usage struct {
	// Sharers is the number of containers using the card.
	Sharers int32
	// Faults counts the pods whose MIG reservations contradict the card
	// (see ApplyReservations); a card with faults takes no new work, as if
	// it were unhealthy.
	Faults int32
	// MemoryMiB is the memory granted to them.
	MemoryMiB int64
	// Cores is the core share granted to them.
	Cores int64
	// Slices counts, per MIG memory slice of a card in mig mode, the
	// reservations that cover it (ApplyReservations); a slice is free when
	// its count is 0.
	Slices [MaxSlices]uint8
	// Online and Offline count the sharers whose grants are of class
	// AppClassOnline and AppClassOffline (MetaX sGPU's app classes): HAMi
	// appends a pod to a card's PodInfos once per grant it holds there, as
	// it counts the card's users. Always 0 for vendors whose grants carry
	// no class.
	Online, Offline int32
}

// Add accounts one more grant on the card.
func (u *Usage) Add(g Grant) {
	u.Sharers++
	u.MemoryMiB += int64(g.MemoryMiB)
	u.Cores += int64(g.Cores)
	switch g.Class {
	case AppClassOnline:
		u.Online++
	case AppClassOffline:
		u.Offline++
	}
}

// Sub removes one grant from the card, never going below zero.
func (u *Usage) Sub(g Grant) {
	u.Sharers = max(u.Sharers-1, 0)
	u.MemoryMiB = max(u.MemoryMiB-int64(g.MemoryMiB), 0)
	u.Cores = max(u.Cores-int64(g.Cores), 0)
	switch g.Class {
	case AppClassOnline:
		u.Online = max(u.Online-1, 0)
	case AppClassOffline:
		u.Offline = max(u.Offline-1, 0)
	}
}

// plus adds another usage; minus removes it, never going below zero.
func (u *Usage) plus(o Usage) {
	u.Sharers += o.Sharers
	u.MemoryMiB += o.MemoryMiB
	u.Cores += o.Cores
	u.Online += o.Online
	u.Offline += o.Offline
}

func (u *Usage) minus(o Usage) {
	u.Sharers = max(u.Sharers-o.Sharers, 0)
	u.MemoryMiB = max(u.MemoryMiB-o.MemoryMiB, 0)
	u.Cores = max(u.Cores-o.Cores, 0)
	u.Online = max(u.Online-o.Online, 0)
	u.Offline = max(u.Offline-o.Offline, 0)
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
	// MIG is the slice of the physical card UUID the container gets when
	// the card is in mig mode (MemoryMiB and Cores are then the profile's);
	// nil otherwise. Never modified once set. The assignment annotation
	// does not carry it (see Reservations).
	MIG *MIGSlice
	// Class is the app class of the pod holding the grant, for vendors
	// whose fit depends on the classes of the pods on a card (MetaX sGPU,
	// see GrantClassifier); counted in Usage.Online and Usage.Offline. The
	// assignment annotation does not carry it: the vendor's Fit sets it on
	// the grants it returns and the usage cache on the grants it decodes.
	Class AppClass
}

// AppClass is a grant's app class (MetaX sGPU's
// metax-tech.com/sgpu-app-class); the zero value is none.
type AppClass uint8

const (
	// AppClassNone is a grant of a pod without app class.
	AppClassNone AppClass = iota
	// AppClassOnline is a grant of an online (latency-sensitive) pod.
	AppClassOnline
	// AppClassOffline is a grant of an offline (batch) pod.
	AppClassOffline
)

// WithClass returns a with every grant's Class set to class, in place (a
// is returned for convenience).
func (a Assignment) WithClass(class AppClass) Assignment {
	for _, c := range a {
		for i := range c {
			c[i].Class = class
		}
	}
	return a
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

// ApplyGrants adds a pod's assignment to the usage of the cards it names,
// or removes it when add is false. cards and used are index-aligned; grants
// naming a card not in cards are ignored. The first inits entries of a are
// init containers, which run one after another before the regular ones
// (HAMi's collapsed accounting): per card, memory and cores count
// max(largest init grant, sum of regular grants) and sharers
// max(1 if an init container uses the card, number of regular grants);
// the app-class counters (Usage.Online, Usage.Offline) follow the sharers.
// inits <= 0 sums every entry. Once every init container has terminated
// with exit code 0, pass a.Regular(inits) and 0 to count the regular
// containers alone. Adding and removing with the same arguments cancel out.
func ApplyGrants(cards []Card, used []Usage, a Assignment, inits int, add bool) {
	inits = max(min(inits, len(a)), 0)
	for i := range cards {
		var regular, peak Usage
		initUses := false
		for ci, container := range a {
			for _, g := range container {
				if g.UUID != cards[i].UUID {
					continue
				}
				if ci < inits {
					initUses = true
					peak.MemoryMiB = max(peak.MemoryMiB, int64(g.MemoryMiB))
					peak.Cores = max(peak.Cores, int64(g.Cores))
					switch g.Class {
					case AppClassOnline:
						peak.Online = 1
					case AppClassOffline:
						peak.Offline = 1
					}
				} else {
					regular.Add(g)
				}
			}
		}
		if !initUses && regular.Sharers == 0 {
			continue
		}
		if initUses {
			regular.Sharers = max(regular.Sharers, 1)
			regular.MemoryMiB = max(regular.MemoryMiB, peak.MemoryMiB)
			regular.Cores = max(regular.Cores, peak.Cores)
			regular.Online = max(regular.Online, peak.Online)
			regular.Offline = max(regular.Offline, peak.Offline)
		}
		if add {
			used[i].plus(regular)
		} else {
			used[i].minus(regular)
		}
	}
}

// Regular returns the entries of the regular containers: a without its
// first inits entries.
func (a Assignment) Regular(inits int) Assignment {
	return a[max(min(inits, len(a)), 0):]
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
	// NUMABind asks for all cards of a container on one NUMA node
	// (nvidia.com/numa-bind: true).
	NUMABind bool
	// Mode restricts cards to a sharing mode (hami-core, mig, mps); empty: any.
	Mode string
	// Policy is the raw hami.io/gpu-scheduler-policy value, or the
	// scheduler's default when the pod has none: a single word or a
	// comma-separated chain (see FitPod). Unknown words behave as spread.
	Policy CardPolicy
	// Exclusive asks for cards no other container uses; FitPod also sets it
	// itself when Policy names mutex.
	Exclusive bool
	// Weights weigh the card score (hami.io/device-scoring-weights); the
	// zero value means HAMi's default 1,1,1.
	Weights ScoringWeights
	// Invalid, when set, says why the pod's annotations make it fit no node
	// (e.g. invalid scoring weights); FitPod then rejects it everywhere.
	Invalid string
}

// WantsUUID reports whether the pod's uuid annotations let it use the card
// with this UUID: named in UseUUIDs when that lists any, and not named in
// AvoidUUIDs.
func (p *Preferences) WantsUUID(id string) bool {
	if len(p.UseUUIDs) > 0 && !slices.Contains(p.UseUUIDs, id) {
		return false
	}
	return !slices.Contains(p.AvoidUUIDs, id)
}

// PodRequest is what a pod asks of one vendor: one Request per container,
// init containers first, plus the pod's card preferences.
type PodRequest struct {
	Containers []Request
	// Inits is how many of the first Containers are init containers.
	Inits       int
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

// CardPolicy orders a node's cards when several could take a container
// (hami.io/gpu-scheduler-policy): one word, or a comma-separated chain.
type CardPolicy string

const (
	// CardSpread prefers the least used cards.
	CardSpread CardPolicy = "spread"
	// CardBinpack prefers the most used cards.
	CardBinpack CardPolicy = "binpack"
	// CardMutex, anywhere in a chain, takes only cards nobody uses; alone it
	// also tries the cards with the fewest users first.
	CardMutex CardPolicy = "mutex"
	// CardNUMA, in a chain, orders cards by NUMA node (a sort key, not a
	// constraint).
	CardNUMA CardPolicy = "numa"
	// CardTopologyAware, anywhere in a chain, picks cards by the node's
	// hami.io/node-nvidia-score link scores.
	CardTopologyAware CardPolicy = "topology-aware"
)

// NodePolicy orders nodes.
type NodePolicy string

const (
	// NodeBinpack prefers the most used nodes.
	NodeBinpack NodePolicy = "binpack"
	// NodeSpread prefers the least used nodes.
	NodeSpread NodePolicy = "spread"
)
