package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// RemovePod is called by preemption while it simulates evicting a victim:
// the cards the victim holds count as free for the pod being scheduled.
func (p *Plugin) RemovePod(ctx context.Context, state fwk.CycleState, podToSchedule *corev1.Pod, victim fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s == nil {
		return nil
	}
	pod := victim.GetPod()
	node, assignments, ok := p.cache.Assignments(pod.UID)
	if !ok || node != nodeInfo.Node().Name {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed == nil {
		s.removed = map[string]map[types.UID][]devices.Assignment{}
	}
	if s.removed[node] == nil {
		s.removed[node] = map[types.UID][]devices.Assignment{}
	}
	s.removed[node][pod.UID] = assignments
	return nil
}

// AddPod undoes a simulated removal. A pod that was never removed is
// already counted by the cache (or, when nominated and not yet placed,
// holds no card yet), so there is nothing to add.
func (p *Plugin) AddPod(ctx context.Context, state fwk.CycleState, podToSchedule *corev1.Pod, added fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.removed[nodeInfo.Node().Name], added.GetPod().UID)
	return nil
}
