package devices

import (
	"fmt"
	"slices"
)

// GroupRoom checks whether the cards of a cluster could take the devices
// of need members of a group at once, for one vendor. It is a necessary
// condition, never a placement: it ignores which node each card is on
// (a container's cards must share a node), the members' card preferences
// and every constraint that is not a card's free share count, memory or
// cores, so a group it turns away cannot fit, while a group it lets
// through may still fail to place. It never over-counts a member's
// demand: a member asks what its regular containers ask (init containers
// run before them and hold no more than the largest of them per card), and
// a percentage of memory is taken of the smallest usable card.
//
// members are the requests of the group's members that are not placed yet
// (one per member, zero for members that ask nothing of the vendor);
// visit calls its function with the cards of each node and their usage.
// It returns nil when the need members might fit, else why not.
func GroupRoom(vendor string, members []PodRequest, need int, visit func(func(cards []Card, used []Usage))) *GroupShortfall {
	if need <= 0 || len(members) == 0 {
		return nil
	}
	need = min(need, len(members))
	demands := make([]memberDemand, len(members))
	for i := range members {
		demands[i] = demandOf(&members[i])
	}
	if shape, uniform := uniformShape(demands); uniform {
		return slotRoom(vendor, shape, demands, need, visit)
	}
	return totalRoom(vendor, demands, need, visit)
}

// GroupShortfall says why a group's members cannot all have cards.
type GroupShortfall struct {
	Vendor string
	// Members is how many members had to fit.
	Members int
	// What is the resource that runs short, and Need and Room how much
	// the members ask of it and how much the cards have free.
	What       string
	Need, Room int64
}

func (s *GroupShortfall) Error() string {
	members := fmt.Sprintf("%d members need", s.Members)
	if s.Members == 1 {
		members = "1 member needs"
	}
	return fmt.Sprintf("%s %d %s of %s cards, the cluster has %d free", members, s.Need, s.What, s.Vendor, s.Room)
}

// cardShape is what one container asks of each of its cards.
type cardShape struct {
	memoryMiB, memoryPercent, cores int32
}

// memberDemand is what one member asks of the vendor's cards: grants per
// shape, and its totals over every grant.
type memberDemand struct {
	grants map[cardShape]int64
	total  int64
}

func demandOf(r *PodRequest) memberDemand {
	containers := r.Containers[min(max(r.Inits, 0), len(r.Containers)):]
	if allZero(containers) {
		// Only init containers ask: the largest of them, one at a time.
		containers = largestInit(r.Containers[:min(max(r.Inits, 0), len(r.Containers))])
	}
	d := memberDemand{grants: map[cardShape]int64{}}
	for _, c := range containers {
		if c.IsZero() {
			continue
		}
		d.grants[cardShape{memoryMiB: c.MemoryMiB, memoryPercent: c.MemoryPercent, cores: c.Cores}] += int64(c.Count)
		d.total += int64(c.Count)
	}
	return d
}

func allZero(rs []Request) bool {
	for _, r := range rs {
		if !r.IsZero() {
			return false
		}
	}
	return true
}

// largestInit is the init container asking the most cards (then memory,
// then cores), alone.
func largestInit(inits []Request) []Request {
	var best Request
	for _, r := range inits {
		if r.Count > best.Count || (r.Count == best.Count && (r.MemoryMiB > best.MemoryMiB || r.Cores > best.Cores)) {
			best = r
		}
	}
	return []Request{best}
}

// uniformShape returns the one card shape every member's grants have,
// when they all have the same (members asking nothing aside).
func uniformShape(demands []memberDemand) (cardShape, bool) {
	var shape cardShape
	found := false
	for _, d := range demands {
		for s := range d.grants {
			if found && s != shape {
				return cardShape{}, false
			}
			shape, found = s, true
		}
	}
	return shape, found
}

// usable reports whether a card may take new work at all.
func usable(c *Card, u *Usage) bool {
	return c.Healthy && !c.Cordoned && u.Faults == 0 && u.Sharers < c.Split
}

