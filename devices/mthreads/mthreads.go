// Package mthreads is the Moore Threads vendor: HAMi's sharing of Moore
// Threads GPUs (pkg/device/mthreads), with cards synthesised from the
// node's capacity and the pod annotations the MT device plugin reads.
package mthreads

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// VendorWord is HAMi's CommonWord and card type for Moore Threads.
const VendorWord = "Mthreads"

// Annotation keys. HAMi registers hami.io/mthreads-vgpu-devices-to-allocate
// but never writes it: the assignment goes under AllocatedAnnotation alone.
const (
	AllocatedAnnotation = "hami.io/mthreads-vgpu-devices-allocated"

	UseUUIDAnnotation   = "mthreads.ai/use-gpuuuid"
	AvoidUUIDAnnotation = "mthreads.ai/nouse-gpuuuid"

	// GPUIndexAnnotation lists the card indexes of the last container that
	// got cards, e.g. "0" or "0,1".
	GPUIndexAnnotation = "mthreads.com/gpu-index"
	// PredicateTimeAnnotation is the decision time in unix nanoseconds.
	PredicateTimeAnnotation = "mthreads.com/predicate-time"
	// PredicateNodeAnnotation is the chosen node's name.
	PredicateNodeAnnotation = "mthreads.com/predicate-node"
	// RequestGPUNumAnnotation is set by the webhook on pods whose container
	// asks for more than one GPU.
	RequestGPUNumAnnotation = "mthreads.com/request-gpu-num"
)

// Default resource names (HAMi's chart).
const (
	DefaultCountName  = "mthreads.com/vgpu"
	DefaultMemoryName = "mthreads.com/sgpu-memory"
	DefaultCoresName  = "mthreads.com/sgpu-core"
)

const (
	// CoresPerGPU is one whole GPU in sgpu-core units.
	CoresPerGPU = 16
	// MemoryPerGPU is one whole GPU in sgpu-memory units.
	MemoryPerGPU = 96
	// MemoryUnitMiB is one sgpu-memory unit.
	MemoryUnitMiB = 512
	// Split is how many containers may share one GPU (HAMi's count).
	Split = 100
	// maxCards bounds the cards synthesised from a node's capacity.
	maxCards = 1024
)

// legalMemory are the sgpu-memory values a one-GPU container may ask.
var legalMemory = []int64{2, 4, 8, 16, 32, 64, 96}

// Vendor implements devices.Vendor for Moore Threads GPUs.
type Vendor struct {
	names devices.ResourceNames
}

var (
	_ devices.Vendor       = &Vendor{}
	_ devices.PodAnnotator = &Vendor{}
	_ devices.PodDefaulter = &Vendor{}
	_ devices.MemoryScaler = &Vendor{}
)

// New returns the Moore Threads vendor with cfg's resource names over
// HAMi's defaults. Settings HAMi has no Moore Threads equivalent for are
// refused.
func New(cfg devices.Config) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.OnlyRenames(devices.RenameMemory | devices.RenameCores) {
		return nil, fmt.Errorf("vendor %s: Moore Threads takes only resourceCountName, resourceMemoryName and resourceCoresName", cfg.Name)
	}
	return &Vendor{names: devices.ResourceNames{
		Count:  corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultCountName)),
		Memory: corev1.ResourceName(cmp.Or(cfg.ResourceMemoryName, DefaultMemoryName)),
		Cores:  corev1.ResourceName(cmp.Or(cfg.ResourceCoresName, DefaultCoresName)),
	}}, nil
}

// Name implements devices.Vendor.
func (v *Vendor) Name() string { return VendorWord }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor: no to-allocate key.
func (v *Vendor) AssignmentAnnotations() (string, string) { return "", AllocatedAnnotation }

// MemoryFactor implements devices.MemoryScaler: sgpu-memory is counted in
// units of 512 MiB, in requests and in quotas.
func (v *Vendor) MemoryFactor() int32 { return MemoryUnitMiB }

