package plugins

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/plugins/handover"
)

// DefaultHandOverTime is a node's hand-over time per pod until one is
// measured (handover.DefaultTime).
const DefaultHandOverTime = handover.DefaultTime

// queueBounds are the args that bound a node's queue.
func (p *Plugin) queueBounds() handover.Bounds {
	return handover.Bounds{Wait: p.args.NodeQueueWait.Duration, BurstWait: p.args.BurstQueueWait.Duration, Count: p.args.NodeQueueLimit}
}

// queueRounds returns the rounds function of handover.RankByQueue for the
// pod, or nil when queues are not bounded or no node has a queue.
func (p *Plugin) queueRounds(pod *corev1.Pod) func(node string) int {
	bounds := p.queueBounds()
	if !bounds.Bounded() {
		return nil
	}
	burst := 0.0
	if bounds.Wait > 0 {
		a := p.waiting.Arrivals(pod, time.Now())
		burst = p.bursts.Allowance(pod.Spec.SchedulerName, handover.BurstSize(a, p.queues.ClusterPerPod()), a)
	}
	if !p.queues.AnyQueued() {
		// Every node is in round 0.
		return nil
	}
	// Each node's queue is read as the caller asks for it: ranking a
	// cluster's nodes reads each once, and a copy of every queue per
	// cycle would cost an allocation per node with a queue.
	return func(node string) int {
		length, perPod := p.queues.Load(node)
		if length == 0 {
			return 0
		}
		limit := bounds.Limit(perPod, burst)
		if limit <= 0 {
			return 0
		}
		return int(float64(length) / limit)
	}
}
