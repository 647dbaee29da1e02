//go:build k8s1.33 || k8s1.30

package plugins

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// newDRARoute: DRA nodes take HAMi's pods from 1.34 (the 1.37 build).
func newDRARoute(klog.Logger, fwk.Handle, *devices.Registry, func(string) int32) (draRoute, func() bool, error) {
	return nil, func() bool { return true }, nil
}

// claimNamedElsewhere: pods have no extendedResourceClaimStatus before 1.34.
func (p *Plugin) claimNamedElsewhere(*corev1.Pod, *nodeFit) (*fwk.Status, string) { return nil, "" }