var _ devices.NodeLocker = &Vendor{}

// NodeLock implements devices.NodeLocker: the node lock key HAMi takes for this vendor: none.
func (v *Vendor) NodeLock() string { return "" }

// CardID is the id HAMi gives the i-th card synthesised on a node.
func CardID(node string, i int) string { return node + "-mthreads-" + strconv.Itoa(i) }

// Inventory implements devices.Vendor: one card per started 16 sgpu-core
// of the node's capacity, each with an equal part of the sgpu-memory.
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	q, ok := node.Status.Capacity[v.names.Cores]
	if !ok {
		return nil, nil
	}
	cores, exact := q.AsInt64()
	if !exact || cores < 0 {
		return nil, fmt.Errorf("capacity %s %s is not a whole number", v.names.Cores, q.String())
	}
	if cores == 0 {
		return nil, nil
	}
	if cores > maxCards*CoresPerGPU {
		return nil, fmt.Errorf("capacity %s %d is above %d GPUs", v.names.Cores, cores, maxCards)
	}
	var memory int64
	if mq, ok := node.Status.Capacity[v.names.Memory]; ok {
		m, exact := mq.AsInt64()
		if !exact || m < 0 {
			return nil, fmt.Errorf("capacity %s %s is not a whole number", v.names.Memory, mq.String())
		}
		memory = m
	}
	if memory > math.MaxInt32 {
		return nil, fmt.Errorf("capacity %s %d is too large", v.names.Memory, memory)
	}
	perCard := memory * MemoryUnitMiB * CoresPerGPU / cores
	if perCard > math.MaxInt32 {
		return nil, fmt.Errorf("capacity %s %d over %s %d is above %d MiB per GPU", v.names.Memory, memory, v.names.Cores, cores, math.MaxInt32)
	}
	n := int((cores + CoresPerGPU - 1) / CoresPerGPU)
	cards := make([]devices.Card, n)
	for i := range cards {
		cards[i] = devices.Card{
			UUID: CardID(node.Name, i), Index: i, Split: Split, MemoryMiB: int32(perCard), Cores: CoresPerGPU,
			Model: VendorWord, Mode: devices.DefaultMode, Healthy: true,
		}
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	return devices.CapacityChanged(old, updated, v.names.Cores) || devices.CapacityChanged(old, updated, v.names.Memory) ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon]
}

// ParsePod implements devices.Vendor. Memory and cores are the container's
// totals, divided by its GPU count as HAMi does.
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
	count, _, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil || count == 0 {
		return devices.Request{}, err
	}
	units, _, err := devices.ContainerQuantity(c, v.names.Memory)
	if err != nil {
		return devices.Request{}, err
	}
	if int64(units) > math.MaxInt32/MemoryUnitMiB {
		return devices.Request{}, fmt.Errorf("%s %d is above %d units of %d MiB", v.names.Memory, units, math.MaxInt32/MemoryUnitMiB, MemoryUnitMiB)
	}
	cores, _, err := devices.ContainerQuantity(c, v.names.Cores)
	if err != nil {
		return devices.Request{}, err
	}
	r := devices.Request{Count: count, MemoryMiB: units * MemoryUnitMiB / count, Cores: cores / count}
	if units == 0 {
		r.MemoryPercent = 100
	}
	return r, nil
}

// Fit implements devices.Vendor: HAMi's standard share fit (a GPU's core
// total is 16, so a container asking 16 cores has it alone) plus HAMi's
// rule that a container only takes a GPU every earlier container of its
// phase was given: with one GPU each, the pod's containers share one GPU;
// after a container with several GPUs, no later one fits.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	p := &req.Preferences
	return devices.FitPodWith(VendorWord, cards, used, req, devices.FitOptions{Check: func(_ int, c *devices.Card, u devices.Usage, r devices.Request, placed devices.Assignment) (devices.Grant, devices.Refusal, bool) {
		for _, ctr := range placed {
			for _, g := range ctr {
				if g.UUID != c.UUID {
					return devices.Grant{}, devices.RefuseVendor, false
				}
			}
		}
		if why, refused := devices.StandardRefusal(c, u, &r, p); refused {
			return devices.Grant{}, why, false
		}
		return devices.Grant{UUID: c.UUID, Vendor: VendorWord, MemoryMiB: r.MemoryOn(c), Cores: min(r.Cores, 100)}, 0, true
	}})
}

