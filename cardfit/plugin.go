package cardfit

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/plugins"
)

// FromPlugin reads the cards of the HAMi plugin's device cache.
func FromPlugin(p *plugins.Plugin) Cards { return pluginCards{p} }

type pluginCards struct{ p *plugins.Plugin }

func (c pluginCards) Simulate() (Placement, bool) {
	s, ok := c.p.Simulate()
	if !ok {
		return nil, false
	}
	return simulation{s}, true
}

func (c pluginCards) Placed(pod *corev1.Pod) bool     { return c.p.Placed(pod) }
func (c pluginCards) Describe(pod *corev1.Pod) string { return c.p.Describe(pod) }
func (c pluginCards) Default(pod *corev1.Pod) error   { return c.p.AdmissionDefaults(pod) }

type simulation struct{ s *plugins.Simulation }

func (s simulation) Place(pod *corev1.Pod) (string, string, bool) { return s.s.Place(pod) }
func (s simulation) Fork() Placement                              { return simulation{s.s.Fork()} }
