package ascend

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// PluginVersion is the release of HAMi's Ascend device plugin
// (Project-HAMi/ascend-device-plugin) whose behaviour CheckServable
// follows.
const PluginVersion = "ascend-device-plugin v1.4.0"

var _ devices.ServeChecker = &Vendor{}

// CheckServable implements devices.ServeChecker. The Ascend plugin never
// fills the list of vendors it waits for, so it sets bind-phase success
// and releases the node lock after the pod's first NPU container; the
// next container resolves to whichever pod the lock or the node's list
// gives then, and fails or serves another pod's NPUs. So a pod asks a
// chip's NPUs in one container, init containers included.
func (v *Vendor) CheckServable(pod *corev1.Pod) error {
	return devices.OneDeviceContainer(pod, PluginVersion, v.cfg.CommonWord+" NPU", v.names.Count)
}
