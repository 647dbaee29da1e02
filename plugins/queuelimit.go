package plugins

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// queueLimit is how many pods of this scheduler a node's queue holds in
// one round (rankByQueue), from nodeQueueWait, nodeQueueLimit and the pods
// still waiting for the scheduler:
//
//   - nodeQueueWait 0: nodeQueueLimit pods (0: no limit);
//   - otherwise the pods the node's device plugin serves within
//     nodeQueueWait (wait / the node's hand-over time per pod), or, when
//     more pods than that wait for the scheduler (a backlog), as many as
//     wait, up to nodeQueueLimit. A steady stream that the scheduler keeps
//     up with then queues no more than nodeQueueWait of work on a node,
//     while a burst is packed onto few nodes as with the count limit: its
//     pods wait for the scheduler or for a node either way.
//
// A limit of 0 or less means no limit.
func queueLimit(wait time.Duration, countLimit int32, perPod time.Duration, waiting int) float64 {
	if wait <= 0 {
		return float64(countLimit)
	}
	if perPod <= 0 {
		perPod = DefaultHandOverTime
	}
	inTime := wait.Seconds() / perPod.Seconds()
	burst := float64(min(int(countLimit), waiting))
	return math.Max(inTime, burst)
}

// queueRounds returns the rounds function of rankByQueue for the pod, or
// nil when queues are not limited or no node has a queue.
func (p *Plugin) queueRounds(pod *corev1.Pod) func(node string) int {
	wait, countLimit := p.args.NodeQueueWait.Duration, p.args.NodeQueueLimit
	if wait <= 0 && countLimit <= 0 {
		return nil
	}
	waiting := 0
	if wait > 0 {
		waiting = p.waiting.behind(pod)
	}
	busy := p.queues.busy()
	if len(busy) == 0 {
		// Every node is in round 0.
		return nil
	}
	return func(node string) int {
		load, ok := busy[node]
		if !ok {
			return 0
		}
		limit := queueLimit(wait, countLimit, load.perPod, waiting)
		if limit <= 0 {
			return 0
		}
		return int(float64(load.length) / limit)
	}
}