// AssignmentExtras implements devices.PodAnnotator: the GPU indexes of the
// last container with GPUs, the decision time and the node.
func (v *Vendor) AssignmentExtras(_ *corev1.Pod, a devices.Assignment, now time.Time) (map[string]string, error) {
	var last []devices.Grant
	for _, ctr := range a {
		if len(ctr) > 0 {
			last = ctr
		}
	}
	if len(last) == 0 {
		return nil, nil
	}
	indexes := make([]string, 0, len(last))
	node := ""
	for _, g := range last {
		n, i, err := splitCardID(g.UUID)
		if err != nil {
			return nil, err
		}
		node = n
		indexes = append(indexes, strconv.Itoa(i))
	}
	return map[string]string{
		GPUIndexAnnotation:      strings.Join(indexes, ","),
		PredicateTimeAnnotation: strconv.FormatInt(now.UnixNano(), 10),
		PredicateNodeAnnotation: node,
	}, nil
}

// splitCardID reads the node name and index back from a CardID.
func splitCardID(id string) (string, int, error) {
	const sep = "-mthreads-"
	k := strings.LastIndex(id, sep)
	if k < 0 {
		return "", 0, fmt.Errorf("card %q is not a Moore Threads card id (<node>%s<index>)", id, sep)
	}
	i, err := strconv.Atoi(id[k+len(sep):])
	if err != nil || i < 0 {
		return "", 0, fmt.Errorf("card %q is not a Moore Threads card id (<node>%s<index>)", id, sep)
	}
	return id[:k], i, nil
}

// Default implements devices.Vendor for a container seen without its pod.
func (v *Vendor) Default(c *corev1.Container) (bool, error) { return v.DefaultInPod(nil, c) }

// DefaultInPod implements devices.PodDefaulter with HAMi's admission rules:
// the count (limits, else requests) must be positive; more than one GPU
// means whole GPUs (cores = count x 16, memory = count x 96 in limits) and
// the pod gets mthreads.com/request-gpu-num; one GPU without memory is a
// whole GPU; one GPU with memory must ask 2, 4, 8, 16, 32, 64 or 96 units.
func (v *Vendor) DefaultInPod(pod *corev1.Pod, c *corev1.Container) (bool, error) {
	q, ok := c.Resources.Limits[v.names.Count]
	if !ok {
		q, ok = c.Resources.Requests[v.names.Count]
	}
	if !ok {
		return false, nil
	}
	count, exact := q.AsInt64()
	if !exact || count <= 0 || count > math.MaxInt32/CoresPerGPU {
		return false, fmt.Errorf("%s must be a whole number greater than 0, got %s", v.names.Count, q.String())
	}
	for _, name := range []corev1.ResourceName{v.names.Memory, v.names.Cores} {
		if _, _, err := devices.ContainerQuantity(c, name); err != nil {
			return false, err
		}
	}
	mem, memOK := c.Resources.Limits[v.names.Memory]
	if memOK && count == 1 {
		n, _ := mem.AsInt64()
		if !slices.Contains(legalMemory, n) {
			return true, fmt.Errorf("sGPU memory request value is invalid, valid values are [2, 4, 8, 16, 32, 64, 96]")
		}
		return true, nil
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[v.names.Cores] = *resource.NewQuantity(count*CoresPerGPU, resource.DecimalSI)
	c.Resources.Limits[v.names.Memory] = *resource.NewQuantity(count*MemoryPerGPU, resource.DecimalSI)
	if count > 1 && pod != nil {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[RequestGPUNumAnnotation] = strconv.FormatInt(count, 10)
	}
	return true, nil
}
