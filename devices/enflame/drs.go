package enflame

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// DRSWord is HAMi's CommonWord and card type for DRS partitions.
const DRSWord = "Enflame"

// Annotation keys of the DRS backend. HAMi writes no to-allocate key.
const (
	DRSCapacityAnnotation  = "enflame.com/gcu-drs-capacity"
	DRSAllocatedAnnotation = "hami.io/enflame-vgpu-devices-allocated"

	UseUUIDAnnotation   = "enflame.com/use-gpuuuid"
	AvoidUUIDAnnotation = "enflame.com/nouse-gpuuuid"

	AssignedAnnotation         = "enflame.com/gcu-assigned"
	AssignedTimeAnnotation     = "enflame.com/gcu-assigned-time"
	AssignedIndexAnnotation    = "enflame.com/gcu-assigned-index"
	AssignedIDAnnotation       = "enflame.com/gcu-assigned-id"
	AssignedMinorAnnotation    = "enflame.com/gcu-assigned-minor"
	RequestSizeAnnotation      = "enflame.com/gcu-request-size"
	AssignedContainersAnnotion = "assigned-containers"
)

// Default resource names of the DRS backend (HAMi's fallbacks).
const (
	DefaultDRSName    = "enflame.com/drs-gcu"
	DefaultMemoryName = "enflame.com/gcu-memory"
	DefaultCoresName  = "enflame.com/gcu-core"
)

// bySpec marks (in Request.MemoryPercent, as HAMi's MemPercentagereq -1) a
// container that asks memory and/or cores; a container asking slices has
// 0 there and the slice count in MemoryMiB.
const bySpec = -1

// DRS implements devices.Vendor for Enflame DRS partitions.
type DRS struct {
	names devices.ResourceNames
	// specs holds each node's decoded capacity annotation (Inventory),
	// for the profile choice in Fit and AssignmentExtras.
	specs sync.Map // node name -> *nodeSpec
}

var (
	_ devices.Vendor       = &DRS{}
	_ devices.PodAnnotator = &DRS{}
)

// profile is one DRS profile of a node, e.g. 3g.20gb.
type profile struct {
	Name, ID string
	Slices   int
	MemoryGB int
	Percent  int
}

// nodeSpec is a node's DRS capacity: profiles by slices then memory, and
// each device's minor.
type nodeSpec struct {
	profiles []profile
	minors   map[int]string
}

// NewDRS returns the DRS vendor: ResourceCountName is the slices resource
// (HAMi's resourceNameDRSGCU, else resourceNameVGCU), ResourceMemoryName
// and ResourceCoresName the spec resources; empty names take HAMi's
// fallbacks.
func NewDRS(cfg devices.Config) (*DRS, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.OnlyRenames(devices.RenameMemory | devices.RenameCores) {
		return nil, fmt.Errorf("vendor %s: Enflame DRS takes only resourceCountName, resourceMemoryName and resourceCoresName", cfg.Name)
	}
	return &DRS{names: devices.ResourceNames{
		Count:  corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultDRSName)),
		Memory: corev1.ResourceName(cmp.Or(cfg.ResourceMemoryName, DefaultMemoryName)),
		Cores:  corev1.ResourceName(cmp.Or(cfg.ResourceCoresName, DefaultCoresName)),
	}}, nil
}

// Name implements devices.Vendor.
func (v *DRS) Name() string { return DRSWord }

// Resources implements devices.Vendor.
func (v *DRS) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor: no to-allocate key.
func (v *DRS) AssignmentAnnotations() (string, string) { return "", DRSAllocatedAnnotation }

var _ devices.NodeLocker = &DRS{}

// NodeLock implements devices.NodeLocker: HAMi takes no lock for DRS.
func (v *DRS) NodeLock() string { return "" }

// DRSCardID is the id HAMi gives the GCU of a node with a device index.
func DRSCardID(node string, index int) string {
	return node + "-enflame-drs-" + strconv.Itoa(index)
}

type drsCapacity struct {
	Devices []struct {
		Index    string          `json:"index"`
		Minor    string          `json:"minor"`
		Capacity json.RawMessage `json:"capacity"`
	} `json:"devices"`
	Profiles map[string]string `json:"profiles"`
}

