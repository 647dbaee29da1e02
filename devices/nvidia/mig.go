package nvidia

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// MIGAllocationsAnnotation lists the MIG slices the scheduler reserved for
// a pod; the device plugin in mig mode creates exactly those instances.
const MIGAllocationsAnnotation = "hami.io/vgpu-mig-allocations"

var (
	_ devices.PodAnnotator = &Vendor{}
	_ devices.SliceReader  = &Vendor{}
)

// migAllocation is one element of hami.io/vgpu-mig-allocations, in HAMi's
// field order (nvidia.MigAllocation). The device plugin adds the runtime
// identity (all three fields or none); the scheduler never writes it.
type migAllocation struct {
	ContainerIndex    int                  `json:"containerIndex"`
	DeviceIndex       int                  `json:"deviceIndex"`
	GPUUUID           string               `json:"gpuUUID"`
	Profile           string               `json:"profile"`
	Placement         devices.MIGPlacement `json:"placement"`
	MigUUID           string               `json:"migUUID,omitempty"`
	GPUInstanceID     *uint32              `json:"gpuInstanceID,omitempty"`
	ComputeInstanceID *uint32              `json:"computeInstanceID,omitempty"`
}

// AssignmentExtras implements devices.PodAnnotator: the MIG slices of the
// assignment, when it has any. containerIndex is the container's entry in
// the assignment (init containers first), deviceIndex the card's position
// in it.
func (v *Vendor) AssignmentExtras(pod *corev1.Pod, a devices.Assignment, now time.Time) (map[string]string, error) {
	res := devices.Reservations(a)
	if len(res) == 0 {
		return nil, nil
	}
	out := make([]migAllocation, len(res))
	for i, r := range res {
		out[i] = migAllocation{ContainerIndex: r.Container, DeviceIndex: r.Device, GPUUUID: r.UUID, Profile: r.Profile, Placement: r.Placement}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", MIGAllocationsAnnotation, err)
	}
	return map[string]string{MIGAllocationsAnnotation: string(data)}, nil
}

// PodSlices implements devices.SliceReader.
func (v *Vendor) PodSlices(pod *corev1.Pod) []devices.SliceReservation {
	raw, ok := pod.Annotations[MIGAllocationsAnnotation]
	if !ok {
		return nil
	}
	res, err := DecodeMIGAllocations(raw)
	if err != nil {
		return nil
	}
	return res
}

// DecodeMIGAllocations reads hami.io/vgpu-mig-allocations with HAMi's
// checks (DecodeMigAllocations): an empty value holds nothing; an entry
// with a negative index, an empty uuid or profile, a placement of size 0,
// part of the runtime identity, or the (containerIndex, deviceIndex) of an
// earlier entry makes the whole value invalid.
func DecodeMIGAllocations(raw string) ([]devices.SliceReservation, error) {
	if raw == "" {
		return nil, nil
	}
	var all []migAllocation
	if err := json.Unmarshal([]byte(raw), &all); err != nil {
		return nil, fmt.Errorf("%s: %w", MIGAllocationsAnnotation, err)
	}
	out := make([]devices.SliceReservation, 0, len(all))
	seen := make(map[[2]int]bool, len(all))
	for i, m := range all {
		if m.ContainerIndex < 0 || m.DeviceIndex < 0 || m.GPUUUID == "" || m.Profile == "" || m.Placement.Size == 0 {
			return nil, fmt.Errorf("%s: entry %d is incomplete", MIGAllocationsAnnotation, i)
		}
		runtime := 0
		if m.MigUUID != "" {
			runtime++
		}
		if m.GPUInstanceID != nil {
			runtime++
		}
		if m.ComputeInstanceID != nil {
			runtime++
		}
		if runtime != 0 && runtime != 3 {
			return nil, fmt.Errorf("%s: entry %d has part of the runtime identity", MIGAllocationsAnnotation, i)
		}
		key := [2]int{m.ContainerIndex, m.DeviceIndex}
		if seen[key] {
			return nil, fmt.Errorf("%s: container %d device %d listed twice", MIGAllocationsAnnotation, m.ContainerIndex, m.DeviceIndex)
		}
		seen[key] = true
		r := devices.SliceReservation{Container: m.ContainerIndex, Device: m.DeviceIndex, UUID: m.GPUUUID, Profile: m.Profile, Placement: m.Placement}
		if runtime == 3 {
			r.Runtime = devices.MIGRuntime{UUID: m.MigUUID, GPUInstance: *m.GPUInstanceID, ComputeInstance: *m.ComputeInstanceID}
		}
		out = append(out, r)
	}
	return out, nil
}
