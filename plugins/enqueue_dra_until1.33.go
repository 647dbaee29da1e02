//go:build k8s1.33 || k8s1.30

package plugins

import fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"

// draEvents: no DRA nodes take HAMi's pods before 1.34.
func (p *Plugin) draEvents() []fwk.ClusterEventWithHint { return nil }