// parseProfileName reads "<slices>g.<GB>gb" as HAMi does.
func parseProfileName(name string) (slices, gb int) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(name)), ".")
	if len(parts) < 2 {
		return 0, 0
	}
	s, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(parts[0]), "g"))
	if err != nil {
		return 0, 0
	}
	g, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(parts[1]), "gb"))
	if err != nil {
		return s, 0
	}
	return s, g
}

// Inventory implements devices.Vendor: one card per device of the
// capacity annotation, count = its slices, devmem = the largest profile's
// GB x 1024, devcore 100, type Enflame, always healthy.
func (v *DRS) Inventory(node *corev1.Node) ([]devices.Card, error) {
	raw, ok := node.Annotations[DRSCapacityAnnotation]
	if !ok {
		v.specs.Delete(node.Name)
		return nil, nil
	}
	fail := func(format string, args ...any) ([]devices.Card, error) {
		v.specs.Delete(node.Name)
		return nil, fmt.Errorf("%s: "+format, append([]any{DRSCapacityAnnotation}, args...)...)
	}
	var c drsCapacity
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return fail("%v", err)
	}
	maxSlices, maxGB := 0, 0
	for name := range c.Profiles {
		s, g := parseProfileName(name)
		maxSlices, maxGB = max(maxSlices, s), max(maxGB, g)
	}
	if maxSlices <= 0 {
		return fail("no valid DRS profile (<slices>g.<GB>gb)")
	}
	if maxGB <= 0 {
		maxGB = maxSlices
	}
	if maxGB > math.MaxInt32/1024 || maxSlices > math.MaxInt32/100 {
		return fail("profile too large")
	}
	spec := &nodeSpec{minors: map[int]string{}}
	for name, id := range c.Profiles {
		s, g := parseProfileName(name)
		if s <= 0 || g <= 0 {
			continue
		}
		spec.profiles = append(spec.profiles, profile{Name: name, ID: id, Slices: s, MemoryGB: g, Percent: (s*100 + maxSlices - 1) / maxSlices})
	}
	slices.SortFunc(spec.profiles, func(a, b profile) int {
		if a.Slices != b.Slices {
			return a.Slices - b.Slices
		}
		if a.MemoryGB != b.MemoryGB {
			return a.MemoryGB - b.MemoryGB
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(c.Devices) == 0 {
		return fail("no device")
	}
	if len(c.Devices) > maxCards {
		return fail("more than %d devices", maxCards)
	}
	cards := make([]devices.Card, 0, len(c.Devices))
	for pos, d := range c.Devices {
		idx, err := strconv.Atoi(d.Index)
		if err != nil {
			idx = pos
		}
		if idx < 0 {
			return fail("device index %d is negative", idx)
		}
		if _, dup := spec.minors[idx]; dup {
			return fail("device index %d twice", idx)
		}
		slicesCap, err := parseCapacity(d.Capacity)
		if err != nil || slicesCap <= 0 {
			return fail("device %d: invalid capacity %s", idx, string(d.Capacity))
		}
		minor := strings.TrimSpace(d.Minor)
		if minor == "" {
			minor = strconv.Itoa(idx)
		}
		spec.minors[idx] = minor
		cards = append(cards, devices.Card{
			UUID: DRSCardID(node.Name, idx), Index: idx, Split: slicesCap, MemoryMiB: int32(maxGB * 1024), Cores: 100,
			Model: DRSWord, Mode: devices.DefaultMode, Healthy: true,
		})
	}
	v.specs.Store(node.Name, spec)
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// parseCapacity reads a device's slices: a JSON number or a string.
func parseCapacity(raw json.RawMessage) (int32, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil {
		if math.IsNaN(f) || f > math.MaxInt32 || f < math.MinInt32 {
			return 0, fmt.Errorf("capacity %v out of range", f)
		}
		return int32(f), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("capacity is neither a number nor a string")
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, err
	}
	return int32(max(min(n, math.MaxInt32), math.MinInt32)), nil
}

// InventoryChanged implements devices.Vendor.
func (v *DRS) InventoryChanged(old, updated *corev1.Node) bool {
	return old.Annotations[DRSCapacityAnnotation] != updated.Annotations[DRSCapacityAnnotation] ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon]
}

// ParsePod implements devices.Vendor: each asking container wants one
// GCU; drs-gcu (limits, else requests) asks slices, else gcu-memory and/or
// gcu-core ask a profile by spec.
func (v *DRS) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, v.parseContainer)
	if err != nil || !asked {
		return req, err
	}
	if req.Preferences, err = devices.UUIDPreferences(pod.Annotations, UseUUIDAnnotation, AvoidUUIDAnnotation); err != nil {
		return devices.PodRequest{}, err
	}
	return req, nil
}

