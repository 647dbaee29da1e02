package ascend

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// ErrMultiVNPU refuses a hard-split container that asks for several NPUs
// with less than a whole NPU's memory each (HAMi's message).
var ErrMultiVNPU = errors.New("vNPU not supported for multiple devices")

// Default implements devices.Vendor for a container seen without its pod:
// the hard split, no runtime class. The webhook should call DefaultInPod.
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	return v.DefaultInPod(nil, c)
}

// DefaultInPod implements devices.PodDefaulter with HAMi's admission rules
// for the chip: 910C super-pod counts, cores only in hami-core, memory
// rounded to a template (hard split) and written to limits and requests,
// whole NPUs only for multi-NPU hard-split containers, the runtime class,
// and ASCEND_VISIBLE_DEVICES="" for containers without the chip when
// overwriteEnv is set.
func (v *Vendor) DefaultInPod(pod *corev1.Pod, c *corev1.Container) (bool, error) {
	if _, ok := c.Resources.Limits[v.names.Count]; !ok {
		if v.cfg.OverwriteEnv {
			setEnvIfAbsent(c, VisibleDevicesEnv, "")
		}
		return false, nil
	}
	count, _, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil {
		return false, err
	}
	mem, memOK := int32(0), false
	if q, ok := c.Resources.Limits[v.names.Memory]; ok {
		n, exact := q.AsInt64()
		if !exact || n < 0 || n > 1<<31-1 {
			return false, fmt.Errorf("%s %s is not a whole number of MiB between 0 and 2147483647", v.names.Memory, q.String())
		}
		mem, memOK = int32(n), true
	}
	cores, _, err := devices.ContainerQuantity(c, v.names.Cores)
	if err != nil {
		return false, err
	}
	if count == 0 {
		return false, nil
	}
	if v.pairs && v.cfg.SuperPod {
		switch {
		case count == 1:
			two := *resource.NewQuantity(2, resource.DecimalSI)
			c.Resources.Limits[v.names.Count] = two
			if _, ok := c.Resources.Requests[v.names.Count]; ok {
				c.Resources.Requests[v.names.Count] = two
			}
		case count%2 != 0:
			return false, fmt.Errorf("%s device request must be 1 or 2*n, got %d", v.cfg.CommonWord, count)
		}
	}
	hamiCore := pod != nil && pod.Annotations[VNPUModeAnnotation] == ModeHAMiCore
	if !hamiCore && cores > 0 {
		return false, fmt.Errorf("%s is only supported in hami-core (soft split) mode (pod annotation %s: %s)", v.names.Cores, VNPUModeAnnotation, ModeHAMiCore)
	}
	rounded := v.cfg.MemoryAllocatable
	if memOK {
		if hamiCore {
			rounded = int64(mem)
		} else if rounded = v.roundMemory(int64(mem)); rounded <= 0 {
			return false, fmt.Errorf("%s %d is above the NPU's memory capacity %d MiB", v.names.Memory, mem, v.cfg.MemoryCapacity)
		}
	}
	// The count as written decides (a 910C count of 1 made 2 above is not
	// "multiple devices").
	if count > 1 && !hamiCore && rounded != v.cfg.MemoryAllocatable {
		return true, ErrMultiVNPU
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	q := *resource.NewQuantity(rounded, resource.DecimalSI)
	c.Resources.Limits[v.names.Memory] = q
	c.Resources.Requests[v.names.Memory] = q
	if pod != nil && pod.Spec.RuntimeClassName == nil && v.cfg.RuntimeClassName != "" {
		name := v.cfg.RuntimeClassName
		pod.Spec.RuntimeClassName = &name
	}
	return true, nil
}

func setEnvIfAbsent(c *corev1.Container, name, value string) {
	for _, e := range c.Env {
		if e.Name == name {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}
