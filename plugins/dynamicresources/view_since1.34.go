//go:build !k8s1.33 && !k8s1.30

package dynamicresources

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// withoutResources returns the pod as a plugin that must not see the
// resources hidden reports should see it: pod-level, init and regular
// containers' requests and limits without them. The pod itself when it
// asks none of them; otherwise a copy that shares everything else with it
// (read only).
func withoutResources(pod *v1.Pod, hidden func(v1.ResourceName) bool) *v1.Pod {
	if !asksAny(pod, hidden) {
		return pod
	}
	view := *pod
	view.Spec = *pod.Spec.DeepCopy()
	if view.Spec.Resources != nil {
		view.Spec.Resources = filtered(view.Spec.Resources, hidden)
	}
	for i := range view.Spec.InitContainers {
		view.Spec.InitContainers[i].Resources = *filtered(&view.Spec.InitContainers[i].Resources, hidden)
	}
	for i := range view.Spec.Containers {
		view.Spec.Containers[i].Resources = *filtered(&view.Spec.Containers[i].Resources, hidden)
	}
	return &view
}

// asksAny reports whether any requirement of the pod names a hidden
// resource.
func asksAny(pod *v1.Pod, hidden func(v1.ResourceName) bool) bool {
	names := func(r *v1.ResourceRequirements) bool {
		for name := range r.Requests {
			if hidden(name) {
				return true
			}
		}
		for name := range r.Limits {
			if hidden(name) {
				return true
			}
		}
		return false
	}
	if pod.Spec.Resources != nil && names(pod.Spec.Resources) {
		return true
	}
	for i := range pod.Spec.InitContainers {
		if names(&pod.Spec.InitContainers[i].Resources) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if names(&pod.Spec.Containers[i].Resources) {
			return true
		}
	}
	return false
}

// filtered removes the hidden resources from r's requests and limits, in
// place, and returns r.
func filtered(r *v1.ResourceRequirements, hidden func(v1.ResourceName) bool) *v1.ResourceRequirements {
	for name := range r.Requests {
		if hidden(name) {
			delete(r.Requests, name)
		}
	}
	for name := range r.Limits {
		if hidden(name) {
			delete(r.Limits, name)
		}
	}
	return r
}

// viewKey is the cycle state key of the pod view PreFilter made.
const viewKey fwk.StateKey = Name + "/pod"

// viewState is the pod view of one scheduling cycle.
type viewState struct{ pod *v1.Pod }

// Clone implements fwk.StateData; the view is never changed.
func (s *viewState) Clone() fwk.StateData { return s }

// view returns the pod as the in-tree plugin sees it.
func (pl *Plugin) view(pod *v1.Pod) *v1.Pod {
	return withoutResources(pod, pl.managesResource)
}

// cycleView is view for the extension points called once per node
// (Filter, Score): the view PreFilter kept in the cycle state, made once
// per cycle.
func (pl *Plugin) cycleView(state fwk.CycleState, pod *v1.Pod) *v1.Pod {
	if data, err := state.Read(viewKey); err == nil {
		if s, ok := data.(*viewState); ok && s.pod.UID == pod.UID {
			return s.pod
		}
	}
	return pl.view(pod)
}
