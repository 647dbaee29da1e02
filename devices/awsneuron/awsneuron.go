// Package awsneuron is the AWS Neuron vendor: HAMi's placement of
// Inferentia/Trainium devices and NeuronCores (pkg/device/awsneuron), with
// devices synthesised from the node's capacity and the pod annotations the
// Neuron device plugin reads.
package awsneuron

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// VendorWord is HAMi's CommonWord and device type for AWS Neuron.
const VendorWord = "AWSNeuron"

// Annotation keys. HAMi writes no to-allocate key for Neuron.
const (
	AllocatedAnnotation = "hami.io/aws-neuron-devices-allocated"

	UseUUIDAnnotation   = "aws.amazon.com/use-neuron-uuid"
	AvoidUUIDAnnotation = "aws.amazon.com/nouse-neuron-uuid"

	// IDsAnnotation lists, over all containers, device indexes (containers
	// whose limits ask devices) or NeuronCore ids (the others).
	IDsAnnotation = "AWS_NEURON_IDS"
	// ResourceTypeAnnotation is the core resource name, set when core ids
	// are listed.
	ResourceTypeAnnotation = "NEURON_RESOURCE_TYPE"
	// AllocTimeAnnotation is the decision time in unix nanoseconds.
	AllocTimeAnnotation = "NEURON_ALLOC_TIME"
	// AllocatedFlagAnnotation is "false" until the device plugin serves.
	AllocatedFlagAnnotation = "NEURON_ALLOCATED"
	// PredicateNodeAnnotation is the chosen node's name.
	PredicateNodeAnnotation = "aws.amazon.com/predicate-node"

	// InstanceTypeLabel is the node label whose value decides the
	// multi-device rule.
	InstanceTypeLabel = "node.kubernetes.io/instance-type"
)

// Default resource names (HAMi's chart).
const (
	DefaultCountName = "aws.amazon.com/neuron"
	DefaultCoresName = "aws.amazon.com/neuroncore"
)

const (
	// SplitCores is the most NeuronCores of one device a core request may
	// take (HAMi's maxCoresPerNeuronDevice).
	SplitCores = 2
	// GroupRing marks devices of an Inferentia instance (type containing
	// "inf" or "Inf"): several devices may be any contiguous run.
	GroupRing = 1
	// maxDevices bounds the devices synthesised from a node's capacity.
	maxDevices = 1024
	// maxCoresPerDevice bounds the core bitmask.
	maxCoresPerDevice = 30
	// wholeDevices marks (in Request.MemoryPercent) a container that asks
	// devices: each takes all of a device's cores, known per node.
	wholeDevices = 100
)

// Vendor implements devices.Vendor for AWS Neuron devices.
type Vendor struct {
	names devices.ResourceNames
	// coresPerDevice remembers each node's NeuronCores per device (from
	// Inventory) for the core ids of AssignmentExtras.
	coresPerDevice sync.Map
}

var (
	_ devices.Vendor       = &Vendor{}
	_ devices.PodAnnotator = &Vendor{}
)

// New returns the AWS Neuron vendor with cfg's resource names over HAMi's
// defaults.
func New(cfg devices.Config) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.OnlyRenames(devices.RenameCores) {
		return nil, fmt.Errorf("vendor %s: AWS Neuron takes only resourceCountName and resourceCoresName", cfg.Name)
	}
	return &Vendor{names: devices.ResourceNames{
		Count: corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultCountName)),
		Cores: corev1.ResourceName(cmp.Or(cfg.ResourceCoresName, DefaultCoresName)),
	}}, nil
}

// Name implements devices.Vendor.
func (v *Vendor) Name() string { return VendorWord }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor: no to-allocate key.
func (v *Vendor) AssignmentAnnotations() (string, string) { return "", AllocatedAnnotation }

var _ devices.NodeLocker = &Vendor{}

// NodeLock implements devices.NodeLocker: the node lock key HAMi takes for this vendor: none.
func (v *Vendor) NodeLock() string { return "" }

// CardID is the id HAMi gives the i-th device of a node.
func CardID(node string, i int) string { return node + "-" + VendorWord + "-" + strconv.Itoa(i) }

