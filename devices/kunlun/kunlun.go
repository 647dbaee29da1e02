// Package kunlun is the Kunlunxin XPU vendor: whole XPUs synthesised from
// node capacity and placed by HAMi's 8-card topology rules.
package kunlun

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Annotation keys of whole XPUs.
const (
	// AllocatedAnnotation is the only assignment key HAMi writes for whole
	// XPUs (no to-allocate key).
	AllocatedAnnotation = "hami.io/kunlun-allocated"
	// DeviceIndexAnnotation lists the card indexes of the last container
	// that got cards, e.g. "0,1"; Kunlunxin's device plugin reads it.
	DeviceIndexAnnotation = "BAIDU_COM_DEVICE_IDX"

	// Both uuid selector pairs apply.
	UseUUIDAnnotation      = "hami.io/use-xpu-uuid"
	AvoidUUIDAnnotation    = "hami.io/no-use-xpu-uuid"
	BaiduUseUUIDAnnotation = "baidu.com/use-gpuuuid"
	BaiduNoUseUUIDAnnotion = "baidu.com/nouse-gpuuuid"
)

// Word is HAMi's CommonWord, card type and grant type of whole XPUs.
const Word = "kunlun"

// DefaultCountName is the chart's whole-XPU resource.
const DefaultCountName = "kunlunxin.com/xpu"

// Synthesised cards: HAMi's fixed values.
const (
	CardMemoryMiB = 98304
	maxCards      = 1024
)

// Vendor implements devices.Vendor for whole Kunlunxin XPUs.
type Vendor struct {
	names devices.ResourceNames
}

var (
	_ devices.Vendor       = &Vendor{}
	_ devices.PodAnnotator = &Vendor{}
)

// New returns the whole-XPU vendor; only the count resource is settable.
func New(cfg devices.Config) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.OnlyRenames(0) || cfg.NodeDefaults != (devices.NodeDefaults{}) {
		return nil, fmt.Errorf("vendor %s: a whole Kunlunxin XPU has only a count resource (resourceCountName)", cfg.Name)
	}
	return &Vendor{names: devices.ResourceNames{Count: corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultCountName))}}, nil
}

// Name implements devices.Vendor.
func (v *Vendor) Name() string { return Word }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor. HAMi writes only
// hami.io/kunlun-allocated: both keys are that one.
func (v *Vendor) AssignmentAnnotations() (string, string) {
	return AllocatedAnnotation, AllocatedAnnotation
}

// NodeLock: HAMi takes no lock for whole XPUs.
func (v *Vendor) NodeLock() string { return "" }

// CardID is the id HAMi gives XPU i of a node.
func CardID(node string, i int) string { return node + "-" + Word + "-" + strconv.Itoa(i) }

// Inventory implements devices.Vendor: one card per unit of the count
// capacity, ids <node>-kunlun-<i>, 100 shares, 98304 MiB, 100 cores, NUMA 1
// for the upper half; always healthy.
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	q, ok := node.Status.Capacity[v.names.Count]
	if !ok {
		return nil, nil
	}
	n, exact := q.AsInt64()
	switch {
	case !exact || n < 0:
		return nil, fmt.Errorf("capacity %s is not a whole non-negative number", v.names.Count)
	case n == 0:
		return nil, nil
	case n > maxCards:
		return nil, fmt.Errorf("capacity %s %d is more than %d cards", v.names.Count, n, maxCards)
	}
	cards := make([]devices.Card, n)
	for i := range cards {
		cards[i] = devices.Card{
			UUID: CardID(node.Name, i), Index: i, Split: 100, MemoryMiB: CardMemoryMiB, Cores: 100,
			Model: Word, Mode: devices.DefaultMode, Healthy: true,
		}
		if int64(i) >= n/2 {
			cards[i].NUMA = 1
		}
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	return old.Name != updated.Name || devices.CapacityChanged(old, updated, v.names.Count) ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon]
}

// ParsePod implements devices.Vendor: whole cards; both uuid selector
// pairs are kept (a card must pass both).
func (v *Vendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, devices.WholeCardRequest(v.names.Count))
	if err != nil || !asked {
		return devices.PodRequest{}, err
	}
	a := pod.Annotations
	req.Preferences = devices.Preferences{
		UseUUIDs:   devices.SplitList(a[UseUUIDAnnotation]),
		AvoidUUIDs: devices.SplitList(a[AvoidUUIDAnnotation]),
	}
	addBaiduUUIDs(&req.Preferences, a)
	return req, nil
}

