package enflame

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// PluginVersion is the release of Enflame's gcushare device plugin
// (EnflameTechnology/gcushare, DRS) whose behaviour CheckServable follows.
const PluginVersion = "gcushare ee04a65 (v3.6.5-16)"

var _ devices.ServeChecker = &DRS{}

// CheckServable implements devices.ServeChecker for DRS partitions.
// gcushare registers the slice count (enflame.com/drs-gcu) alone, serves
// regular containers only, matching them by that count, and gives every
// container the pod's gcu-assigned-index and -minor, which HAMi takes
// from the first container's card. So a DRS pod asks enflame.com/drs-gcu,
// in one regular container:
//   - gcu-memory or gcu-core without drs-gcu: the kubelet never calls the
//     plugin, and the container runs without its partition;
//   - an init container: its call takes a regular container's record;
//   - two containers: the second may get the first one's card.
func (v *DRS) CheckServable(pod *corev1.Pod) error {
	inits, regular := devices.ContainersAsking(pod, v.names.Count, v.names.Memory, v.names.Cores)
	countInits, countRegular := devices.ContainersAsking(pod, v.names.Count)
	withCount := append(countInits, countRegular...)
	for _, c := range append(inits, regular...) {
		if !slices.Contains(withCount, c) {
			return unservable("container %s asks %s or %s without %s; the plugin is called for %s only, so ask the slices (%s: N) instead",
				c, v.names.Memory, v.names.Cores, v.names.Count, v.names.Count, v.names.Count)
		}
	}
	switch {
	case len(inits) > 0:
		return unservable("init container %s asks %s; the plugin serves regular containers only", inits[0], v.names.Count)
	case len(regular) > 1:
		return unservable("containers %s each ask %s; the plugin gives every container the card of the pod's first, so ask in one container only",
			strings.Join(regular, ", "), v.names.Count)
	}
	return nil
}

func unservable(format string, args ...any) error {
	return &devices.UnservableError{Plugin: PluginVersion, Reason: fmt.Sprintf(format, args...)}
}
