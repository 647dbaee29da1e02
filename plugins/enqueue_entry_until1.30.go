//go:build k8s1.30

package plugins

import fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"

// EventsToRegister implements fwk.EnqueueExtensions (events); in 1.30 it
// takes no context and cannot fail.
func (p *Plugin) EventsToRegister() []fwk.ClusterEventWithHint {
	return p.events()
}
