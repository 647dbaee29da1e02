package metax

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

// Annotation keys of the sGPU vendor.
const (
	SGPURegisterAnnotation   = "metax-tech.com/node-gpu-devices"
	SGPUToAllocateAnnotation = "hami.io/metax-sgpu-devices-to-allocate"
	SGPUAllocatedAnnotation  = "hami.io/metax-sgpu-devices-allocated"

	// DevicesAllocatedAnnotation is MetaX's own copy of the assignment:
	// JSON, per container, [{"uuid","compute","vRam"}].
	DevicesAllocatedAnnotation = "metax-tech.com/gpu-devices-allocated"
	// PredicateTimeAnnotation is the decision time in unix nanoseconds.
	PredicateTimeAnnotation = "metax-tech.com/predicate-time"

	SGPUUseUUIDAnnotation   = "metax-tech.com/use-gpuuuid"
	SGPUAvoidUUIDAnnotation = "metax-tech.com/nouse-gpuuuid"

	QoSPolicyAnnotation     = "metax-tech.com/sgpu-qos-policy"
	TopologyAwareAnnotation = "metax-tech.com/sgpu-topology-aware"
	AppClassAnnotation      = "metax-tech.com/sgpu-app-class"
)

// QoS policies and app classes.
const (
	BestEffort = "best-effort"
	FixedShare = "fixed-share"
	BurstShare = "burst-share"

	Online  = "online"
	Offline = "offline"
)

// SGPUWord is HAMi's CommonWord, card type and grant type of sGPUs.
const SGPUWord = "Metax-SGPU"

// Default resource names (HAMi's chart).
const (
	DefaultSGPUCountName  = "metax-tech.com/sgpu"
	DefaultSGPUMemoryName = "metax-tech.com/vmemory"
	DefaultSGPUCoresName  = "metax-tech.com/vcore"
)

// SGPUConfig is the sGPU part of HAMi's metax section, carried in
// devices.Config.Vendor.
type SGPUConfig struct {
	ResourceVCountName  string
	ResourceVMemoryName string
	ResourceVCoreName   string
	// TopologyAware is sgpuTopologyAware: exclusive placements are scored
	// by MetaLink pairs unless the pod's annotation says otherwise.
	TopologyAware bool
}

// sharingRefused marks, in Fit's copy of the cards, a used card whose app
// class or QoS policy refuses the pod; it is contained in no pod's mode.
const sharingRefused = "\x00"

// The parts of an sGPU pod's Preferences.Mode (podMode).
const (
	podClassPrefix = "class="
	podQoSPrefix   = "qos="
)

// podMode is the Preferences.Mode of an sGPU pod: "qos=<policy>" (the
// policy possibly empty), after "class=<app class> " for an online or
// offline pod.
func podMode(class, qos string) string {
	if class == "" {
		return podQoSPrefix + qos
	}
	return podClassPrefix + class + " " + podQoSPrefix + qos
}

// parseMode splits a podMode into the app class and the QoS policy.
func parseMode(mode string) (class, qos string) {
	for _, c := range [...]string{Online, Offline} {
		if rest, ok := strings.CutPrefix(mode, podClassPrefix+c+" "); ok {
			qos, _ = strings.CutPrefix(rest, podQoSPrefix)
			return c, qos
		}
	}
	qos, _ = strings.CutPrefix(mode, podQoSPrefix)
	return "", qos
}

// SGPUVendor implements devices.Vendor for MetaX sGPUs.
type SGPUVendor struct {
	names         devices.ResourceNames
	topologyAware bool
	// pending is HAMi's JitteryQosCache: the QoS policy a card will have
	// once the device plugin serves the pods placed on it, by card uuid,
	// until the register annotation reports it.
	mu      sync.Mutex
	pending map[string]string
}

