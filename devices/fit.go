package devices

import (
	"strconv"
	"strings"
)

// rejectReason is why one card cannot take one container.
type rejectReason int

const (
	reasonUnhealthy rejectReason = iota
	reasonCordoned
	reasonModel
	reasonUUID
	reasonMode
	reasonShares
	reasonMemory
	reasonCores
	reasonExclusive
	reasonCoresFull
	numReasons
)

var reasonText = [numReasons]string{
	reasonUnhealthy: "unhealthy",
	reasonCordoned:  "cordoned",
	reasonModel:     "card type not wanted",
	reasonUUID:      "card uuid not wanted",
	reasonMode:      "sharing mode not wanted",
	reasonShares:    "all shares in use",
	reasonMemory:    "insufficient memory",
	reasonCores:     "insufficient cores",
	reasonExclusive: "exclusive use conflict",
	reasonCoresFull: "cores fully used",
}

// Rejection says why a pod does not fit on a node's cards: the first
// container that did not fit and, per reason, how many cards refused it.
type Rejection struct {
	// Container is the index of the container (init containers first).
	Container int
	// Cards is the number of cards on the node.
	Cards int
	// Wanted is the number of cards the container asked for.
	Wanted int32
	// Fitting is the number of cards that could take it (fewer than Wanted).
	Fitting int
	// NUMABind is set when the container had to fit on one NUMA node.
	NUMABind bool
	counts   [numReasons]int32
}

// Reason renders the rejection as a short, stable string such as
// "2/8 cards: insufficient memory, 6/8 cards: all shares in use".
func (r *Rejection) Reason() string {
	var parts []string
	total := strconv.Itoa(r.Cards)
	for reason, n := range r.counts {
		if n > 0 {
			parts = append(parts, strconv.Itoa(int(n))+"/"+total+" cards: "+reasonText[reason])
		}
	}
	if r.Fitting > 0 {
		where := ""
		if r.NUMABind {
			where = " on one NUMA node"
		}
		parts = append(parts, strconv.Itoa(r.Fitting)+"/"+total+" cards free"+where+", "+strconv.Itoa(int(r.Wanted))+" wanted")
	}
	if len(parts) == 0 {
		return "no card"
	}
	return strings.Join(parts, ", ")
}

// FitPod places every container of req on the node's cards. cards and used
// are index-aligned; used is not modified. vendor is the word written into
// each Grant. It returns one entry per container (empty for containers
// asking nothing), or a Rejection for the first container that does not fit.
func FitPod(vendor string, cards []Card, used []Usage, req *PodRequest) (Assignment, *Rejection) {
	requesting := 0
	for _, r := range req.Containers {
		if !r.IsZero() {
			requesting++
		}
	}
	if requesting > 1 {
		// Later containers must see what earlier ones took.
		scratch := make([]Usage, len(used))
		copy(scratch, used)
		used = scratch
	}
	a := make(Assignment, len(req.Containers))
	for i, r := range req.Containers {
		if r.IsZero() {
			continue
		}
		grants, rej := fitContainer(vendor, cards, used, r, &req.Preferences)
		if rej != nil {
			rej.Container = i
			return nil, rej
		}
		a[i] = grants
		if requesting > 1 {
			ApplyGrants(cards, used, a[i:i+1], true)
		}
	}
	return a, nil
}

// fitContainer picks r.Count distinct cards for one container.
func fitContainer(vendor string, cards []Card, used []Usage, r Request, p *Preferences) ([]Grant, *Rejection) {
	var orderBuf [16]int
	order := cardOrder(cards, used, p.Policy, orderBuf[:0])
	if !p.NUMABind {
		return pickCards(vendor, cards, used, r, p, order, -1)
	}
	var rej *Rejection
	for _, numa := range numaNodes(cards, order) {
		grants, nr := pickCards(vendor, cards, used, r, p, order, numa)
		if nr == nil {
			return grants, nil
		}
		if rej == nil || nr.Fitting > rej.Fitting {
			rej = nr
		}
	}
	if rej == nil {
		rej = &Rejection{Cards: len(cards), Wanted: r.Count}
	}
	rej.NUMABind = true
	return nil, rej
}

// pickCards walks the cards in order and takes the first r.Count that fit;
// numa >= 0 restricts the walk to one NUMA node.
func pickCards(vendor string, cards []Card, used []Usage, r Request, p *Preferences, order []int, numa int) ([]Grant, *Rejection) {
	var counts [numReasons]int32
	var grants []Grant
	cores := min(r.Cores, 100)
	for _, i := range order {
		c := &cards[i]
		if numa >= 0 && c.NUMA != numa {
			continue
		}
		mem := r.MemoryOn(c)
		if reason, ok := cardRefuses(c, used[i], mem, cores, p); ok {
			counts[reason]++
			continue
		}
		if grants == nil {
			grants = make([]Grant, 0, r.Count)
		}
		grants = append(grants, Grant{UUID: c.UUID, Vendor: vendor, MemoryMiB: mem, Cores: cores})
		if int32(len(grants)) == r.Count {
			return grants, nil
		}
	}
	return nil, &Rejection{Cards: len(cards), Wanted: r.Count, Fitting: len(grants), counts: counts}
}