func (v *DRS) parseContainer(c *corev1.Container) (devices.Request, error) {
	s, ok, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil {
		return devices.Request{}, err
	}
	if ok && s > 0 {
		return devices.Request{Count: 1, MemoryMiB: s}, nil
	}
	mem, hasMem, err := devices.ContainerQuantity(c, v.names.Memory)
	if err != nil {
		return devices.Request{}, err
	}
	cores, hasCores, err := devices.ContainerQuantity(c, v.names.Cores)
	if err != nil {
		return devices.Request{}, err
	}
	if !hasMem && !hasCores {
		return devices.Request{}, nil
	}
	return devices.Request{Count: 1, MemoryMiB: mem, MemoryPercent: bySpec, Cores: cores}, nil
}

// choose picks the container's profile among the node's, as HAMi's
// selectProfileByRequest: slices exactly; or the first profile whose GB
// and percent cover the asked memory (GB, or MiB when above twice the
// largest profile's GB) and cores.
func (s *nodeSpec) choose(r devices.Request) (profile, bool) {
	if s == nil || len(s.profiles) == 0 {
		return profile{}, false
	}
	if r.MemoryPercent != bySpec {
		for _, p := range s.profiles {
			if p.Slices == int(r.MemoryMiB) {
				return p, true
			}
		}
		return profile{}, false
	}
	maxGB := s.profiles[len(s.profiles)-1].MemoryGB
	gb := int(r.MemoryMiB)
	if gb > 2*maxGB {
		gb = (gb + 1023) / 1024
	}
	for _, p := range s.profiles {
		if (gb > 0 && p.MemoryGB < gb) || (r.Cores > 0 && p.Percent < int(r.Cores)) {
			continue
		}
		return p, true
	}
	return profile{}, false
}

func (v *DRS) spec(cardID string) *nodeSpec {
	k := strings.LastIndex(cardID, "-enflame-drs-")
	if k < 0 {
		return nil
	}
	s, ok := v.specs.Load(cardID[:k])
	if !ok {
		return nil
	}
	return s.(*nodeSpec)
}

// Fit implements devices.Vendor: each container's profile is chosen from
// the node's profiles (none: every card refuses), then the walk takes the
// first card passing health, uuid, shares (slices), mutex, free memory >=
// the profile's GB x 1024 and free cores >= its percent.
func (v *DRS) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	var spec *nodeSpec
	if len(cards) > 0 {
		spec = v.spec(cards[0].UUID)
	}
	p := &req.Preferences
	lastCI, chosen, found := -1, profile{}, false
	return devices.FitPodWith(DRSWord, cards, used, req, devices.FitOptions{Check: func(ci int, c *devices.Card, u devices.Usage, r devices.Request, _ devices.Assignment) (devices.Grant, devices.Refusal, bool) {
		if ci != lastCI {
			lastCI = ci
			chosen, found = spec.choose(r)
		}
		if !found {
			return devices.Grant{}, devices.RefuseVendor, false
		}
		mem, pct := int32(chosen.MemoryGB*1024), int32(chosen.Percent)
		switch {
		case !p.WantsUUID(c.UUID):
			return devices.Grant{}, devices.RefuseUUID, false
		case u.Sharers >= c.Split:
			return devices.Grant{}, devices.RefuseShares, false
		case p.Exclusive && u.Sharers > 0:
			return devices.Grant{}, devices.RefuseExclusive, false
		case int64(c.MemoryMiB)-u.MemoryMiB < int64(mem):
			return devices.Grant{}, devices.RefuseMemory, false
		case c.Cores > 0 && int64(c.Cores)-u.Cores < int64(pct):
			return devices.Grant{}, devices.RefuseCores, false
		}
		return devices.Grant{UUID: c.UUID, Vendor: DRSWord, MemoryMiB: mem, Cores: pct}, 0, true
	}})
}

// assignedContainer is one entry of assigned-containers.
type assignedContainer struct {
	Allocated   bool   `json:"allocated"`
	Request     int32  `json:"request"`
	ProfileID   string `json:"profileID,omitempty"`
	ProfileName string `json:"profileName,omitempty"`
}

