//go:build !k8s1.33 && !k8s1.30

package dynamicresources

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Every extension point hands the in-tree plugin the pod's view
// (view_since1.34.go) and is otherwise the in-tree plugin's.

// SignPod implements fwk.SignPlugin.
func (pl *Plugin) SignPod(ctx context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return pl.inner.SignPod(ctx, pl.view(pod))
}

// EventsToRegister implements fwk.EnqueueExtensions: the in-tree plugin's
// events, their queueing hints judging the pod's view.
func (pl *Plugin) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	events, err := pl.inner.EventsToRegister(ctx)
	if err != nil {
		return nil, err
	}
	for i := range events {
		if hint := events[i].QueueingHintFn; hint != nil {
			events[i].QueueingHintFn = func(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
				return hint(logger, pl.view(pod), oldObj, newObj)
			}
		}
	}
	return events, nil
}

// PreEnqueue implements fwk.PreEnqueuePlugin.
func (pl *Plugin) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	return pl.inner.PreEnqueue(ctx, pl.view(pod))
}

// PreFilter implements fwk.PreFilterPlugin; it keeps the pod's view for
// Filter and Score.
func (pl *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	view := pl.view(pod)
	state.Write(viewKey, &viewState{pod: view})
	return pl.inner.PreFilter(ctx, state, view, nodes)
}

// PreFilterExtensions implements fwk.PreFilterPlugin.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions {
	return pl.inner.PreFilterExtensions()
}

// Filter implements fwk.FilterPlugin.
func (pl *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	return pl.inner.Filter(ctx, state, pl.cycleView(state, pod), nodeInfo)
}

// PostFilter implements fwk.PostFilterPlugin.
func (pl *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	return pl.inner.PostFilter(ctx, state, pl.view(pod), statuses)
}

// PodGroupPostFilter implements fwk.PodGroupPostFilterPlugin; it works on
// the claims the members' cycles recorded, not on their resources.
func (pl *Plugin) PodGroupPostFilter(ctx context.Context, state fwk.PodGroupCycleState, group fwk.PodGroupInfo, schedule fwk.PodGroupSchedulingFunc) (*fwk.PodGroupPostFilterResult, *fwk.Status) {
	return pl.inner.PodGroupPostFilter(ctx, state, group, schedule)
}

// Score implements fwk.ScorePlugin.
func (pl *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	return pl.inner.Score(ctx, state, pl.cycleView(state, pod), nodeInfo)
}

// ScoreExtensions implements fwk.ScorePlugin.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore implements fwk.ScoreExtensions.
func (pl *Plugin) NormalizeScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	return pl.inner.NormalizeScore(ctx, state, pl.cycleView(state, pod), scores)
}

// Reserve implements fwk.ReservePlugin.
func (pl *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	return pl.inner.Reserve(ctx, state, pl.view(pod), nodeName)
}

// Unreserve implements fwk.ReservePlugin.
func (pl *Plugin) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) {
	pl.inner.Unreserve(ctx, state, pl.view(pod), nodeName)
}

// PreBindPreFlight implements fwk.PreBindPlugin.
func (pl *Plugin) PreBindPreFlight(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	return pl.inner.PreBindPreFlight(ctx, state, pl.view(pod), nodeName)
}

// PreBind implements fwk.PreBindPlugin.
func (pl *Plugin) PreBind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	return pl.inner.PreBind(ctx, state, pl.view(pod), nodeName)
}