// cardRefuses applies HAMi's per-card rules in HAMi's order and reports the
// first one that refuses the container.
func cardRefuses(c *Card, u Usage, mem, cores int32, p *Preferences) (rejectReason, bool) {
	switch {
	case !c.Healthy:
		return reasonUnhealthy, true
	case c.Cordoned:
		return reasonCordoned, true
	case !modelWanted(c.Model, p):
		return reasonModel, true
	case p.Mode != "" && !strings.Contains(p.Mode, c.Mode):
		return reasonMode, true
	case !uuidWanted(c.UUID, p):
		return reasonUUID, true
	case u.Sharers >= c.Split:
		return reasonShares, true
	case p.Exclusive && u.Sharers > 0:
		return reasonExclusive, true
	case c.MemoryMiB-u.MemoryMiB < mem:
		return reasonMemory, true
	case c.Cores-u.Cores < cores:
		return reasonCores, true
	// 100 cores asks for the card alone.
	case c.Cores == 100 && cores == 100 && u.Sharers > 0:
		return reasonExclusive, true
	// 0 cores cannot go where every core is already taken.
	case c.Cores != 0 && u.Cores == c.Cores && cores == 0:
		return reasonCoresFull, true
	}
	return 0, false
}

func modelWanted(model string, p *Preferences) bool {
	if len(p.UseModels) == 0 && len(p.AvoidModels) == 0 {
		return true
	}
	upper := strings.ToUpper(model)
	if len(p.UseModels) > 0 && !containsAnySubstring(upper, p.UseModels) {
		return false
	}
	return !containsAnySubstring(upper, p.AvoidModels)
}

func containsAnySubstring(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func uuidWanted(id string, p *Preferences) bool {
	if len(p.UseUUIDs) > 0 && !containsString(p.UseUUIDs, id) {
		return false
	}
	return !containsString(p.AvoidUUIDs, id)
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// cardOrder returns the card indexes in the order the policy tries them:
// spread puts the least loaded first, binpack the most loaded; ties keep
// the registered order. buf is reused when large enough.
func cardOrder(cards []Card, used []Usage, policy CardPolicy, buf []int) []int {
	var loadBuf [16]int64
	load := loadBuf[:0]
	if len(cards) > len(loadBuf) {
		load = make([]int64, 0, len(cards))
	}
	order := buf
	for i := range cards {
		order = append(order, i)
		load = append(load, cardLoad(&cards[i], used[i]))
	}
	binpack := policy == CardBinpack
	// Insertion sort: node card counts are small and this keeps it
	// allocation-free and stable.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0; j-- {
			a, b := load[order[j-1]], load[order[j]]
			if (binpack && a >= b) || (!binpack && a <= b) {
				break
			}
			order[j-1], order[j] = order[j], order[j-1]
		}
	}
	return order
}

// cardLoad is the card's use in thousandths, summed over shares, memory and
// cores, so that cards compare by how busy they are.
func cardLoad(c *Card, u Usage) int64 {
	var load int64
	if c.Split > 0 {
		load += int64(u.Sharers) * 1000 / int64(c.Split)
	}
	if c.MemoryMiB > 0 {
		load += int64(u.MemoryMiB) * 1000 / int64(c.MemoryMiB)
	}
	if c.Cores > 0 {
		load += int64(u.Cores) * 1000 / int64(c.Cores)
	}
	return load
}

// numaNodes lists the NUMA nodes of the cards, in the order their first card
// appears in order.
func numaNodes(cards []Card, order []int) []int {
	var nodes []int
	for _, i := range order {
		if !containsInt(nodes, cards[i].NUMA) {
			nodes = append(nodes, cards[i].NUMA)
		}
	}
	return nodes
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// NodeLoad is the node's use in percent (0-100) after a pod's assignment
// would be added: the mean over its cards of shares, memory and cores used.
// Node scoring uses it: binpack prefers high, spread low.
func NodeLoad(cards []Card, used []Usage, a Assignment) int64 {
	if len(cards) == 0 {
		return 0
	}
	var total int64
	for i := range cards {
		u := used[i]
		for _, container := range a {
			for _, g := range container {
				if g.UUID == cards[i].UUID {
					u.Add(g)
				}
			}
		}
		total += cardLoad(&cards[i], u)
	}
	// cardLoad sums three thousandths; the mean over cards, in percent.
	return min(total/int64(len(cards))/30, 100)
}