var (
	_ devices.Vendor       = &SGPUVendor{}
	_ devices.PodAnnotator = &SGPUVendor{}
	_ devices.PodDefaulter = &SGPUVendor{}
	_ devices.MemoryScaler = &SGPUVendor{}

	_ devices.GrantClassifier     = &SGPUVendor{}
	_ devices.PolicyNeutralScorer = &SGPUVendor{}
)

// NewSGPU returns the sGPU vendor configured by the SGPUConfig in
// cfg.Vendor (nil: HAMi's chart names, topology awareness off).
func NewSGPU(cfg devices.Config) (*SGPUVendor, error) {
	var sc SGPUConfig
	if cfg.Vendor != nil {
		var ok bool
		if sc, ok = cfg.Vendor.(SGPUConfig); !ok {
			return nil, fmt.Errorf("vendor %s: want a metax.SGPUConfig, got %T", cfg.Name, cfg.Vendor)
		}
	}
	shared := cfg
	shared.Name, shared.Vendor = "", nil
	if !isZero(shared) {
		return nil, fmt.Errorf("vendor %s: set the sGPU resources in the metax section (resourceVCountName, resourceVMemoryName, resourceVCoreName)", cfg.Name)
	}
	return &SGPUVendor{
		names: devices.ResourceNames{
			Count:  corev1.ResourceName(cmp.Or(sc.ResourceVCountName, DefaultSGPUCountName)),
			Memory: corev1.ResourceName(cmp.Or(sc.ResourceVMemoryName, DefaultSGPUMemoryName)),
			Cores:  corev1.ResourceName(cmp.Or(sc.ResourceVCoreName, DefaultSGPUCoresName)),
		},
		topologyAware: sc.TopologyAware,
		pending:       map[string]string{},
	}, nil
}

// Name implements devices.Vendor.
func (v *SGPUVendor) Name() string { return SGPUWord }

// Resources implements devices.Vendor.
func (v *SGPUVendor) Resources() devices.ResourceNames { return v.names }

// MemoryFactor implements devices.MemoryScaler: HAMi scales the vmemory
// quota by 1024 (a bare vmemory is GiB).
func (v *SGPUVendor) MemoryFactor() int32 { return 1024 }

// AssignmentAnnotations implements devices.Vendor.
func (v *SGPUVendor) AssignmentAnnotations() (string, string) {
	return SGPUToAllocateAnnotation, SGPUAllocatedAnnotation
}

// NodeLock: HAMi takes hami.io/mutex.lock for sGPU pods.
func (v *SGPUVendor) NodeLock() string { return devices.NodeLock }

// registeredSGPU is one element of metax-tech.com/node-gpu-devices.
type registeredSGPU struct {
	UUID          string `json:"uuid"`
	Model         string `json:"model"`
	TotalDevCount int32  `json:"totalDevCount"`
	TotalCompute  int32  `json:"totalCompute"`
	TotalVRam     int32  `json:"totalVRam"`
	Numa          int32  `json:"numa"`
	Healthy       bool   `json:"healthy"`
	QosPolicy     string `json:"qosPolicy"`
	LinkZone      int32  `json:"linkZone"`
}

