//go:build k8s1.33 || k8s1.30

package plugins

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// countFits: before 1.34 NodeResourcesFit checks every card count.
func (p *Plugin) countFits(*corev1.Pod, fwk.NodeInfo, []devices.PodRequest) *fwk.Status { return nil }
