package plugins

import (
	"math"
	"sync"
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
//     a backlog allows more (burst, see burstMemory), that many, up to
//     nodeQueueLimit. A steady stream that the scheduler keeps up with
//     then queues no more than nodeQueueWait of work on a node, while a
//     burst is packed onto few nodes as with the count limit: its pods
//     wait for the scheduler or for a node either way.
//
// A limit of 0 or less means no limit.
func queueLimit(wait time.Duration, countLimit int32, perPod time.Duration, burst float64) float64 {
	if wait <= 0 {
		return float64(countLimit)
	}
	if perPod <= 0 {
		perPod = DefaultHandOverTime
	}
	inTime := wait.Seconds() / perPod.Seconds()
	return math.Max(inTime, math.Min(float64(countLimit), burst))
}

// burstMemory is a backlog's allowance per scheduler: the pods waiting for
// the scheduler, or, once fewer wait, the most that waited (up to
// nodeQueueLimit) less one pod per DefaultHandOverTime since, as fast as
// the queues the backlog built drain. The last pods of a backlog then join
// the nodes its first pods queue on, which serve them no later than those
// queues end, instead of spreading onto fresh nodes.
type burstMemory struct {
	mu   sync.Mutex
	peak map[string]burstPeak
}

type burstPeak struct {
	pods float64
	at   time.Time
}

// allowance records waiting (capped at limit) and returns the allowance.
func (b *burstMemory) allowance(scheduler string, waiting int, limit int32, now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.peak == nil {
		b.peak = map[string]burstPeak{}
	}
	w := math.Min(float64(waiting), float64(limit))
	peak := b.peak[scheduler]
	decayed := peak.pods - now.Sub(peak.at).Seconds()/DefaultHandOverTime.Seconds()
	if w >= decayed {
		b.peak[scheduler] = burstPeak{pods: w, at: now}
		return w
	}
	return max(decayed, 0)
}

// queueRounds returns the rounds function of rankByQueue for the pod, or
// nil when queues are not limited or no node has a queue.
func (p *Plugin) queueRounds(pod *corev1.Pod) func(node string) int {
	wait, countLimit := p.args.NodeQueueWait.Duration, p.args.NodeQueueLimit
	if wait <= 0 && countLimit <= 0 {
		return nil
	}
	burst := 0.0
	if wait > 0 {
		burst = p.bursts.allowance(pod.Spec.SchedulerName, p.waiting.behind(pod), countLimit, time.Now())
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
		limit := queueLimit(wait, countLimit, perPod, burst)
		if limit <= 0 {
			return 0
		}
		return int(float64(length) / limit)
	}
}