// Inventory implements devices.Vendor: the JSON list of
// metax-tech.com/node-gpu-devices; index = list position, count =
// totalDevCount, memory = totalVRam, cores = totalCompute, Group = linkZone
// and Mode = qosPolicy. It also drops the pending QoS policies the list now
// reports (HAMi's JitteryQosCache.Sync).
func (v *SGPUVendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	raw, ok := node.Annotations[SGPURegisterAnnotation]
	if !ok {
		return nil, nil
	}
	cards, err := decodeSGPUs(raw)
	if err != nil || len(cards) == 0 {
		return nil, err
	}
	v.mu.Lock()
	for _, c := range cards {
		if want, ok := v.pending[c.UUID]; ok && want == c.Mode {
			delete(v.pending, c.UUID)
		}
	}
	v.mu.Unlock()
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

func decodeSGPUs(raw string) ([]devices.Card, error) {
	var list []*registeredSGPU
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, fmt.Errorf("%s is not a JSON list of devices: %v", SGPURegisterAnnotation, err)
	}
	cards := make([]devices.Card, 0, len(list))
	for i, d := range list {
		if d == nil {
			return nil, fmt.Errorf("%s: device %d is null", SGPURegisterAnnotation, i)
		}
		switch {
		case d.UUID == "":
			return nil, fmt.Errorf("%s: device %d has no uuid", SGPURegisterAnnotation, i)
		case strings.ContainsAny(d.UUID, ",:;"):
			return nil, fmt.Errorf("%s: device uuid %q contains a separator (, : or ;)", SGPURegisterAnnotation, d.UUID)
		case slices.ContainsFunc(cards, func(c devices.Card) bool { return c.UUID == d.UUID }):
			// HAMi keeps both; the first is the safe equivalent.
			continue
		}
		cards = append(cards, devices.Card{
			UUID: d.UUID, Index: i, Split: d.TotalDevCount, MemoryMiB: d.TotalVRam, Cores: d.TotalCompute,
			Model: SGPUWord, NUMA: int(d.Numa), Group: int(d.LinkZone), Mode: d.QosPolicy,
			Healthy: d.Healthy && d.TotalDevCount >= 0 && d.TotalVRam >= 0 && d.TotalCompute >= 0,
		})
	}
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *SGPUVendor) InventoryChanged(old, updated *corev1.Node) bool {
	return old.Annotations[SGPURegisterAnnotation] != updated.Annotations[SGPURegisterAnnotation] ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon]
}

// limitsOnly is the container with its requests hidden: sGPU resources
// are read from limits alone.
func limitsOnly(c *corev1.Container) *corev1.Container {
	return &corev1.Container{Name: c.Name, Resources: corev1.ResourceRequirements{Limits: c.Resources.Limits}}
}

// ParsePod implements devices.Vendor. The pod's app class
// (metax-tech.com/sgpu-app-class) and QoS policy travel in
// Preferences.Mode (podMode). An app class other than online or offline is
// an error, as in HAMi's webhook (HAMi's scheduler would treat such a pod
// as one without app class, minus the MetaLink choice). The count of an
// app-class container is not checked: HAMi's webhook asks 1 (DefaultInPod),
// its scheduler does not.
func (v *SGPUVendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, func(c *corev1.Container) (devices.Request, error) {
		return v.parseContainer(limitsOnly(c))
	})
	if err != nil || !asked {
		return devices.PodRequest{}, err
	}
	a := pod.Annotations
	class, ok := a[AppClassAnnotation]
	if ok && class != Online && class != Offline {
		return devices.PodRequest{}, fmt.Errorf("annotation %s=%q: must be one of %s, %s", AppClassAnnotation, class, Online, Offline)
	}
	if req.Preferences, err = devices.UUIDPreferences(a, SGPUUseUUIDAnnotation, SGPUAvoidUUIDAnnotation); err != nil {
		return devices.PodRequest{}, err
	}
	req.Preferences.Mode = podMode(class, a[QoSPolicyAnnotation])
	return req, nil
}

