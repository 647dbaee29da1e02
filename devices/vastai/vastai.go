// Package vastai is the Vastai vendor: HAMi's placement of Vastaitech
// cards and dies (pkg/device/vastai), read from the register annotation of
// Vastai's device plugin. Count only: no memory or core sharing.
package vastai

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// VendorWord is HAMi's CommonWord for Vastai; registered types must
// contain it.
const VendorWord = "Vastai"

// Annotation keys (note the capital V in the assignment keys).
const (
	RegisterAnnotation   = "hami.io/node-va-register"
	HandshakeAnnotation  = "hami.io/node-handshake-va"
	ToAllocateAnnotation = "hami.io/Vastai-devices-to-allocate"
	AllocatedAnnotation  = "hami.io/Vastai-devices-allocated"

	UseUUIDAnnotation   = "vastaitech.com/use-gpuuuid"
	AvoidUUIDAnnotation = "vastaitech.com/nouse-gpuuuid"
)

// DefaultCountName is the chart's count resource.
const DefaultCountName = "vastaitech.com/va"

// DieMode is the Card.Mode of a die registered with DeviceStrategy "die";
// Card.Group is then its physical card (AIC), numbered from 1 in register
// order (0: no AIC).
const DieMode = "die"

// Vendor implements devices.Vendor for Vastai.
type Vendor struct {
	names devices.ResourceNames
}

var (
	_ devices.Vendor     = &Vendor{}
	_ devices.Handshaker = &Vendor{}
	_ devices.NodeScorer = &Vendor{}
)

// New returns the Vastai vendor; only the count resource can be renamed.
func New(cfg devices.Config) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.OnlyRenames(0) {
		return nil, fmt.Errorf("vendor %s: Vastai takes only resourceCountName", cfg.Name)
	}
	return &Vendor{names: devices.ResourceNames{Count: corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultCountName))}}, nil
}

// Name implements devices.Vendor.
func (v *Vendor) Name() string { return VendorWord }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor.
func (v *Vendor) AssignmentAnnotations() (string, string) {
	return ToAllocateAnnotation, AllocatedAnnotation
}

// HandshakeAnnotation implements devices.Handshaker.
func (v *Vendor) HandshakeAnnotation() string { return HandshakeAnnotation }

var _ devices.NodeLocker = &Vendor{}

// NodeLock implements devices.NodeLocker: the node lock key HAMi takes for this vendor.
func (v *Vendor) NodeLock() string { return devices.NodeLock }

type customInfo struct {
	ID         string `json:"id"`
	CustomInfo struct {
		DeviceStrategy any `json:"DeviceStrategy"`
		AIC            any `json:"AIC"`
	} `json:"custominfo"`
}

// Inventory implements devices.Vendor: the JSON register annotation; devcore
// is forced to 100 (HAMi: only for the card score); custominfo's
// DeviceStrategy "die" marks dies (Mode DieMode) and its AIC (a string)
// groups them by physical card (Group).
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	raw, ok := node.Annotations[RegisterAnnotation]
	if !ok {
		return nil, nil
	}
	cards, err := devices.DecodeInventory(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RegisterAnnotation, err)
	}
	if cards = devices.KeepModel(cards, VendorWord); len(cards) == 0 {
		return nil, fmt.Errorf("%s: no card type contains %s", RegisterAnnotation, VendorWord)
	}
	var infos []customInfo
	if err := json.Unmarshal([]byte(raw), &infos); err != nil {
		infos = nil // the legacy form has no custominfo
	}
	aics := map[string]int{}
	for i := range cards {
		c := &cards[i]
		c.Cores = 100
		c.Mode = devices.DefaultMode
		for _, info := range infos {
			if info.ID != c.UUID {
				continue
			}
			if s, ok := info.CustomInfo.DeviceStrategy.(string); ok && s == DieMode {
				c.Mode = DieMode
			}
			if aic, ok := info.CustomInfo.AIC.(string); ok {
				if _, seen := aics[aic]; !seen {
					aics[aic] = len(aics) + 1
				}
				c.Group = aics[aic]
			}
			break
		}
	}
	if !devices.CountAllocatable(node, v.names.Count) {
		return nil, fmt.Errorf("%s: allocatable %s is 0: the device plugin is not serving", RegisterAnnotation, v.names.Count)
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	return devices.RegisterChanged(old, updated, RegisterAnnotation, v.names.Count)
}

