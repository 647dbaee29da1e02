// Package metax is the MetaX vendor pair of HAMi: whole MetaX GPUs
// (Metax-GPU, cards synthesised from node capacity) and sGPU shares
// (Metax-SGPU, cards from metax-tech.com/node-gpu-devices).
package metax

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Annotation keys of the whole-GPU vendor.
const (
	GPUToAllocateAnnotation = "hami.io/metax-gpu-devices-to-allocate"
	GPUAllocatedAnnotation  = "hami.io/metax-gpu-devices-allocated"

	// LossAnnotation and ScoreAnnotation are node annotations of MetaX's
	// device plugin: JSON maps from a pod's card count to the topology loss
	// (read under node binpack) or score (under spread).
	LossAnnotation  = "metax-tech.com/gpu.topology.losses"
	ScoreAnnotation = "metax-tech.com/gpu.topology.scores"
)

// GPUWord is HAMi's CommonWord and card type of whole MetaX GPUs.
const GPUWord = "Metax-GPU"

// DefaultGPUCountName is the chart's count resource.
const DefaultGPUCountName = "metax-tech.com/gpu"

// Synthesised GPU cards: HAMi's fixed values.
const (
	GPUMemoryMiB = 65536
	gpuCardWord  = "metax"
	maxGPUs      = 1024
)

// GPUVendor implements devices.Vendor for whole MetaX GPUs.
type GPUVendor struct {
	names devices.ResourceNames
}

var _ devices.Vendor = &GPUVendor{}

// NewGPU returns the whole-GPU vendor. HAMi's metax section names only its
// count resource; every other setting is refused.
func NewGPU(cfg devices.Config) (*GPUVendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	shared := cfg
	shared.Name, shared.ResourceCountName = "", ""
	if !isZero(shared) {
		return nil, fmt.Errorf("vendor %s: a whole MetaX GPU has only a count resource (resourceCountName)", cfg.Name)
	}
	return &GPUVendor{names: devices.ResourceNames{Count: corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultGPUCountName))}}, nil
}

func isZero(c devices.Config) bool {
	return c.ResourceCountName == "" && c.ResourceMemoryName == "" && c.ResourceMemoryPercentageName == "" &&
		c.ResourceCoresName == "" && c.ResourcePriorityName == "" && c.DefaultMemoryMiB == 0 && c.DefaultCores == 0 &&
		c.DefaultCount == nil && c.MemoryFactor == 0 && c.RuntimeClassName == "" && !c.OverwriteEnv && c.CorePolicy == "" &&
		len(c.MIGProfiles) == 0 && c.NodeDefaults == (devices.NodeDefaults{}) && c.Vendor == nil
}

// Name implements devices.Vendor.
func (v *GPUVendor) Name() string { return GPUWord }

// Resources implements devices.Vendor.
func (v *GPUVendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor.
func (v *GPUVendor) AssignmentAnnotations() (string, string) {
	return GPUToAllocateAnnotation, GPUAllocatedAnnotation
}

// NodeLock is the node lock the scheduler must take for the
// vendor: none, HAMi's MetaX GPU backend takes no lock.
func (v *GPUVendor) NodeLock() string { return "" }

// GPUCardID is the id HAMi gives GPU i of a node.
func GPUCardID(node string, i int) string { return node + "-" + gpuCardWord + "-" + strconv.Itoa(i) }

// Inventory implements devices.Vendor: one card per unit of the count
// capacity, ids <node>-metax-<i>, one share, 65536 MiB, 100 cores.
func (v *GPUVendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	n, ok, err := devices.WholeCapacity(node, v.names.Count)
	if err != nil || !ok || n == 0 {
		return nil, err
	}
	if n > maxGPUs {
		return nil, fmt.Errorf("capacity %s %d is more than %d cards", v.names.Count, n, maxGPUs)
	}
	cards := make([]devices.Card, n)
	for i := range cards {
		cards[i] = devices.Card{
			UUID: GPUCardID(node.Name, i), Index: i, Split: 1, MemoryMiB: GPUMemoryMiB, Cores: 100,
			Model: GPUWord, Mode: devices.DefaultMode, Healthy: true,
		}
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *GPUVendor) InventoryChanged(old, updated *corev1.Node) bool {
	return old.Name != updated.Name || devices.CapacityChanged(old, updated, v.names.Count) ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon]
}

// ParsePod implements devices.Vendor: whole cards (all memory, 100 cores);
// no selectors; the card policy applies.
func (v *GPUVendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, devices.WholeCardRequest(v.names.Count))
	if err != nil || !asked {
		return devices.PodRequest{}, err
	}
	if err := devices.ApplyGPUSchedulerPolicy(&req.Preferences, pod.Annotations[devices.CardPolicyAnnotation]); err != nil {
		return devices.PodRequest{}, err
	}
	return req, nil
}

