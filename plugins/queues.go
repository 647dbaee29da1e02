package plugins

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeQueues counts, per node, the pods this scheduler is handing over to
// it: from Reserve until the node's device plugin has served the pod (its
// bind-phase is success or failed), the pod is gone, or Unreserve. Only
// pods that take the node lock count. These pods hold or wait for the
// node's lock, so a node with a long queue takes a new pod only after all
// of them (nodeQueueLimit).
type nodeQueues struct {
	mu     sync.Mutex
	nodeOf map[types.UID]string
	length map[string]int
}

// add queues the pod on node (again: a pod is queued on one node at most).
func (q *nodeQueues) add(uid types.UID, node string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.nodeOf == nil {
		q.nodeOf, q.length = map[types.UID]string{}, map[string]int{}
	}
	q.removeLocked(uid)
	q.nodeOf[uid] = node
	q.length[node]++
}

// remove takes the pod out of its node's queue, if it is in one.
func (q *nodeQueues) remove(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.removeLocked(uid)
}

func (q *nodeQueues) removeLocked(uid types.UID) {
	node, ok := q.nodeOf[uid]
	if !ok {
		return
	}
	delete(q.nodeOf, uid)
	if q.length[node] <= 1 {
		delete(q.length, node)
		return
	}
	q.length[node]--
}

// len is the node's queue length.
func (q *nodeQueues) len(node string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.length[node]
}

// observe ends the pod's hand-over when the API shows its device plugin
// served it.
func (q *nodeQueues) observe(pod *corev1.Pod) {
	if handOverResult(pod) != "" {
		q.remove(pod.UID)
	}
}
