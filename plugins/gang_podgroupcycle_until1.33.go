//go:build k8s1.33 || k8s1.30

package plugins

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// snapshotRemovals is nil: no pod-group cycle before 1.35.
func (p *Plugin) snapshotRemovals(*corev1.Pod) map[string]map[types.UID]devicecache.Holding {
	return nil
}
