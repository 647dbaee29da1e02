package ascend

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Fit implements devices.Vendor: HAMi's standard share fit (the shared
// walk: cards sorted by score, tried from the last backwards), with
//   - hami-core pods: each NPU's core total taken as 100 in the checks
//     (cores are percent), the registered one in the card score; a node
//     without hami-core support refuses them (card Mode);
//   - 910 chips whose every NPU has a NetworkID, n > 1 NPUs: every NPU
//     that fits is collected; exactly n are taken in walk order, more are
//     filled from the NetworkID group with most of them first;
//   - Ascend910C, n > 1 NPUs: every NPU that fits is collected, then only
//     whole modules (both NPUs of index/2 fit), and exactly n, else refused.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	var opts devices.FitOptions
	if req.Preferences.Mode == ModeHAMiCore {
		// Checked against 100, scored with the registered devcore.
		opts.CoreTotal = hamiCoreTotal
	}
	switch {
	case v.pairs:
		opts.Pick = modulePairs
	case v.topology && hasNetworkIDs(cards):
		opts.Pick = byNetworkID
	}
	return devices.FitPodWith(v.cfg.CommonWord, cards, used, req, opts)
}

// hamiCoreTotal is an NPU's core total for hami-core pods, whose cores
// are percent.
const hamiCoreTotal = 100

// CoreTotal implements devices.CoreAccounter: an NPU of a node that runs
// the hami-core soft split is accounted against 100 (percent), as Fit
// checks hami-core pods; other NPUs against their registered cores.
func (v *Vendor) CoreTotal(c *devices.Card) int32 {
	if c.Mode == ModeHAMiCore {
		return hamiCoreTotal
	}
	return c.Cores
}

func hasNetworkIDs(cards []devices.Card) bool {
	for i := range cards {
		if cards[i].Group < 0 {
			return false
		}
	}
	return len(cards) > 0
}

// cardOf finds the card a grant names.
func cardOf(cards []devices.Card, uuid string) *devices.Card {
	for i := range cards {
		if cards[i].UUID == uuid {
			return &cards[i]
		}
	}
	return nil
}

// byNetworkID (a devices.GroupPicker) takes n of the fitting NPUs: all of
// them, in walk order, when exactly n fit; else first from the NetworkID
// group with most fitting NPUs, then the next (HAMi's
// computeBestCombination); ties keep the order in which the groups' first
// NPU was walked (HAMi: map order, random).
func byNetworkID(cards []devices.Card, grants []devices.Grant, picked []int, n int) []devices.Grant {
	if len(grants) == n {
		return grants
	}
	return fillGroups(grants, picked, n, func(i int) int { return cards[i].Group }, 0)
}

// modulePairs (a devices.GroupPicker) takes n of the fitting NPUs as whole
// 910C modules (both NPUs of index/2 fit), modules in walk order, each
// module's NPUs in walk order (HAMi's computeBestCombination910C). It
// returns fewer than n grants when not enough whole modules fit, or when n
// is odd.
func modulePairs(cards []devices.Card, grants []devices.Grant, picked []int, n int) []devices.Grant {
	return fillGroups(grants, picked, n, func(i int) int { return cards[i].Index / npusPerModule }, npusPerModule)
}

// fillGroups groups the grants by the key of their card (keeping walk
// order), orders the groups by size, largest first (stable), and takes
// whole groups' grants until n are taken. With exact > 0 only groups of
// exactly that size are used, and only whole (HAMi's 910C rule; HAMi may
// overshoot an odd n by one module and then refuses, so the outcome is the
// same).
func fillGroups(grants []devices.Grant, picked []int, n int, key func(card int) int, exact int) []devices.Grant {
	type group struct {
		key     int
		members []devices.Grant
	}
	var groups []group
	for k, g := range grants {
		gk := key(picked[k])
		found := false
		for j := range groups {
			if groups[j].key == gk {
				groups[j].members = append(groups[j].members, g)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, group{key: gk, members: []devices.Grant{g}})
		}
	}
	// Stable insertion sort by size, largest first.
	for i := 1; i < len(groups); i++ {
		for j := i; j > 0 && len(groups[j].members) > len(groups[j-1].members); j-- {
			groups[j], groups[j-1] = groups[j-1], groups[j]
		}
	}
	out := make([]devices.Grant, 0, n)
	for _, g := range groups {
		if exact > 0 {
			if len(g.members) == exact && len(out)+exact <= n {
				out = append(out, g.members...)
			}
			continue
		}
		for _, m := range g.members {
			out = append(out, m)
			if len(out) == n {
				return out
			}
		}
	}
	return out
}

// ScoreAssignment implements devices.NodeScorer with HAMi's 910 topology
// score: per container, the share of its NPUs in its largest NetworkID
// group, summed, times 10. 0 for other chips and for assignments on NPUs
// without a NetworkID.
func (v *Vendor) ScoreAssignment(cards []devices.Card, a devices.Assignment) float64 {
	if !v.topology {
		return 0
	}
	var score float64
	for _, container := range a {
		if len(container) == 0 {
			continue
		}
		counts := map[int]int{}
		most := 0
		for _, g := range container {
			c := cardOf(cards, g.UUID)
			if c == nil || c.Group < 0 {
				return 0
			}
			counts[c.Group]++
			most = max(most, counts[c.Group])
		}
		score += float64(most) / float64(len(container))
	}
	return score * networkWeight
}

// runtimeInfo is one NPU of the RuntimeInfoAnnotation, in the format
// Ascend's device plugin reads.
type runtimeInfo struct {
	UUID   string `json:"UUID,omitempty"`
	Temp   string `json:"temp,omitempty"`
	Memory int64  `json:"memory,omitempty"`
	Core   int32  `json:"core,omitempty"`
}

// AssignmentExtras implements devices.PodAnnotator: the chip's runtime
// annotation (every assigned NPU, all containers in order, with the
// template its memory rounds to unless the pod is hami-core) and
// predicate-time.
func (v *Vendor) AssignmentExtras(pod *corev1.Pod, a devices.Assignment, now time.Time) (map[string]string, error) {
	if a.Empty() {
		return nil, nil
	}
	hamiCore := pod != nil && pod.Annotations[VNPUModeAnnotation] == ModeHAMiCore
	var infos []runtimeInfo
	a.Grants(func(g devices.Grant) {
		info := runtimeInfo{UUID: g.UUID, Memory: int64(g.MemoryMiB), Core: g.Cores}
		if !hamiCore {
			info.Temp = v.template(int64(g.MemoryMiB))
		}
		infos = append(infos, info)
	})
	data, err := json.Marshal(infos)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", v.runtimeInfoKey, err)
	}
	return map[string]string{
		v.runtimeInfoKey:        string(data),
		PredicateTimeAnnotation: strconv.FormatInt(now.Unix(), 10),
	}, nil
}