// Fit implements devices.Vendor: the standard fit plus HAMi's MetaX rule
// that a card is refused when an earlier container of the pod (init
// containers among init containers, regular among regular) got a
// different card. With one share per card this means: a later init
// container may only take the card the first one took, and a second
// regular container asking for a GPU never fits (HAMi's quirk, kept).
func (v *GPUVendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	inits := max(min(req.Inits, len(req.Containers)), 0)
	if asking(req.Containers[:inits]) <= 1 && asking(req.Containers[inits:]) <= 1 {
		return devices.FitPod(GPUWord, cards, used, req)
	}
	a := make(devices.Assignment, len(req.Containers))
	scratch := make([]devices.Usage, len(used))
	for _, scope := range [][2]int{{0, inits}, {inits, len(req.Containers)}} {
		copy(scratch, used)
		var first []devices.Grant
		for i := scope[0]; i < scope[1]; i++ {
			r := req.Containers[i]
			if r.IsZero() {
				continue
			}
			one := devices.PodRequest{Containers: []devices.Request{r}, Preferences: req.Preferences}
			if first != nil {
				// Only the single card the first container took passes;
				// none when it took several (no card id is empty).
				one.Preferences.UseUUIDs = []string{first[0].UUID}
				if len(first) > 1 {
					one.Preferences.UseUUIDs = []string{""}
				}
			}
			sub, rej := devices.FitPod(GPUWord, cards, scratch, &one)
			if rej != nil {
				rej.Container = i
				return nil, rej
			}
			a[i] = sub[0]
			if first == nil {
				first = sub[0]
			}
			if i >= inits {
				// Regular containers run together.
				devices.ApplyGrants(cards, scratch, sub, 0, true)
			}
		}
	}
	return a, nil
}

func asking(rs []devices.Request) int {
	n := 0
	for _, r := range rs {
		if !r.IsZero() {
			n++
		}
	}
	return n
}

// ScoreNode is HAMi's MetaX GPU node score: under node binpack 2000 minus
// the loss the node's LossAnnotation gives for the pod's total card count,
// under spread 2000 minus the ScoreAnnotation value; a missing or
// unreadable entry counts 0, a missing annotation scores 0. It implements
// devices.NodeAnnotationScorer.
func (v *GPUVendor) ScoreNode(node *corev1.Node, policy devices.NodePolicy, a devices.Assignment) float64 {
	total := 0
	a.Grants(func(devices.Grant) { total++ })
	key := ""
	switch policy {
	case devices.NodeBinpack:
		key = LossAnnotation
	case devices.NodeSpread:
		key = ScoreAnnotation
	default:
		return 0
	}
	raw, ok := node.Annotations[key]
	if !ok {
		return 0
	}
	return 2000 - float64(cardCountEntry(raw, total))
}

// cardCountEntry reads the entry for n cards of a JSON map such as
// {"1":0,"2":110}; anything unreadable is 0, as in HAMi.
func cardCountEntry(raw string, n int) int {
	var m map[int]int
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return 0
	}
	return m[n]
}

// Default implements devices.Vendor: detection only (count in limits).
func (v *GPUVendor) Default(c *corev1.Container) (bool, error) {
	if _, _, err := devices.ContainerQuantity(c, v.names.Count); err != nil {
		return false, err
	}
	_, ok := c.Resources.Limits[v.names.Count]
	return ok, nil
}