// slotRoom: every member asks cards of one shape, so each card can take a
// known number of such grants, and the members that ask fewest grants
// must find that many.
func slotRoom(vendor string, shape cardShape, demands []memberDemand, need int, visit func(func([]Card, []Usage))) *GroupShortfall {
	asked := make([]int64, len(demands))
	for i, d := range demands {
		asked[i] = d.total
	}
	slices.Sort(asked)
	var want int64
	for _, n := range asked[:need] {
		want += n
	}
	if want == 0 {
		return nil
	}
	var room int64
	visit(func(cards []Card, used []Usage) {
		for i := range cards {
			room += grantsOn(&cards[i], &used[i], shape)
		}
	})
	if want <= room {
		return nil
	}
	return &GroupShortfall{Vendor: vendor, Members: need, What: shape.String(), Need: want, Room: room}
}

// grantsOn is how many more grants of shape the card can take.
func grantsOn(c *Card, u *Usage, shape cardShape) int64 {
	if !usable(c, u) {
		return 0
	}
	n := int64(c.Split - u.Sharers)
	req := Request{MemoryMiB: shape.memoryMiB, MemoryPercent: shape.memoryPercent}
	if mem := int64(req.MemoryOn(c)); mem > 0 {
		n = min(n, (int64(c.MemoryMiB)-u.MemoryMiB)/mem)
	}
	switch {
	case c.Cores == 100 && shape.cores == 100:
		// The card alone.
		if u.Sharers > 0 {
			return 0
		}
		n = min(n, 1)
	case shape.cores > 0:
		n = min(n, (int64(c.Cores)-u.Cores)/int64(shape.cores))
	case c.Cores != 0 && u.Cores >= int64(c.Cores):
		// No core left, even for a container asking none.
		return 0
	}
	return max(n, 0)
}

func (s cardShape) String() string {
	mem := fmt.Sprintf("%d MiB", s.memoryMiB)
	if s.memoryMiB == 0 {
		mem = fmt.Sprintf("%d%% memory", s.memoryPercent)
	}
	return fmt.Sprintf("card shares of %s and %d%% cores", mem, s.cores)
}

// totalRoom: members ask cards of several shapes; only totals compare.
// The need members asking least must find that many free card shares, and
// as much free memory and cores as they ask in all.
func totalRoom(vendor string, demands []memberDemand, need int, visit func(func([]Card, []Usage))) *GroupShortfall {
	var shares, memory, cores int64
	smallestCard := int64(-1)
	visit(func(cards []Card, used []Usage) {
		for i := range cards {
			c, u := &cards[i], &used[i]
			if !usable(c, u) {
				continue
			}
			shares += int64(c.Split - u.Sharers)
			memory += max(int64(c.MemoryMiB)-u.MemoryMiB, 0)
			cores += max(int64(c.Cores)-u.Cores, 0)
			if smallestCard < 0 || int64(c.MemoryMiB) < smallestCard {
				smallestCard = int64(c.MemoryMiB)
			}
		}
	})
	smallestCard = max(smallestCard, 0)
	askShares := make([]int64, len(demands))
	askMemory := make([]int64, len(demands))
	askCores := make([]int64, len(demands))
	for i, d := range demands {
		for s, n := range d.grants {
			askShares[i] += n
			mem := int64(s.memoryMiB)
			if mem == 0 {
				mem = smallestCard * int64(s.memoryPercent) / 100
			}
			askMemory[i] += n * mem
			askCores[i] += n * int64(s.cores)
		}
	}
	for _, check := range []struct {
		what string
		ask  []int64
		room int64
	}{
		{"card shares", askShares, shares},
		{"MiB of memory", askMemory, memory},
		{"percent of cores", askCores, cores},
	} {
		if want := smallestSum(check.ask, need); want > check.room {
			return &GroupShortfall{Vendor: vendor, Members: need, What: check.what, Need: want, Room: check.room}
		}
	}
	return nil
}

// smallestSum is the sum of the n smallest values.
func smallestSum(values []int64, n int) int64 {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	var sum int64
	for _, v := range sorted[:n] {
		sum += v
	}
	return sum
}