// addBaiduUUIDs adds the baidu.com uuid pair, a second, independent
// constraint: a card must be in both use lists (when set) and in neither
// avoid list.
func addBaiduUUIDs(p *devices.Preferences, annotations map[string]string) {
	if use := devices.SplitList(annotations[BaiduUseUUIDAnnotation]); len(use) > 0 {
		p.UseUUIDs = intersectOrSet(p.UseUUIDs, use)
	}
	p.AvoidUUIDs = append(p.AvoidUUIDs, devices.SplitList(annotations[BaiduNoUseUUIDAnnotion])...)
}

// intersectOrSet is b when a is empty, else the ids in both; an empty
// intersection is kept as one id no card has, so that nothing passes.
func intersectOrSet(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	var out []string
	for _, id := range a {
		if slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// Fit implements devices.Vendor, HAMi's whole-XPU fit: a card fits when it
// is healthy, not cordoned, unused and passes the uuid selectors; the
// cards are chosen by HAMi's 8-card topology (groupSelect). Init
// containers are fitted each alone; regular containers one after another.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	return fitTopology(Word, cards, used, req, func(_ *devices.Card, u devices.Usage, _ *devices.Request) bool {
		return u.Sharers == 0
	}, func(c *devices.Card, _ *devices.Request) (int32, int32) { return c.MemoryMiB, c.Cores })
}

// fitTopology places each container by groupSelect over the cards that
// pass fits (besides health, cordon and the uuid selectors); grant gives
// the memory and cores recorded for a card.
func fitTopology(word string, cards []devices.Card, used []devices.Usage, req *devices.PodRequest,
	fits func(*devices.Card, devices.Usage, *devices.Request) bool, grant func(*devices.Card, *devices.Request) (int32, int32)) (devices.Assignment, *devices.Rejection) {
	a := make(devices.Assignment, len(req.Containers))
	inits := max(min(req.Inits, len(req.Containers)), 0)
	var scratch []devices.Usage
	for i := range req.Containers {
		r := &req.Containers[i]
		if r.IsZero() {
			continue
		}
		u := used
		if i >= inits && scratch != nil {
			u = scratch
		}
		if int(r.Count) > len(cards) {
			return nil, &devices.Rejection{Container: i, Cards: len(cards), Wanted: r.Count}
		}
		var free [8]int // card position by index, -1: not free
		nFree := 0
		for k := range free {
			free[k] = -1
		}
		for ci := range cards {
			c := &cards[ci]
			if c.Index < 0 || c.Index >= 8 || !c.Healthy || c.Cordoned || !req.Preferences.WantsUUID(c.UUID) || !fits(c, u[ci], r) {
				continue
			}
			if free[c.Index] < 0 {
				free[c.Index] = ci
				nFree++
			}
		}
		picked := groupSelect(&free, int(r.Count))
		if len(picked) == 0 {
			return nil, &devices.Rejection{Container: i, Cards: len(cards), Wanted: r.Count, Fitting: nFree}
		}
		grants := make([]devices.Grant, 0, len(picked))
		for _, idx := range picked {
			c := &cards[free[idx]]
			mem, cores := grant(c, r)
			grants = append(grants, devices.Grant{UUID: c.UUID, Vendor: word, MemoryMiB: mem, Cores: cores})
		}
		a[i] = grants
		if i >= inits {
			if scratch == nil {
				scratch = append([]devices.Usage(nil), used...)
			}
			devices.ApplyGrants(cards, scratch, devices.Assignment{grants}, 0, true)
		}
	}
	return a, nil
}

// Interconnections of the 8-card board (HAMi's config.go).
var (
	crossPairs = [][2]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}
	quads      = [][4]int{{0, 1, 4, 5}, {2, 3, 6, 7}, {0, 2, 4, 6}, {1, 3, 5, 7}, {0, 3, 4, 7}, {1, 2, 5, 6}}
	linked     = [][2]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}, {4, 5}, {4, 6}, {4, 7}, {5, 6}, {5, 7}, {6, 7}}
)

// groupSelect is HAMi's graghSelect on card indexes 0-7 (left group 0-3,
// right 4-7); free[i] >= 0 when card index i may be taken. It returns the
// chosen indexes, or nil.
func groupSelect(free *[8]int, n int) []int {
	isFree := func(i int) bool { return free[i] >= 0 }
	left, right := 0, 0
	for i := range 8 {
		if isFree(i) {
			if i < 4 {
				left++
			} else {
				right++
			}
		}
	}
	pick := func(start int) []int {
		var out []int
		for i := start; i < 8; i++ {
			if isFree(i) {
				if out = append(out, i); len(out) == n {
					return out
				}
			}
		}
		return nil
	}
	switch n {
	case 8:
		if left+right == 8 {
			return []int{0, 1, 2, 3, 4, 5, 6, 7}
		}
		return nil
	case 1, 2, 4:
		if left >= n || right >= n {
			odd := []int{1, 3, 2, 4}
			for slots := n; slots <= 4; slots++ {
				num := slots
				if n%2 == 1 {
					num = odd[slots-1]
				}
				if left == num {
					return pick(0)
				}
				if right == num {
					return pick(4)
				}
			}
		}
		return interconnect(isFree, n)
	}
	return nil
}

