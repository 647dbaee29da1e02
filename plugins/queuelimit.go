package plugins

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// queueBounds are the args that bound a node's queue (see queueLimit).
type queueBounds struct {
	// wait is nodeQueueWait, burstWait burstQueueWait, count
	// nodeQueueLimit; 0 is no bound.
	wait, burstWait time.Duration
	count           int32
}

func (p *Plugin) queueBounds() queueBounds {
	return queueBounds{wait: p.args.NodeQueueWait.Duration, burstWait: p.args.BurstQueueWait.Duration, count: p.args.NodeQueueLimit}
}

// bounded reports whether any bound applies (none: HAMi's order).
func (b queueBounds) bounded() bool { return b.wait > 0 || b.count > 0 }

// queueLimit is how many pods of this scheduler a node's queue holds in
// one round (rankByQueue), given the node's hand-over time per pod and the
// pod's burst (the pods of its burst, burstMemory):
//
//   - nodeQueueWait 0: nodeQueueLimit pods (0: no limit), at every time;
//   - otherwise the larger of the pods the node's device plugin serves
//     within nodeQueueWait (wait / the node's hand-over time per pod, and
//     the one it serves, inService) and
//     the burst, the burst bounded by burstQueueWait (in time, as wait)
//     and by nodeQueueLimit (in pods) when they are set.
//
// Pods that arrive one by one, as fast as the scheduler places them, have
// no burst: a node is sent only what it serves within nodeQueueWait, and
// a steady stream is spread over as many nodes as its rate needs. A burst
// may queue on a node as many pods as it has: a node's queue is then
// bounded only by what its cards hold, as in HAMi's order, so the burst
// packs onto the nodes and cards HAMi's order gives it and takes the time
// that packing takes (its busiest node's pods, one per hand-over).
//
// A limit of 0 or less means no limit.
func queueLimit(b queueBounds, perPod time.Duration, burst float64) float64 {
	if b.wait <= 0 {
		return float64(b.count)
	}
	if perPod <= 0 {
		perPod = DefaultHandOverTime
	}
	if b.burstWait > 0 {
		burst = min(burst, b.burstWait.Seconds()/perPod.Seconds())
	}
	if b.count > 0 {
		burst = min(burst, float64(b.count))
	}
	return max(b.wait.Seconds()/perPod.Seconds()+inService, burst)
}

// inService is the share of a node's queue that the pod its device plugin
// serves adds to the wait of a pod sent to the node: on average half its
// hand-over is left. A node serving one pod then takes the next one while
// its hand-over time is below twice nodeQueueWait (4 s with the shipped
// 2 s), not only below nodeQueueWait: a node whose measured time per pod
// drifts past 2 s (a loaded API server) still has a pod waiting when it
// is done with the one it serves, and a steady stream keeps the nodes its
// rate needs busy instead of spreading onto more.
const inService = 0.5

// burstMemory remembers, per scheduler, the latest burst: how many pods
// waited for the scheduler at once beyond what its arrival rate brings
// anyway (burstSize), and the last pod seen then. A pod of that burst
// (seen no later) keeps its size until it is placed, so the burst's last
// pods, placed when few others still wait, join the nodes its first pods
// queue on, which serve them no later than those queues end, instead of
// opening fresh nodes. A pod seen after it is sized afresh.
type burstMemory struct {
	mu     sync.Mutex
	latest map[string]burst
}

type burst struct {
	// pods is the burst's size; last the order of the last pod seen then.
	pods float64
	last uint64
}

// burstSize is how many of the pods waiting for the scheduler, the pod
// itself included, are a burst: those beyond what the nodes that keep up
// with the scheduler's arrival rate take in one hand-over (rate x the
// hand-over time per pod; with nodeQueueWait each such node has a pod in
// hand-over and about one waiting). A steady stream the scheduler keeps
// up with, or lags behind by less than a hand-over's arrivals, is no
// burst; pods created together, faster than their nodes can take them,
// are (a Job's or a Deployment's replicas, a backlog when the scheduler
// starts).
func burstSize(a arrivals, perPod time.Duration) float64 {
	return max(float64(a.behind+1)-a.perSecond*perPod.Seconds(), 1)
}

// allowance is the size of the pod's burst: that of the latest burst if
// the pod belongs to it, or else size, the pod's own (burstSize), which
// becomes the scheduler's latest burst. A pod alone is a burst of one.
func (b *burstMemory) allowance(scheduler string, size float64, a arrivals) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.latest == nil {
		b.latest = map[string]burst{}
	}
	latest := b.latest[scheduler]
	if a.seq > 0 && a.seq <= latest.last && latest.pods >= size {
		return latest.pods
	}
	b.latest[scheduler] = burst{pods: size, last: a.last}
	return size
}

// queueRounds returns the rounds function of rankByQueue for the pod, or
// nil when queues are not bounded or no node has a queue.
func (p *Plugin) queueRounds(pod *corev1.Pod) func(node string) int {
	bounds := p.queueBounds()
	if !bounds.bounded() {
		return nil
	}
	burst := 0.0
	if bounds.wait > 0 {
		a := p.waiting.arrivals(pod, time.Now())
		burst = p.bursts.allowance(pod.Spec.SchedulerName, burstSize(a, p.queues.clusterPerPod()), a)
	}
	if !p.queues.anyQueued() {
		// Every node is in round 0.
		return nil
	}
	// Each node's queue is read as the caller asks for it: ranking a
	// cluster's nodes reads each once, and a copy of every queue per
	// cycle would cost an allocation per node with a queue.
	return func(node string) int {
		length, perPod := p.queues.load(node)
		if length == 0 {
			return 0
		}
		limit := queueLimit(bounds, perPod, burst)
		if limit <= 0 {
			return 0
		}
		return int(float64(length) / limit)
	}
}