// parseContainer reads one container's limits: count > 0; vcore (none is
// 100, at most 100); vmemory: a bare number is GiB, a number with a unit
// is bytes, rounded down to MiB (none or 0 is the whole card).
func (v *SGPUVendor) parseContainer(c *corev1.Container) (devices.Request, error) {
	count, _, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil || count == 0 {
		return devices.Request{}, err
	}
	r := devices.Request{Count: count, Cores: 100}
	if cores, ok, err := devices.ContainerQuantity(c, v.names.Cores); err != nil {
		return devices.Request{}, err
	} else if ok {
		if cores > 100 {
			// HAMi's card check refuses it on every card.
			return devices.Request{}, fmt.Errorf("%s %d is above 100", v.names.Cores, cores)
		}
		r.Cores = cores
	}
	if q, ok := c.Resources.Limits[v.names.Memory]; ok {
		n, exact := q.AsInt64()
		if !exact || n < 0 {
			return devices.Request{}, fmt.Errorf("%s is not a whole non-negative number", v.names.Memory)
		}
		hasUnit := strings.IndexFunc(q.String(), func(c rune) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }) >= 0
		if hasUnit {
			n = n / 1024 / 1024
		} else {
			if n > math.MaxInt32/1024 {
				return devices.Request{}, fmt.Errorf("%s %s GiB is above %d MiB", v.names.Memory, q.String(), math.MaxInt32)
			}
			n *= 1024
		}
		if n > math.MaxInt32 {
			return devices.Request{}, fmt.Errorf("%s %s is above %d MiB", v.names.Memory, q.String(), math.MaxInt32)
		}
		r.MemoryMiB = int32(n)
	}
	if r.MemoryMiB == 0 {
		r.MemoryPercent = 100
	}
	return r, nil
}

// Fit implements devices.Vendor: HAMi's sGPU fit (sdevice.go Fit). The
// app classes of the pods on each card are used[i].Online and Offline
// (grants stamped by this Fit and by the usage cache, see GrantClass). Per
// card, after health and type: the app class rule (appClassFits), then
// for pods that are not online the QoS rule (a used card takes the pod
// only when its pending or registered policy is empty or the pod's), then
// the uuid, shares, mutex and memory rules, and for pods that are not
// online the core rules. Among the cards that pass: online pods take the
// least busy (pickOnline), offline pods the first walked, exclusive
// containers (100 cores) without app class HAMi's MetaLink choice
// (pickExclusive). The grants returned carry the pod's class.
func (v *SGPUVendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	class, qos := parseMode(req.Preferences.Mode)
	view := v.cardView(cards, used, class, qos)
	a, rej := devices.FitPodWith(SGPUWord, view, used, req, fitOptions(class, used, &req.Preferences))
	if rej != nil {
		return nil, rej
	}
	return a.WithClass(grantClass(class)), nil
}

// cardView is Fit's copy of the cards: Mode is sharingRefused on the used
// cards whose app class (appClassFits) or QoS policy refuses the pod, as
// HAMi's checkAppClass and checkDeviceQos do (online pods skip the QoS
// rule), and empty on the others.
func (v *SGPUVendor) cardView(cards []devices.Card, used []devices.Usage, class, podQoS string) []devices.Card {
	view := append(make([]devices.Card, 0, len(cards)), cards...)
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := range view {
		qos := view[i].Mode
		if p, ok := v.pending[view[i].UUID]; ok {
			qos = p
		}
		view[i].Mode = ""
		if used[i].Sharers == 0 {
			continue
		}
		qosRefuses := class != Online && qos != "" && qos != podQoS
		if qosRefuses || !appClassFits(class, used[i]) {
			view[i].Mode = sharingRefused
		}
	}
	return view
}

// fitOptions are the per-class rules: online pods skip the core rules and
// take the least busy cards, offline pods take the first cards walked,
// pods without app class get HAMi's MetaLink choice when exclusive.
func fitOptions(class string, used []devices.Usage, p *devices.Preferences) devices.FitOptions {
	switch class {
	case Online:
		return devices.FitOptions{Check: appClassCheck(true, p), Pick: pickOnline(used), PickAll: true}
	case Offline:
		return devices.FitOptions{Check: appClassCheck(false, p)}
	}
	return devices.FitOptions{Pick: pickExclusive, PickAll: true}
}

