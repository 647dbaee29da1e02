package cambricon

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// PluginVersion is the release of Cambricon's device plugin
// (Cambricon/cambricon-k8s-device-plugin, dynamic-smlu mode) whose
// behaviour the rules below follow.
const PluginVersion = "cambricon-k8s-device-plugin v2.0.23"

// PluginAssignedAnnotation is the spelling of CAMBRICON_DSMLU_ASSIGNED
// that Cambricon's device plugin reads and writes (sic, since v2.0.11).
// HAMi v2.10 writes only AssignedAnnotation, which the plugin never reads:
// with HAMi, no pod is ever the plugin's candidate. The scheduler writes
// both.
const PluginAssignedAnnotation = "CAMBRICON_DSMLU_ASSIGHED"

var (
	_ devices.ServeChecker    = &Vendor{}
	_ devices.CountAdvertiser = &Vendor{}
)

// CountAdvertised implements devices.CountAdvertiser: the plugin registers
// cambricon.com/mlu.smlu.vcore, .vmemory and cambricon.com/real-mlu-counts,
// never the count cambricon.com/vmlu.
func (v *Vendor) CountAdvertised() bool { return false }

// CheckServable implements devices.ServeChecker: it refuses the MLU requests Cambricon's plugin cannot serve.
// The plugin finds its pod among the node's Pending pods whose regular
// containers' limits ask a ".vcore" or ".vmemory" of cambricon.com and
// whose CAMBRICON_DSMLU_ASSIGHED is "false"; it serves the one MLU that
// CAMBRICON_DSMLU_PROFILE names, to one container, and completes the
// hand-over (the flag set, cambricon.com/dsmlu.lock released) on the
// second Allocate call the kubelet makes for the pod, one per resource the
// container asks. So a pod it can serve asks, in one regular container,
// one MLU (cambricon.com/vmlu: 1, which the plugin does not register) with
// both the vcore and the vmemory resource:
//   - an init container with an MLU is never a candidate: "no dynamic smlu
//     candidate pod found";
//   - two MLU containers: "number of containers of dynamic smlu candidate
//     pod large than one";
//   - more than one MLU in the container: the plugin builds one smlu
//     instance, on the profile's card;
//   - only vcore or only vmemory: one Allocate call, so the hand-over never
//     completes and the node stays locked while the pod lives;
//   - vcore or vmemory without vmlu: HAMi's scheduler does not see an MLU
//     request and writes no profile, and the plugin fails the pod.
func (v *Vendor) CheckServable(pod *corev1.Pod) error {
	var mluContainers []string
	for i, c := range devices.Containers(pod) {
		count, hasCount, err := devices.ContainerQuantity(c, v.names.Count)
		if err != nil {
			return err
		}
		share := v.asksShare(c)
		if !hasCount && !share {
			continue
		}
		switch {
		case i < len(pod.Spec.InitContainers):
			return unservable("init container %s asks for an MLU; the plugin serves MLUs to regular containers only", c.Name)
		case !hasCount:
			return unservable("container %s asks %s without %s; add %s: 1", c.Name, v.askedShares(c), v.names.Count, v.names.Count)
		case count != 1:
			return unservable("container %s asks %s: %d; the plugin serves one MLU per pod, so ask %s: 1", c.Name, v.names.Count, count, v.names.Count)
		case !positiveLimit(c, v.names.Cores) || !positiveLimit(c, v.names.Memory):
			return unservable("container %s must set both %s and %s in its limits: the plugin completes the hand-over only when the kubelet calls it for both, and otherwise keeps the node locked",
				c.Name, v.names.Cores, v.names.Memory)
		}
		mluContainers = append(mluContainers, c.Name)
	}
	if len(mluContainers) > 1 {
		return unservable("containers %s each ask for an MLU; the plugin serves one MLU container per pod", strings.Join(mluContainers, ", "))
	}
	return nil
}

func unservable(format string, args ...any) error {
	return &devices.UnservableError{Plugin: PluginVersion, Reason: fmt.Sprintf(format, args...)}
}

// asksShare reports whether the container asks any of the vcore and
// vmemory resources.
func (v *Vendor) asksShare(c *corev1.Container) bool {
	return positiveLimit(c, v.names.Cores) || positiveLimit(c, v.names.Memory)
}

// askedShares names the share resources the container asks.
func (v *Vendor) askedShares(c *corev1.Container) string {
	var names []string
	for _, n := range []corev1.ResourceName{v.names.Cores, v.names.Memory} {
		if positiveLimit(c, n) {
			names = append(names, string(n))
		}
	}
	return strings.Join(names, " and ")
}

// positiveLimit reports whether the container's limits ask a positive
// amount of the resource: the kubelet calls a device plugin for limits
// only.
func positiveLimit(c *corev1.Container, name corev1.ResourceName) bool {
	q, ok := c.Resources.Limits[name]
	return ok && q.Sign() > 0
}