// AssignmentExtras implements devices.PodAnnotator: gcu-assigned "false",
// the time, assigned-containers (per container name: slices and profile),
// and from the first container with a GCU its index (as index and id),
// minor and slices.
func (v *DRS) AssignmentExtras(pod *corev1.Pod, a devices.Assignment, now time.Time) (map[string]string, error) {
	req, err := v.ParsePod(pod)
	if err != nil {
		return nil, err
	}
	ctrs := devices.Containers(pod)
	out := map[string]string{}
	assigned := map[string]assignedContainer{}
	for ci, grants := range a {
		if len(grants) == 0 {
			continue
		}
		if ci >= len(ctrs) || ci >= len(req.Containers) {
			return nil, fmt.Errorf("assignment has %d containers, pod %d", len(a), len(ctrs))
		}
		g := grants[0]
		spec := v.spec(g.UUID)
		chosen, ok := spec.choose(req.Containers[ci])
		if !ok {
			return nil, fmt.Errorf("card %s: the node's DRS profiles are unknown or changed", g.UUID)
		}
		idx, err := strconv.Atoi(g.UUID[strings.LastIndex(g.UUID, "-")+1:])
		if err != nil {
			return nil, fmt.Errorf("card %q is not a DRS card id", g.UUID)
		}
		assigned[ctrs[ci].Name] = assignedContainer{Request: int32(max(chosen.Slices, 1)), ProfileID: chosen.ID, ProfileName: chosen.Name}
		if _, set := out[AssignedIndexAnnotation]; !set {
			out[AssignedIndexAnnotation] = strconv.Itoa(idx)
			out[AssignedIDAnnotation] = strconv.Itoa(idx)
			out[AssignedMinorAnnotation] = spec.minors[idx]
			out[RequestSizeAnnotation] = strconv.Itoa(max(chosen.Slices, 1))
		}
	}
	if len(assigned) == 0 {
		return nil, nil
	}
	payload, err := json.Marshal(assigned)
	if err != nil {
		return nil, err
	}
	out[AssignedContainersAnnotion] = string(payload)
	out[AssignedAnnotation] = "false"
	out[AssignedTimeAnnotation] = strconv.FormatInt(now.UnixNano(), 10)
	return out, nil
}

// Default implements devices.Vendor with HAMi's admission rules: drs-gcu
// (limits, else requests) must be > 0 and is copied into whichever of
// limits and requests lacks it; otherwise gcu-memory must be > 0 and
// gcu-core in 1-100, each copied likewise.
func (v *DRS) Default(c *corev1.Container) (bool, error) {
	if _, ok, err := devices.ContainerQuantity(c, v.names.Count); err != nil || ok {
		if err == nil {
			if s, _, _ := devices.ContainerQuantity(c, v.names.Count); s == 0 {
				err = fmt.Errorf("%s must be greater than 0", v.names.Count)
			}
		}
		if err != nil {
			return false, err
		}
		copyMissing(c, v.names.Count)
		return true, nil
	}
	mem, hasMem, err := devices.ContainerQuantity(c, v.names.Memory)
	if err != nil {
		return false, err
	}
	cores, hasCores, err := devices.ContainerQuantity(c, v.names.Cores)
	if err != nil {
		return false, err
	}
	switch {
	case !hasMem && !hasCores:
		return false, nil
	case hasMem && mem == 0:
		return false, fmt.Errorf("%s must be greater than 0", v.names.Memory)
	case hasCores && (cores == 0 || cores > 100):
		return false, fmt.Errorf("%s must be in range (0,100]", v.names.Cores)
	}
	if hasMem {
		copyMissing(c, v.names.Memory)
	}
	if hasCores {
		copyMissing(c, v.names.Cores)
	}
	return true, nil
}

// copyMissing writes the resource's value into whichever of limits and
// requests lacks it (limits win).
func copyMissing(c *corev1.Container, name corev1.ResourceName) {
	q, ok := c.Resources.Limits[name]
	if !ok {
		q = c.Resources.Requests[name]
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if _, ok := c.Resources.Limits[name]; !ok {
		c.Resources.Limits[name] = q
	}
	if _, ok := c.Resources.Requests[name]; !ok {
		c.Resources.Requests[name] = q
	}
}
