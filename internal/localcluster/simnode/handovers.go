package simnode

import (
	"sync"
	"time"
)

// HandOver is a node passing from one pod to the next: the device plugin
// released the node lock after serving the previous pod, and later the
// kubelet called Allocate for the next one. The time between is what the
// scheduler's lock hand-over (and the kubelet's admission) costs the node.
type HandOver struct {
	Node, Namespace, Name string
	// Released is when the device plugin last released the node's lock
	// before this pod's Allocate; zero when it never did.
	Released time.Time
	// AllocateStarted is when the kubelet first called Allocate for the pod.
	AllocateStarted time.Time
}

// handOverLog records HandOvers as the device plugins and kubelets go.
type handOverLog struct {
	mu          sync.Mutex
	lastRelease map[string]time.Time
	log         []HandOver
}

// released notes that node's device plugin released the lock at t.
func (h *handOverLog) released(node string, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastRelease == nil {
		h.lastRelease = map[string]time.Time{}
	}
	h.lastRelease[node] = t
}

// allocating notes the first Allocate of a pod on node at t.
func (h *handOverLog) allocating(node, namespace, name string, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, HandOver{Node: node, Namespace: namespace, Name: name, Released: h.lastRelease[node], AllocateStarted: t})
}

// take returns the log and starts a new one.
func (h *handOverLog) take() []HandOver {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.log
	h.log = nil
	return out
}

// TakeHandOvers returns the hand-overs since the last call (or the start)
// and forgets them.
func (a *Agent) TakeHandOvers() []HandOver { return a.handOvers.take() }