// pickExclusive is HAMi's prioritizeExclusiveDevices for exclusive
// containers (100 cores): the smallest MetaLink zone (> 0) that holds all
// n cards, else cards across zones (smaller zones first), then cards
// without a zone. Other containers take the first n cards walked. Zones
// of equal size keep walk order (HAMi's order among them is random).
func pickExclusive(cards []devices.Card, grants []devices.Grant, picked []int, n int) []devices.Grant {
	if len(grants) <= n || grants[0].Cores != 100 {
		return grants[:n:n]
	}
	type zone struct{ id, size int }
	var buf [16]zone
	zones := buf[:0]
	for _, ci := range picked {
		z := cards[ci].Group
		if z <= 0 {
			continue
		}
		at := slices.IndexFunc(zones, func(x zone) bool { return x.id == z })
		if at < 0 {
			zones = append(zones, zone{id: z})
			at = len(zones) - 1
		}
		zones[at].size++
	}
	// Smaller zones first, equal sizes in walk order (insertion sort).
	for a := 1; a < len(zones); a++ {
		for b := a; b > 0 && zones[b].size < zones[b-1].size; b-- {
			zones[b], zones[b-1] = zones[b-1], zones[b]
		}
	}
	out := make([]devices.Grant, 0, n)
	take := func(z int) bool {
		for k, ci := range picked {
			if g := cards[ci].Group; g == z || (z <= 0 && g <= 0) {
				if out = append(out, grants[k]); len(out) == n {
					return true
				}
			}
		}
		return false
	}
	for _, z := range zones {
		if z.size >= n {
			take(z.id)
			return out
		}
	}
	for _, z := range zones {
		if take(z.id) {
			return out
		}
	}
	if take(0) {
		return out
	}
	return grants[:n:n]
}

// sgpuAllocation is one card of MetaX's own assignment annotation.
type sgpuAllocation struct {
	UUID    string `json:"uuid"`
	Compute int32  `json:"compute,omitempty"`
	VRam    int32  `json:"vRam,omitempty"`
}

