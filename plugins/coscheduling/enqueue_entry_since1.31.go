//go:build !k8s1.30

package coscheduling

import (
	"context"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// EventsToRegister implements fwk.EnqueueExtensions (events).
func (p *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return p.events(), nil
}
