package handover

import (
	"sync"
	"time"
)

// Bounds are the args that bound a node's queue (see Limit).
type Bounds struct {
	// Wait is nodeQueueWait, BurstWait burstQueueWait, Count
	// nodeQueueLimit; 0 is no bound.
	Wait, BurstWait time.Duration
	Count           int32
}

// Bounded reports whether any bound applies (none: HAMi's order).
func (b Bounds) Bounded() bool { return b.Wait > 0 || b.Count > 0 }

// Limit is how many pods of this scheduler a node's queue holds in one
// round (RankByQueue), given the node's hand-over time per pod and the
// pod's burst (the pods of its burst, Bursts):
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
func (b Bounds) Limit(perPod time.Duration, burst float64) float64 {
	if b.Wait <= 0 {
		return float64(b.Count)
	}
	if perPod <= 0 {
		perPod = DefaultTime
	}
	if b.BurstWait > 0 {
		burst = min(burst, b.BurstWait.Seconds()/perPod.Seconds())
	}
	if b.Count > 0 {
		burst = min(burst, float64(b.Count))
	}
	return max(b.Wait.Seconds()/perPod.Seconds()+inService, burst)
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

// Bursts remembers, per scheduler, the latest burst: how many pods
// waited for the scheduler at once beyond what its arrival rate brings
// anyway (BurstSize), and the last pod seen then. A pod of that burst
// (seen no later) keeps its size until it is placed, so the burst's last
// pods, placed when few others still wait, join the nodes its first pods
// queue on, which serve them no later than those queues end, instead of
// opening fresh nodes. A pod seen after it is sized afresh.
type Bursts struct {
	mu     sync.Mutex
	latest map[string]burst
}

type burst struct {
	// pods is the burst's size; last the order of the last pod seen then.
	pods float64
	last uint64
}

// BurstSize is how many of the pods waiting for the scheduler, the pod
// itself included, are a burst: those beyond what the nodes that keep up
// with the scheduler's arrival rate take in one hand-over (rate x the
// hand-over time per pod; with nodeQueueWait each such node has a pod in
// hand-over and about one waiting). A steady stream the scheduler keeps
// up with, or lags behind by less than a hand-over's arrivals, is no
// burst; pods created together, faster than their nodes can take them,
// are (a Job's or a Deployment's replicas, a backlog when the scheduler
// starts).
func BurstSize(a Arrivals, perPod time.Duration) float64 {
	return max(float64(a.behind+1)-a.perSecond*perPod.Seconds(), 1)
}

// Allowance is the size of the pod's burst: that of the latest burst if
// the pod belongs to it, or else size, the pod's own (BurstSize), which
// becomes the scheduler's latest burst. A pod alone is a burst of one.
func (b *Bursts) Allowance(scheduler string, size float64, a Arrivals) float64 {
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
