package cache

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// SetPod accounts a pod as the API server sees it. A bound, non-terminated
// pod whose annotations carry an assignment for its node holds those cards;
// anything else holds nothing, except an assignment assumed by this
// scheduler that the API has not caught up with yet. A bound pod whose
// assignment cannot be decoded may hold any card of its node: the node's
// cards take no new pod until it is gone or readable (fail closed), and
// SetPod returns the decoding error.
func (c *Cache) SetPod(pod *corev1.Pod) error {
	assignments, has, err := c.decodeAssignments(pod)
	var slices [][]devices.SliceReservation
	if err == nil && has {
		slices = c.podSlices(pod)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, tracked := c.pods[pod.UID]
	if terminated(pod) {
		if tracked {
			c.removePodLocked(pod.UID)
		}
		return err
	}
	if err != nil {
		if tracked {
			c.removePodLocked(pod.UID)
		}
		if pod.Spec.NodeName != "" {
			c.addPodLocked(pod.UID, &podState{key: klog.KObj(pod).String(), namespace: pod.Namespace, node: pod.Spec.NodeName,
				unreadable: fmt.Sprintf("pod %s holds an unreadable device assignment (%v); the node's cards are held until it is gone", klog.KObj(pod), err)})
		}
		return err
	}
	if !has || pod.Spec.NodeName == "" || pod.Annotations[devices.AssignedNode] != pod.Spec.NodeName {
		// Not (yet) bound with an assignment for its node: keep an assumed
		// entry until binding ends, drop a confirmed one.
		if tracked && !old.assumed {
			c.removePodLocked(pod.UID)
		}
		return nil
	}
	inits := len(pod.Spec.InitContainers)
	if inits > 0 && devices.InitContainersSucceeded(pod) {
		// HAMi: once every init container has succeeded, the pod holds
		// what its regular containers hold, for good.
		for i := range assignments {
			assignments[i] = assignments[i].Regular(inits)
		}
		inits = 0
	}
	if tracked {
		if old.node == pod.Spec.NodeName && old.inits == inits && sameAssignments(old.assignments, assignments) && sameSlices(old.slices, slices) {
			old.assumed = false
			return nil
		}
		c.removePodLocked(pod.UID)
	}
	c.addPodLocked(pod.UID, &podState{key: klog.KObj(pod).String(), namespace: pod.Namespace, node: pod.Spec.NodeName, assignments: assignments, slices: slices, inits: inits})
	return nil
}

// RemovePod releases what a deleted pod held and reports whether it held
// anything.
func (c *Cache) RemovePod(pod *corev1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, held := c.pods[pod.UID]
	c.removePodLocked(pod.UID)
	return held
}

// decodeAssignments reads each vendor's allocated annotation, from the
// scheduler's devices.AssignmentRecord when the pod has one (a device
// plugin may have rewritten the vendor's key). The grants of a
// devices.GrantClassifier get the pod's class. has is false when the pod
// carries none.
func (c *Cache) decodeAssignments(pod *corev1.Pod) (assignments []devices.Assignment, has bool, err error) {
	held, err := devices.ReadAllocated(pod.Annotations)
	if err != nil {
		return nil, false, fmt.Errorf("pod %s: %w", klog.KObj(pod), err)
	}
	vendors := c.registry.Vendors()
	assignments = make([]devices.Assignment, len(vendors))
	for i, v := range vendors {
		_, key := v.AssignmentAnnotations()
		raw, ok := held.Value(key)
		if !ok {
			continue
		}
		a, err := devices.DecodeAssignment(raw)
		if err != nil {
			return nil, false, fmt.Errorf("pod %s: annotation %s: %w", klog.KObj(pod), key, err)
		}
		if !a.Empty() {
			if gc, ok := v.(devices.GrantClassifier); ok {
				// The annotation does not carry the class; the vendor's
				// Fit stamped it on the assumed grants.
				a.WithClass(gc.GrantClass(pod))
			}
			assignments[i] = a
			has = true
		}
	}
	return assignments, has, nil
}

// podSlices reads the MIG reservations of the vendors that record them
// (devices.SliceReader); nil when the pod has none.
func (c *Cache) podSlices(pod *corev1.Pod) [][]devices.SliceReservation {
	var out [][]devices.SliceReservation
	vendors := c.registry.Vendors()
	for i, v := range vendors {
		sr, ok := v.(devices.SliceReader)
		if !ok {
			continue
		}
		if res := sr.PodSlices(pod); len(res) > 0 {
			if out == nil {
				out = make([][]devices.SliceReservation, len(vendors))
			}
			out[i] = res
		}
	}
	return out
}

func sameSlices(a, b [][]devices.SliceReservation) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return slices.EqualFunc(a, b, func(x, y []devices.SliceReservation) bool { return slices.Equal(x, y) })
}

// HasAssignment reports whether the pod carries any vendor's assignment
// annotation or the scheduler's record of one, without decoding it.
func (c *Cache) HasAssignment(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[devices.AssignmentRecord]; ok {
		return true
	}
	for _, v := range c.registry.Vendors() {
		_, key := v.AssignmentAnnotations()
		if _, ok := pod.Annotations[key]; ok {
			return true
		}
	}
	return false
}

func terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func sameAssignments(a, b []devices.Assignment) bool {
	return slices.EqualFunc(a, b, func(x, y devices.Assignment) bool {
		return slices.EqualFunc(x, y, func(g, h []devices.Grant) bool { return slices.Equal(g, h) })
	})
}

// ResumeHandOver accounts the assignment an unbound pod carries for node
// as assumed, as if this scheduler had just reserved it, when the cache
// holds nothing for the pod; it reports whether it did. The scheduler uses
// it for a hand-over that another scheduler process (one that stopped, or
// the leader a standby watches) began and did not finish.
func (c *Cache) ResumeHandOver(pod *corev1.Pod, node string) bool {
	if pod.Spec.NodeName != "" || terminated(pod) {
		return false
	}
	assignments, has, err := c.decodeAssignments(pod)
	if err != nil || !has {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, tracked := c.pods[pod.UID]; tracked {
		return false
	}
	c.addPodLocked(pod.UID, &podState{key: klog.KObj(pod).String(), namespace: pod.Namespace, node: node, assignments: assignments,
		slices: assignedSlices(assignments), inits: len(pod.Spec.InitContainers), assumed: true})
	return true
}
