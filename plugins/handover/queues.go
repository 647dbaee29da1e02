// Package handover follows the pods a scheduler hands over to the nodes'
// device plugins: the pods in hand-over to each node and the node's
// measured time per pod (Queues), the pods still waiting for the scheduler
// and the rate at which they arrive (Waiting), the bursts they make
// (Bursts, BurstSize), the bounds on what one node's queue holds in one
// round (Bounds) and the ranking of nodes by those rounds (RankByQueue).
// The HAMi plugin keeps one of each and wires them to its args
// (plugins/handover.go).
package handover

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// DefaultTime is a node's hand-over time per pod until one is measured:
// HAMi's device plugin makes 8 API calls per pod through a client limited
// to 5 QPS (client-go's default), 1.6 s once its burst is spent.
const DefaultTime = 1600 * time.Millisecond

// weight is the weight of a new measurement in a node's hand-over time
// (an exponentially weighted mean).
const weight = 0.25

// Queues counts, per node, the pods this scheduler is handing over to
// it: from Reserve until the node's device plugin has served the pod (its
// bind-phase is success or failed), the pod is gone, or Unreserve. Only
// pods that take the node lock count. These pods hold or wait for the
// node's lock, so a node with a long queue takes a new pod only after all
// of them (nodeQueueLimit, nodeQueueWait).
//
// It also measures each node's hand-over time per pod: when the device
// plugin serves a pod that was queued behind the previous one, the time
// between the two services (the pods of one node are served one after
// the other), averaged from DefaultTime.
type Queues struct {
	mu     sync.Mutex
	queued map[types.UID]queuedPod
	nodes  map[string]*nodeQueue
	// perPod is the hand-over time per pod measured on every node, as
	// each node's is (0: none yet).
	perPod time.Duration
}

type queuedPod struct {
	node  string
	since time.Time
}

type nodeQueue struct {
	length int
	// perPod is the measured hand-over time per pod (0: none yet).
	perPod time.Duration
	// lastServed is when the node's device plugin last served a pod.
	lastServed time.Time
}

// Add queues the pod on node (again: a pod is queued on one node at most).
func (q *Queues) Add(uid types.UID, node string, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queued == nil {
		q.queued, q.nodes = map[types.UID]queuedPod{}, map[string]*nodeQueue{}
	}
	q.removeLocked(uid)
	q.queued[uid] = queuedPod{node: node, since: now}
	nq := q.nodes[node]
	if nq == nil {
		nq = &nodeQueue{}
		q.nodes[node] = nq
	}
	nq.length++
}

// Remove takes the pod out of its node's queue, if it is in one.
func (q *Queues) Remove(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.removeLocked(uid)
}

func (q *Queues) removeLocked(uid types.UID) {
	qp, ok := q.queued[uid]
	if !ok {
		return
	}
	delete(q.queued, uid)
	if nq := q.nodes[qp.node]; nq != nil && nq.length > 0 {
		nq.length--
	}
}

// Served ends the pod's hand-over and measures the node's time per pod
// when the pod was queued behind the one served before it: the time
// between the two services. A pod sent to an idle node is served out of
// the device plugin's burst, faster than a queue is, and measures nothing.
func (q *Queues) Served(uid types.UID, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qp, ok := q.queued[uid]
	if !ok {
		return
	}
	q.removeLocked(uid)
	nq := q.nodes[qp.node]
	previous := nq.lastServed
	nq.lastServed = now
	if previous.IsZero() || !qp.since.Before(previous) || now.Before(previous) {
		return
	}
	nq.perPod = averaged(nq.perPod, now.Sub(previous))
	q.perPod = averaged(q.perPod, now.Sub(previous))
}

// averaged adds a measurement to a mean of hand-over times (0: none yet,
// DefaultTime).
func averaged(mean, measured time.Duration) time.Duration {
	if mean <= 0 {
		mean = DefaultTime
	}
	return mean + time.Duration(weight*float64(measured-mean))
}

// ClusterPerPod is the hand-over time per pod measured on all nodes
// (DefaultTime until measured).
func (q *Queues) ClusterPerPod() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.perPod <= 0 {
		return DefaultTime
	}
	return q.perPod
}

// Len is the node's queue length.
func (q *Queues) Len(node string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if nq := q.nodes[node]; nq != nil {
		return nq.length
	}
	return 0
}

// Load is the node's queue length and its hand-over time per pod
// (DefaultTime until measured).
func (q *Queues) Load(node string) (length int, perPod time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	nq := q.nodes[node]
	if nq == nil {
		return 0, DefaultTime
	}
	perPod = nq.perPod
	if perPod <= 0 {
		perPod = DefaultTime
	}
	return nq.length, perPod
}

// AnyQueued reports whether any node has a pod in its queue.
func (q *Queues) AnyQueued() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queued) > 0
}

// Observe ends the pod's hand-over when the API shows its device plugin
// served it.
func (q *Queues) Observe(pod *corev1.Pod, now time.Time) {
	if Result(pod) != "" {
		q.Served(pod.UID, now)
	}
}

// ForgetNode drops what is known of a node that left the cluster.
func (q *Queues) ForgetNode(node string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if nq := q.nodes[node]; nq != nil && nq.length == 0 {
		delete(q.nodes, node)
	}
}

// Result is how the node's device plugin ended the pod's hand-over, by its
// bind phase: "success", "failed", or "" while it has not.
func Result(pod *corev1.Pod) string {
	switch pod.Annotations[devices.BindPhase] {
	case devices.BindPhaseSuccess:
		return "success"
	case devices.BindPhaseFailed:
		return "failed"
	}
	return ""
}
