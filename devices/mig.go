package devices

import (
	"cmp"
	"slices"
	"strings"
)

// Sharing modes of a card (the register's mode field). One mode holds for
// every card of a node. HAMi v2.10's scheduler treats mps cards like
// hami-core ones; only the pod's nvidia.com/vgpu-mode tells them apart.
const (
	ModeHAMiCore = DefaultMode
	ModeMIG      = "mig"
	ModeMPS      = "mps"
)

// MaxSlices is the width of a card's MIG placement space that Usage
// accounts: placements are [start, start+size) intervals of GPU memory
// slices, and every NVIDIA MIG card so far has 8 (an A100's 7g.40gb is
// {start 0, size 8}). A placement reaching beyond it can be neither granted
// nor accounted: the inventory drops it, and a pod reserving it makes the
// card take no new work.
const MaxSlices = 8

// MIGPlacement is a MIG slice interval as NVML reports it (HAMi's
// device.MigPlacement): slices [Start, Start+Size).
type MIGPlacement struct {
	Start uint32 `json:"start"`
	Size  uint32 `json:"size"`
}

// mask is the placement as a bit set of slices; ok is false when it is
// empty or reaches beyond MaxSlices.
func (p MIGPlacement) mask() (uint8, bool) {
	if p.Size == 0 || p.Start >= MaxSlices || p.Size > MaxSlices-p.Start {
		return 0, false
	}
	return uint8((1<<p.Size - 1) << p.Start), true
}

// MIGSlice is a MIG profile at a placement: what a grant on a card in mig
// mode gives.
type MIGSlice struct {
	Profile   string
	Placement MIGPlacement
}

// MIGProfile is one MIG profile a card in mig mode offers (the register's
// migProfiles entry).
type MIGProfile struct {
	// Name is the profile, e.g. 1g.5gb.
	Name string
	// MemoryMiB and Cores are what a slice of the profile is granted.
	MemoryMiB int32
	Cores     int32
	// SliceCount is the profile's compute slices (1 for 1g.*).
	SliceCount uint32
	// Placements are where the profile can sit, in the order they are
	// tried: from the highest start down for 1g.* and 3g.*, from the lowest
	// up for the others (HAMi's orderedMigPlacements).
	Placements []MIGPlacement
}

// MIGProfiles are a card's MIG profiles.
type MIGProfiles struct {
	List []MIGProfile
}

// normalizeMIGProfiles puts a card's profiles in the order HAMi tries them:
// by memory, then slice count, ascending, stable (selectMigCandidate); each
// profile's placements in its trial order. A later profile with the name of
// an earlier one is dropped (HAMi looks placements up by name and finds the
// first), as are placements that cannot be accounted (see MaxSlices).
func normalizeMIGProfiles(in []MIGProfile) *MIGProfiles {
	if len(in) == 0 {
		return nil
	}
	out := make([]MIGProfile, 0, len(in))
	for _, p := range in {
		if slices.ContainsFunc(out, func(q MIGProfile) bool { return q.Name == p.Name }) {
			continue
		}
		var pls []MIGPlacement
		for _, pl := range p.Placements {
			if _, ok := pl.mask(); ok {
				pls = append(pls, pl)
			}
		}
		high := strings.HasPrefix(p.Name, "1g.") || strings.HasPrefix(p.Name, "3g.")
		slices.SortStableFunc(pls, func(a, b MIGPlacement) int {
			if high {
				return cmp.Compare(b.Start, a.Start)
			}
			return cmp.Compare(a.Start, b.Start)
		})
		p.Placements = pls
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b MIGProfile) int {
		if c := cmp.Compare(a.MemoryMiB, b.MemoryMiB); c != 0 {
			return c
		}
		return cmp.Compare(a.SliceCount, b.SliceCount)
	})
	return &MIGProfiles{List: out}
}

// selectSlice picks a MIG slice for mem MiB on the card, as HAMi's
// selectMigCandidate does: the first profile (smallest memory, then fewest
// slices) with at least mem MiB that has a placement overlapping none of
// the occupied slices. It returns the profile and the placement's mask.
func selectSlice(c *Card, occupied uint8, mem int32) (*MIGProfile, MIGPlacement, uint8, bool) {
	if c.MIG == nil {
		return nil, MIGPlacement{}, 0, false
	}
	for pi := range c.MIG.List {
		p := &c.MIG.List[pi]
		if p.MemoryMiB < mem {
			continue
		}
		for _, pl := range p.Placements {
			if m, _ := pl.mask(); m&occupied == 0 {
				return p, pl, m, true
			}
		}
	}
	return nil, MIGPlacement{}, 0, false
}

// occupied is the set of slices any reservation on the card covers.
func (u *Usage) occupied() uint8 {
	var m uint8
	for s, n := range u.Slices {
		if n > 0 {
			m |= 1 << s
		}
	}
	return m
}

// reserve counts (or, when add is false, uncounts) one reservation of the
// slices in mask. Counting per slice rather than a bit set keeps adding and
// removing exact even when reservations overlap (several pods' corrupt
// annotations, or an init and a regular container of one pod, which HAMi
// places independently).
func (u *Usage) reserve(mask uint8, add bool) {
	for s := range u.Slices {
		if mask&(1<<s) == 0 {
			continue
		}
		if add {
			u.Slices[s] = min(u.Slices[s], 254) + 1
		} else if u.Slices[s] > 0 {
			u.Slices[s]--
		}
	}
}