// interconnect is HAMi's choice across the two groups.
func interconnect(isFree func(int) bool, n int) []int {
	switch n {
	case 2:
		for a := range 8 {
			for b := range 8 {
				if a == b || !isFree(a) || !isFree(b) {
					continue
				}
				for _, p := range crossPairs {
					if p == [2]int{a, b} || p == [2]int{b, a} {
						return []int{a, b}
					}
				}
			}
		}
	case 4:
		var unused []int
		for i := range 8 {
			if isFree(i) {
				unused = append(unused, i)
			}
		}
		allFree := func(q [4]int) bool {
			return isFree(q[0]) && isFree(q[1]) && isFree(q[2]) && isFree(q[3])
		}
		switch len(unused) {
		case 4, 5:
			for _, q := range quads {
				if allFree(q) {
					return q[:]
				}
			}
		case 6:
			var last []int
			for _, q := range quads {
				if !allFree(q) {
					continue
				}
				last = []int{q[0], q[1], q[2], q[3]}
				var rest []int
				for _, u := range unused {
					if !slices.Contains(q[:], u) {
						rest = append(rest, u)
					}
				}
				for _, l := range linked {
					if slices.Contains(rest, l[0]) && slices.Contains(rest, l[1]) {
						return last
					}
				}
			}
			return last
		}
	}
	return nil
}

// ScorePlacement is HAMi's whole-XPU node score (topo.go calcscore): the
// change in "bubbles" between the cards in use before the pod and the
// pod's own cards: 3000, 2000, 1000 or 0. usedBefore is the usage before
// the pod. It implements devices.PlacementScorer.
func (v *Vendor) ScorePlacement(cards []devices.Card, usedBefore []devices.Usage, a devices.Assignment) float64 {
	var prev, cur []int
	for i := range cards {
		if usedBefore[i].Sharers > 0 && !slices.Contains(prev, cards[i].Index) {
			prev = append(prev, cards[i].Index)
		}
	}
	a.Grants(func(g devices.Grant) {
		for i := range cards {
			if cards[i].UUID == g.UUID && !slices.Contains(cur, cards[i].Index) {
				cur = append(cur, cards[i].Index)
			}
		}
	})
	switch bubbles(cur) - bubbles(prev) {
	case -1:
		return 3000
	case 0:
		return 2000
	case 1:
		return 1000
	case 2:
		return 0
	}
	return 1000
}

// bubbles is HAMi's countbubble.
func bubbles(idx []int) int {
	left, right := 0, 0
	for _, i := range idx {
		if i < 4 {
			left++
		} else {
			right++
		}
	}
	if left == 0 && right == 0 {
		return 1
	}
	value := func(t int) int {
		switch t {
		case 4:
			return 0
		case 1:
			return 2
		}
		return 1
	}
	return value(left) + value(right)
}

// AssignmentExtras implements devices.PodAnnotator: BAIDU_COM_DEVICE_IDX,
// the card indexes (ending the card ids) of the last container that got
// cards.
func (v *Vendor) AssignmentExtras(_ *corev1.Pod, a devices.Assignment, _ time.Time) (map[string]string, error) {
	value := ""
	for _, ctr := range a {
		if len(ctr) == 0 {
			continue
		}
		idx := make([]string, 0, len(ctr))
		for _, g := range ctr {
			i := strings.LastIndexByte(g.UUID, '-')
			n, err := strconv.Atoi(g.UUID[i+1:])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("card id %q does not end in a card index", g.UUID)
			}
			idx = append(idx, strconv.Itoa(n))
		}
		value = strings.Join(idx, ",")
	}
	if value == "" {
		return nil, nil
	}
	return map[string]string{DeviceIndexAnnotation: value}, nil
}

// Default implements devices.Vendor: detection only (count in limits).
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	if _, _, err := devices.ContainerQuantity(c, v.names.Count); err != nil {
		return false, err
	}
	_, ok := c.Resources.Limits[v.names.Count]
	return ok, nil
}