// ParsePod implements devices.Vendor: the count (limits, else requests);
// each card is asked as 100% memory and 0 cores (HAMi's request, which
// only orders the cards).
func (v *Vendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, devices.CountOnlyRequest(v.names.Count))
	if err != nil || !asked {
		return req, err
	}
	if req.Preferences, err = devices.UUIDPreferences(pod.Annotations, UseUUIDAnnotation, AvoidUUIDAnnotation); err != nil {
		return devices.PodRequest{}, err
	}
	return req, nil
}

// Fit implements devices.Vendor with HAMi's Vastai rules: health, uuid,
// shares, mutex; no memory or core check, grants record 0/0. In die mode
// (the node's first card is a die) mutex also refuses a die whose card
// (AIC) has a used die, and a container asking several dies takes them
// from the cards with the most fitting dies first.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	p := &req.Preferences
	die := len(cards) > 0 && cards[0].Mode == DieMode
	var occupied []bool // by AIC group, under mutex in die mode
	if die && p.Exclusive {
		occupied = make([]bool, len(cards)+1)
		for i := range cards {
			if used[i].Sharers > 0 && cards[i].Group > 0 && cards[i].Group < len(occupied) {
				occupied[cards[i].Group] = true
			}
		}
	}
	inits := req.Inits
	opts := devices.FitOptions{Check: func(ci int, c *devices.Card, u devices.Usage, _ devices.Request, placed devices.Assignment) (devices.Grant, devices.Refusal, bool) {
		switch {
		case !p.WantsUUID(c.UUID):
			return devices.Grant{}, devices.RefuseUUID, false
		case u.Sharers >= c.Split:
			return devices.Grant{}, devices.RefuseShares, false
		case p.Exclusive && u.Sharers > 0:
			return devices.Grant{}, devices.RefuseExclusive, false
		case occupied != nil && c.Group > 0 && c.Group < len(occupied) && (occupied[c.Group] || (ci >= inits && placedOnGroup(cards, placed, c.Group))):
			return devices.Grant{}, devices.RefuseExclusive, false
		}
		return devices.Grant{UUID: c.UUID, Vendor: VendorWord}, 0, true
	}}
	if die {
		opts.Pick = bestCombination
	}
	return devices.FitPodWith(VendorWord, cards, used, req, opts)
}

// placedOnGroup reports whether an earlier container of the pod took a die
// of the AIC group (HAMi sees it as used).
func placedOnGroup(cards []devices.Card, placed devices.Assignment, group int) bool {
	for _, ctr := range placed {
		for _, g := range ctr {
			for i := range cards {
				if cards[i].UUID == g.UUID && cards[i].Group == group {
					return true
				}
			}
		}
	}
	return false
}

// bestCombination is HAMi's computeBestCombination: the fitting dies
// grouped by AIC (dies without one are left out), groups with more
// fitting dies first (ties: first walked), n dies in walk order.
func bestCombination(cards []devices.Card, grants []devices.Grant, picked []int, n int) []devices.Grant {
	if len(grants) == n {
		return grants
	}
	type group struct{ id, count int }
	var groups []group
	for _, i := range picked {
		g := cards[i].Group
		if g == 0 {
			continue
		}
		k := slices.IndexFunc(groups, func(x group) bool { return x.id == g })
		if k < 0 {
			groups = append(groups, group{id: g})
			k = len(groups) - 1
		}
		groups[k].count++
	}
	slices.SortStableFunc(groups, func(a, b group) int { return b.count - a.count })
	out := make([]devices.Grant, 0, n)
	for _, gr := range groups {
		for k, i := range picked {
			if cards[i].Group == gr.id {
				out = append(out, grants[k])
				if len(out) == n {
					return out
				}
			}
		}
	}
	return out
}

// ScoreAssignment implements devices.NodeScorer: HAMi's die-mode score,
// per container the share of its dies on its largest AIC, summed; 0 when a
// die is not in die mode or has no AIC.
func (v *Vendor) ScoreAssignment(cards []devices.Card, a devices.Assignment) float64 {
	score := 0.0
	for _, ctr := range a {
		if len(ctr) == 0 {
			continue
		}
		counts := map[int]int{}
		for _, g := range ctr {
			i := slices.IndexFunc(cards, func(c devices.Card) bool { return c.UUID == g.UUID })
			if i < 0 || cards[i].Mode != DieMode || cards[i].Group == 0 {
				return 0
			}
			counts[cards[i].Group]++
		}
		best := 0
		for _, n := range counts {
			best = max(best, n)
		}
		score += float64(best) / float64(len(ctr))
	}
	return score
}

// Default implements devices.Vendor: detection only (count in limits).
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	if _, _, err := devices.ContainerQuantity(c, v.names.Count); err != nil {
		return false, err
	}
	_, ok := c.Resources.Limits[v.names.Count]
	return ok, nil
}