// fault marks (or unmarks) the card as unusable for new work.
func (u *Usage) fault(add bool) {
	if add {
		u.Faults++
	} else {
		u.Faults = max(u.Faults-1, 0)
	}
}

// SliceReservation is one MIG slice a pod holds (an element of HAMi's
// hami.io/vgpu-mig-allocations): the card entry Device of container entry
// Container of the pod's assignment (init containers first), on the
// physical card UUID.
type SliceReservation struct {
	Container int
	Device    int
	UUID      string
	Profile   string
	Placement MIGPlacement
	// Runtime is the MIG instance the device plugin created for the slice,
	// once it has reported it; zero before (the scheduler never writes it).
	Runtime MIGRuntime
}

// MIGRuntime is the identity of a created MIG instance, as HAMi's device
// plugin adds it to hami.io/vgpu-mig-allocations: all three or none.
type MIGRuntime struct {
	UUID            string
	GPUInstance     uint32
	ComputeInstance uint32
}

// Ready reports whether the device plugin has reported the instance.
func (r MIGRuntime) Ready() bool { return r.UUID != "" }

// Reservations lists the MIG slices an assignment's grants carry, in
// container then card order; nil when there are none.
func Reservations(a Assignment) []SliceReservation {
	var out []SliceReservation
	for ci, container := range a {
		for di, g := range container {
			if g.MIG == nil {
				continue
			}
			out = append(out, SliceReservation{Container: ci, Device: di, UUID: g.UUID, Profile: g.MIG.Profile, Placement: g.MIG.Placement})
		}
	}
	return out
}

// ApplyReservations adds a pod's MIG reservations res to the usage of the
// cards they name, or removes them when add is false; a is the pod's
// assignment as accounted (ApplyGrants). Every reservation occupies its
// slices for as long as the pod is counted, whatever its container (init
// containers' included, as HAMi's usage rebuild counts them). HAMi's
// fail-closed rules (getNodesUsage) mark cards faulty instead, so that
// they take no new work:
//   - a reservation on a card that is not in mig mode (hami-core, mps): that
//     card;
//   - a reservation whose placement cannot be accounted (MaxSlices): that
//     card;
//   - a reservation naming no card of the node: every mig card of the node;
//   - a mig card the assignment names with no reservation of the pod on it:
//     that card.
//
// Adding and removing with the same arguments cancel out.
func ApplyReservations(cards []Card, used []Usage, a Assignment, res []SliceReservation, add bool) {
	for _, r := range res {
		i := cardIndex(cards, r.UUID)
		if i < 0 {
			for j := range cards {
				if cards[j].Mode == ModeMIG {
					used[j].fault(add)
				}
			}
			continue
		}
		m, ok := r.Placement.mask()
		if cards[i].Mode != ModeMIG || !ok {
			used[i].fault(add)
			continue
		}
		used[i].reserve(m, add)
	}
	for i := range cards {
		if cards[i].Mode != ModeMIG || !names(a, cards[i].UUID) {
			continue
		}
		if !slices.ContainsFunc(res, func(r SliceReservation) bool { return r.UUID == cards[i].UUID }) {
			used[i].fault(add)
		}
	}
}

func cardIndex(cards []Card, uuid string) int {
	for i := range cards {
		if cards[i].UUID == uuid {
			return i
		}
	}
	return -1
}

func names(a Assignment, uuid string) bool {
	for _, c := range a {
		for _, g := range c {
			if g.UUID == uuid {
				return true
			}
		}
	}
	return false
}

// migRequest reports whether a container may ask for more cards than the
// node has because a mig card can give it several slices (HAMi's
// isMIGRequest): the node has a mig card and the pod's vgpu-mode allows
// mig.
func migRequest(cards []Card, p *Preferences) bool {
	if p.Mode != "" && !strings.Contains(p.Mode, ModeMIG) {
		return false
	}
	for i := range cards {
		if cards[i].Mode == ModeMIG {
			return true
		}
	}
	return false
}

// resettleSlices gives the MIG grants of one container their slices again,
// in order, from what the card can give before the container, as HAMi's
// AddResourceUsage does once a container's cards are chosen. Only needed
// when the topology-aware policy chose some of the slices the walk
// collected.
func (f *fitter) resettleSlices(cards []Card, used []Usage, grants []Grant, r *Request) {
	mine := map[int]uint8{}
	for k := range grants {
		if grants[k].MIG == nil {
			continue
		}
		i := cardIndex(cards, grants[k].UUID)
		if i < 0 {
			continue
		}
		p, pl, m, ok := selectSlice(&cards[i], f.occupied(used, i)|mine[i], r.MemoryOn(&cards[i]))
		if !ok {
			// Cannot happen: fewer slices than the walk found room for.
			continue
		}
		mine[i] |= m
		grants[k].MemoryMiB, grants[k].Cores = p.MemoryMiB, p.Cores
		grants[k].MIG = &MIGSlice{Profile: p.Name, Placement: pl}
	}
}