// AssignmentExtras implements devices.PodAnnotator: HAMi's
// metax-tech.com/gpu-devices-allocated (JSON, one list per container, empty
// lists included; an online grant's 0 compute is left out, as HAMi's
// omitempty does) and metax-tech.com/predicate-time (unix nanoseconds). For
// a pod that is not online it also records the QoS policy each card will
// take (the pod's, or none for an exclusive container) until the register
// annotation reports it (HAMi's PatchAnnotations, addJitteryQos).
func (v *SGPUVendor) AssignmentExtras(pod *corev1.Pod, a devices.Assignment, now time.Time) (map[string]string, error) {
	out := make([][]sgpuAllocation, len(a))
	for i, ctr := range a {
		out[i] = make([]sgpuAllocation, 0, len(ctr))
		for _, g := range ctr {
			out[i] = append(out[i], sgpuAllocation{UUID: g.UUID, Compute: g.Cores, VRam: g.MemoryMiB})
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var qos string
	if pod != nil {
		qos = pod.Annotations[QoSPolicyAnnotation]
	}
	extras := map[string]string{
		DevicesAllocatedAnnotation: string(data),
		PredicateTimeAnnotation:    strconv.FormatInt(now.UnixNano(), 10),
	}
	if PodAppClass(pod) == Online {
		return extras, nil
	}
	v.mu.Lock()
	a.Grants(func(g devices.Grant) {
		want := qos
		if g.Cores == 100 {
			want = ""
		}
		v.pending[g.UUID] = want
	})
	v.mu.Unlock()
	return extras, nil
}

// ScorePlacement implements devices.PolicyNeutralScorer: HAMi's sGPU
// node score (sdevice.go ScoreNode; policy neutral, higher is better) of
// the assignment a: for an online pod scoreOnline from the app classes of
// the pods on the cards (used[i].Online and Offline); else scoreExclusive.
// HAMi multiplies it by 10000, and by -10000 under node spread. used is
// the usage before the pod.
func (v *SGPUVendor) ScorePlacement(pod *corev1.Pod, cards []devices.Card, used []devices.Usage, a devices.Assignment) float64 {
	if PodAppClass(pod) == Online {
		return float64(scoreOnline(cards, used, a))
	}
	return v.scoreExclusive(pod, cards, used, a)
}

// ScoredAnnotations implements devices.PolicyNeutralScorer: ScorePlacement
// reads the pod's app class and its topology-aware override.
func (v *SGPUVendor) ScoredAnnotations() []string {
	return []string{AppClassAnnotation, TopologyAwareAnnotation}
}

// scoreExclusive is HAMi's scoreExclusiveDevices: when the pod has an
// exclusive card (100 cores; offline pods included) and topology awareness
// is on (sgpuTopologyAware, overridden by the pod's
// metax-tech.com/sgpu-topology-aware), 10A - (F - A - R), where F, A and R
// are the MetaLink pair scores of the cards free before the pod, the
// exclusive cards chosen, and the free cards left; else 0.
func (v *SGPUVendor) scoreExclusive(pod *corev1.Pod, cards []devices.Card, used []devices.Usage, a devices.Assignment) float64 {
	var chosen []int // card indexes of exclusive grants
	a.Grants(func(g devices.Grant) {
		if g.Cores != 100 {
			return
		}
		for i := range cards {
			if cards[i].UUID == g.UUID {
				chosen = append(chosen, i)
			}
		}
	})
	if len(chosen) == 0 {
		return 0
	}
	aware := v.topologyAware
	if pod != nil {
		if s, ok := pod.Annotations[TopologyAwareAnnotation]; ok {
			if b, err := strconv.ParseBool(s); err == nil {
				aware = b
			}
		}
	}
	if !aware {
		return 0
	}
	var free, rest []int
	for i := range cards {
		if used[i].Sharers == 0 {
			free = append(free, i)
			if !slices.Contains(chosen, i) {
				rest = append(rest, i)
			}
		}
	}
	pairs := func(idx []int) int {
		s := 0
		for x := range idx {
			for y := x + 1; y < len(idx); y++ {
				cx, cy := &cards[idx[x]], &cards[idx[y]]
				if cx.UUID != cy.UUID && cx.Group != 0 && cx.Group == cy.Group {
					s += 10
				}
			}
		}
		return s
	}
	fs, as, rs := pairs(free), pairs(chosen), pairs(rest)
	return float64(10*as - (fs - as - rs))
}

// Default implements devices.Vendor (see DefaultInPod).
func (v *SGPUVendor) Default(c *corev1.Container) (bool, error) {
	return v.DefaultInPod(&corev1.Pod{}, c)
}

// DefaultInPod implements devices.PodDefaulter: HAMi's sGPU webhook. A
// container with the count in its limits asks for sGPUs; an app class must
// be online or offline and then the count must be 1; a pod that is not
// online gets metax-tech.com/sgpu-qos-policy: best-effort when it has
// none, and an unknown policy is refused.
func (v *SGPUVendor) DefaultInPod(pod *corev1.Pod, c *corev1.Container) (bool, error) {
	q, ok := c.Resources.Limits[v.names.Count]
	if !ok {
		return false, nil
	}
	if _, err := v.parseContainer(limitsOnly(c)); err != nil {
		return false, err
	}
	class, hasClass := pod.Annotations[AppClassAnnotation]
	if hasClass {
		if class != Online && class != Offline {
			return false, fmt.Errorf("%s must be set one of [%s, %s]", AppClassAnnotation, Online, Offline)
		}
		if q.Value() != 1 {
			return false, fmt.Errorf("app-class pod must request single device")
		}
	}
	if class == Online {
		return true, nil
	}
	qos, ok := pod.Annotations[QoSPolicyAnnotation]
	if !ok {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[QoSPolicyAnnotation] = BestEffort
		return true, nil
	}
	switch qos {
	case BestEffort, FixedShare, BurstShare:
		return true, nil
	}
	return false, fmt.Errorf("%s must be set one of [%s, %s, %s]", QoSPolicyAnnotation, BestEffort, FixedShare, BurstShare)
}