// Inventory implements devices.Vendor: capacity(neuron) devices, each with
// capacity(neuroncore) / devices cores; a device's Split is its core
// count and its Cores the bitmask of them (2 cores: 3), as HAMi registers
// them. Group is GroupRing on Inferentia instances.
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	n, ok, err := devices.WholeCapacity(node, v.names.Count)
	if err != nil || !ok || n == 0 {
		return nil, err
	}
	if n > maxDevices {
		return nil, fmt.Errorf("capacity %s %d is above %d devices", v.names.Count, n, maxDevices)
	}
	cores, _, err := devices.WholeCapacity(node, v.names.Cores)
	if err != nil {
		return nil, err
	}
	cpd := cores / n
	if cpd > maxCoresPerDevice {
		return nil, fmt.Errorf("capacity %s %d over %d devices is above %d cores per device", v.names.Cores, cores, n, maxCoresPerDevice)
	}
	v.coresPerDevice.Store(node.Name, int(cpd))
	group := 0
	if t := node.Labels[InstanceTypeLabel]; strings.Contains(t, "inf") || strings.Contains(t, "Inf") {
		group = GroupRing
	}
	cards := make([]devices.Card, n)
	for i := range cards {
		cards[i] = devices.Card{
			UUID: CardID(node.Name, i), Index: i, Split: int32(cpd), Cores: int32(1)<<cpd - 1,
			Model: VendorWord, Mode: devices.DefaultMode, Group: group, Healthy: true,
		}
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	return devices.CapacityChanged(old, updated, v.names.Count) || devices.CapacityChanged(old, updated, v.names.Cores) ||
		old.Labels[InstanceTypeLabel] != updated.Labels[InstanceTypeLabel] ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon]
}

// ParsePod implements devices.Vendor. A container asking neuron gets that
// many whole devices; otherwise neuroncore C is one device with C cores
// when C <= 2, else C / 2 whole devices.
func (v *Vendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, v.parseContainer)
	if err != nil || !asked {
		return req, err
	}
	if req.Preferences, err = devices.UUIDPreferences(pod.Annotations, UseUUIDAnnotation, AvoidUUIDAnnotation); err != nil {
		return devices.PodRequest{}, err
	}
	return req, nil
}

func (v *Vendor) parseContainer(c *corev1.Container) (devices.Request, error) {
	n, ok, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil {
		return devices.Request{}, err
	}
	if ok {
		if n == 0 {
			return devices.Request{}, fmt.Errorf("%s must be greater than 0", v.names.Count)
		}
		return devices.Request{Count: n, MemoryPercent: wholeDevices}, nil
	}
	cores, ok, err := devices.ContainerQuantity(c, v.names.Cores)
	if err != nil || !ok {
		return devices.Request{}, err
	}
	count, per, err := v.splitCores(int64(cores))
	if err != nil {
		return devices.Request{}, err
	}
	return devices.Request{Count: count, Cores: per}, nil
}

// splitCores maps a NeuronCore count onto devices as HAMi does.
func (v *Vendor) splitCores(cores int64) (int32, int32, error) {
	switch {
	case cores <= 0:
		return 0, 0, fmt.Errorf("%s must be greater than 0", v.names.Cores)
	case cores <= SplitCores:
		return 1, int32(cores), nil
	case cores%SplitCores != 0:
		return 0, 0, fmt.Errorf("%s must be 1 or a multiple of %d, got %d", v.names.Cores, SplitCores, cores)
	case cores/SplitCores > math.MaxInt32:
		return 0, 0, fmt.Errorf("%s %d needs too many devices", v.names.Cores, cores)
	}
	return int32(cores / SplitCores), SplitCores, nil
}

// Fit implements devices.Vendor with HAMi's two paths. One device: the
// walk with health, uuid, shares (cores per device), mutex and free cores
// counted on the bitmask; the grant's cores are a bitmask (both cores: 3;
// one core on an idle device: 1; on a half-used device: the other bit).
// Several devices: a contiguous run of unused devices by index (any run
// on Inferentia, else 4, 8 or 16 starting at a multiple of the count),
// each recorded whole; uuid selectors and mutex do not apply.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	p := &req.Preferences
	return devices.FitPodWith(VendorWord, cards, used, req, devices.FitOptions{
		Check: func(_ int, c *devices.Card, u devices.Usage, r devices.Request, _ devices.Assignment) (devices.Grant, devices.Refusal, bool) {
			if r.Count > 1 {
				if u.Sharers > 0 {
					return devices.Grant{}, devices.RefuseExclusive, false
				}
				return devices.Grant{UUID: c.UUID, Vendor: VendorWord, Cores: c.Cores}, 0, true
			}
			need := r.Cores
			if r.MemoryPercent == wholeDevices {
				need = c.Split
			}
			switch {
			case !p.WantsUUID(c.UUID):
				return devices.Grant{}, devices.RefuseUUID, false
			case u.Sharers >= c.Split:
				return devices.Grant{}, devices.RefuseShares, false
			case p.Exclusive && u.Sharers > 0:
				return devices.Grant{}, devices.RefuseExclusive, false
			case popcount(int64(c.Cores))-popcount(u.Cores) < int64(need):
				return devices.Grant{}, devices.RefuseCores, false
			}
			return devices.Grant{UUID: c.UUID, Vendor: VendorWord, Cores: coreMask(u.Cores, need)}, 0, true
		},
		Pick: pickRun,
	})
}

