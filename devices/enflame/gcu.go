// Package enflame holds HAMi's two Enflame backends (pkg/device/enflame):
// GCU, whole GCUs synthesised from the node's capacity, and DRS, hard
// partitions of GCUs by DRS profile, read from the node's
// enflame.com/gcu-drs-capacity annotation.
package enflame

import (
	"cmp"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// GCUWord is HAMi's CommonWord and card type for whole GCUs.
const GCUWord = "GCU"

// Annotation keys of the GCU backend.
const (
	GCUToAllocateAnnotation = "hami.io/enflame-gcu-devices-to-allocate"
	GCUAllocatedAnnotation  = "hami.io/enflame-gcu-devices-allocated"
)

// DefaultGCUName is the chart's whole-GCU resource.
const DefaultGCUName = "enflame.com/gcu"

// maxCards bounds the cards synthesised from a node's capacity.
const maxCards = 1024

// GCU implements devices.Vendor for whole Enflame GCUs.
type GCU struct {
	names devices.ResourceNames
}

var _ devices.Vendor = &GCU{}

// NewGCU returns the whole-GCU vendor; only the count resource can be
// renamed (HAMi's resourceNameGCU).
func NewGCU(cfg devices.Config) (*GCU, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.OnlyRenames(0) {
		return nil, fmt.Errorf("vendor %s: whole Enflame GCUs take only resourceCountName (resourceNameGCU)", cfg.Name)
	}
	return &GCU{names: devices.ResourceNames{Count: corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultGCUName))}}, nil
}

// Name implements devices.Vendor.
func (v *GCU) Name() string { return GCUWord }

// Resources implements devices.Vendor.
func (v *GCU) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor.
func (v *GCU) AssignmentAnnotations() (string, string) {
	return GCUToAllocateAnnotation, GCUAllocatedAnnotation
}

var _ devices.NodeLocker = &GCU{}

// NodeLock implements devices.NodeLocker: HAMi takes no lock for GCUs.
func (v *GCU) NodeLock() string { return "" }

// GCUCardID is the id HAMi gives the i-th GCU of a node.
func GCUCardID(node string, i int) string { return node + "-" + GCUWord + "-" + strconv.Itoa(i) }

// Inventory implements devices.Vendor: capacity(enflame.com/gcu) cards,
// each count 1, devmem 100, devcore 100, type GCU.
func (v *GCU) Inventory(node *corev1.Node) ([]devices.Card, error) {
	q, ok := node.Status.Capacity[v.names.Count]
	if !ok {
		return nil, nil
	}
	n, exact := q.AsInt64()
	switch {
	case !exact || n < 0:
		return nil, fmt.Errorf("capacity %s %s is not a whole number", v.names.Count, q.String())
	case n == 0:
		return nil, nil
	case n > maxCards:
		return nil, fmt.Errorf("capacity %s %d is above %d GCUs", v.names.Count, n, maxCards)
	}
	cards := make([]devices.Card, n)
	for i := range cards {
		cards[i] = devices.Card{UUID: GCUCardID(node.Name, i), Index: i, Split: 1, MemoryMiB: 100, Cores: 100, Model: GCUWord, Mode: devices.DefaultMode, Healthy: true}
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *GCU) InventoryChanged(old, updated *corev1.Node) bool {
	return devices.CapacityChanged(old, updated, v.names.Count) ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon]
}

// ParsePod implements devices.Vendor: the count (limits, else requests)
// in whole GCUs, each recorded as 100 memory and 100 cores.
func (v *GCU) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, v.parseContainer)
	if err != nil || !asked {
		return devices.PodRequest{}, err
	}
	// The card order follows the pod's policy (binpack, spread) as for
	// every HAMi vendor; mutex changes nothing on one-share cards.
	if err := devices.ApplyGPUSchedulerPolicy(&req.Preferences, pod.Annotations[devices.CardPolicyAnnotation]); err != nil {
		return devices.PodRequest{}, err
	}
	return req, nil
}

// parseContainer reads one container's count of whole GCUs.
func (v *GCU) parseContainer(c *corev1.Container) (devices.Request, error) {
	n, _, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil || n <= 0 {
		return devices.Request{}, err
	}
	return devices.Request{Count: n, MemoryMiB: 100, Cores: 100}, nil
}

// Fit implements devices.Vendor: a GCU fits when healthy and unused (count
// 1 and the 100/100 request make the shared walk say exactly that; HAMi
// reads no selector or policy for GCUs).
func (v *GCU) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	return devices.FitPod(GCUWord, cards, used, req)
}

// FitsByStandardRules implements devices.StandardFitter: Fit is FitPod.
func (v *GCU) FitsByStandardRules() {}

// Default implements devices.Vendor: detection only (count in limits).
func (v *GCU) Default(c *corev1.Container) (bool, error) {
	if _, _, err := devices.ContainerQuantity(c, v.names.Count); err != nil {
		return false, err
	}
	_, ok := c.Resources.Limits[v.names.Count]
	return ok, nil
}
