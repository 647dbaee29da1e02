package amd

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// PluginVersion is the release of AMD's device plugin
// (Project-HAMi/amd-device-plugin) whose behaviour CheckServable follows.
const PluginVersion = "amd-device-plugin 808784f (v0.0.1-1)"

var _ devices.ServeChecker = &Vendor{}

// CheckServable implements devices.ServeChecker. AMD's plugin declares the
// pod served (bind-phase success, node lock released) once the
// to-allocate value no longer holds the whole allocated value, which is
// true after its first container; a second AMD container, init containers
// included, then finds no pod ("no binding pod found") or takes the next
// pod the node is locked for. So a pod asks AMD GPUs in one container.
func (v *Vendor) CheckServable(pod *corev1.Pod) error {
	return devices.OneDeviceContainer(pod, PluginVersion, "AMD GPU", v.names.Count)
}