// popcount counts the set bits of a non-negative mask (HAMi's
// countMaskAvailable: 0 for negative values).
func popcount(mask int64) int64 {
	if mask <= 0 {
		return 0
	}
	return int64(bits.OnesCount64(uint64(mask)))
}

// coreMask is HAMi's addCoreUsage: the cores a one-device grant records,
// given the device's used mask.
func coreMask(used int64, need int32) int32 {
	if used == 0 {
		switch need {
		case 2:
			return 3
		case 1:
			return 1
		}
	}
	return int32(3 - used)
}

// pickRun is HAMi's graphSelect over the free devices the walk collected:
// the first contiguous run of n device indexes, any start on Inferentia,
// else n in {4, 8, 16} (1 never gets here) starting at a multiple of n.
func pickRun(cards []devices.Card, grants []devices.Grant, picked []int, n int) []devices.Grant {
	maxIndex := -1
	for _, i := range picked {
		maxIndex = max(maxIndex, cards[i].Index)
	}
	// free holds the grant position + 1 per device index.
	var freeBuf [64]int
	free := freeBuf[:0]
	if maxIndex < len(freeBuf) {
		free = freeBuf[:maxIndex+1]
	} else {
		free = make([]int, maxIndex+1)
	}
	for k, i := range picked {
		free[cards[i].Index] = k + 1
	}
	step := n
	if cards[picked[0]].Group == GroupRing {
		step = 1
	} else if n != 4 && n != 8 && n != 16 {
		return nil
	}
	for start := 0; start+n <= len(free); start += step {
		run := true
		for i := start; i < start+n; i++ {
			if free[i] == 0 {
				run = false
				break
			}
		}
		if run {
			// Reorder the run into grants' own array (by index).
			var tmpBuf [16]devices.Grant
			tmp := tmpBuf[:0]
			for i := start; i < start+n; i++ {
				tmp = append(tmp, grants[free[i]-1])
			}
			return append(grants[:0], tmp...)
		}
	}
	return nil
}

// AssignmentExtras implements devices.PodAnnotator: AWS_NEURON_IDS over all
// containers, NEURON_RESOURCE_TYPE when core ids are listed, the time, the
// allocated flag and the node.
func (v *Vendor) AssignmentExtras(pod *corev1.Pod, a devices.Assignment, now time.Time) (map[string]string, error) {
	ctrs := devices.Containers(pod)
	var ids []string
	node, coreIDs := "", false
	for ci, grants := range a {
		if len(grants) == 0 {
			continue
		}
		if ci >= len(ctrs) {
			return nil, fmt.Errorf("assignment has %d containers, pod %d", len(a), len(ctrs))
		}
		q, ok := ctrs[ci].Resources.Limits[v.names.Count]
		for _, g := range grants {
			n, idx, err := splitCardID(g.UUID)
			if err != nil {
				return nil, err
			}
			node = n
			if ok {
				if c, _ := q.AsInt64(); c > 0 {
					ids = append(ids, strconv.Itoa(idx))
				}
				continue
			}
			cpd := SplitCores
			if c, known := v.coresPerDevice.Load(n); known {
				cpd = c.(int)
			}
			if g.Cores&1 != 0 {
				ids = append(ids, strconv.Itoa(cpd*idx))
				coreIDs = true
			}
			if g.Cores&2 != 0 {
				ids = append(ids, strconv.Itoa(cpd*idx+1))
				coreIDs = true
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	out := map[string]string{
		IDsAnnotation:           strings.Join(ids, ","),
		AllocTimeAnnotation:     strconv.FormatInt(now.UnixNano(), 10),
		AllocatedFlagAnnotation: "false",
		PredicateNodeAnnotation: node,
	}
	if coreIDs {
		out[ResourceTypeAnnotation] = string(v.names.Cores)
	}
	return out, nil
}

func splitCardID(id string) (string, int, error) {
	const sep = "-" + VendorWord + "-"
	k := strings.LastIndex(id, sep)
	if k >= 0 {
		if i, err := strconv.Atoi(id[k+len(sep):]); err == nil && i >= 0 {
			return id[:k], i, nil
		}
	}
	return "", 0, fmt.Errorf("card %q is not an AWS Neuron device id (<node>%s<index>)", id, sep)
}

// Default implements devices.Vendor with HAMi's admission rules: neuron
// (limits, else requests) must be a positive whole number; otherwise
// neuroncore must be positive and 1, 2 or a multiple of 2.
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	if _, ok, err := devices.ContainerQuantity(c, v.names.Count); ok || err != nil {
		if err == nil {
			_, err = v.parseContainer(c)
		}
		return err == nil, err
	}
	r, err := v.parseContainer(c)
	if err != nil {
		return false, err
	}
	return !r.IsZero(), nil
}
