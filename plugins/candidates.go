package plugins

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// offerCandidates narrows the cycle to the nodes Score would rank first
// (candidateNodes): on a cluster with more nodes holding the pod's vendors
// than that, every plugin's Filter and Score runs on candidateNodes nodes
// instead of all, which is what the scheduling loop's time per pod grows
// with. The candidates are the nodes whose cards hold the pod (their fit is
// kept for Filter), best first as handover.RankByQueue and the node policy order
// them, among those whose taints, required node affinity and cordon let
// the pod in. nil (every node) when the pod is not narrowed
// (narrowable), when the cluster is small enough, or when no node's cards
// hold the pod (the full pass then gives the usual reasons and lets
// preemption look everywhere).
func (p *Plugin) offerCandidates(logger klog.Logger, s *cycleState, pod *corev1.Pod) *fwk.PreFilterResult {
	limit := int(p.args.CandidateNodes)
	// A pod no candidate fits is activated for a full pass (PostFilter),
	// which needs Handle.Activate.
	if limit <= 0 || !fwk.CanActivate || !p.narrowable(s, pod) {
		return nil
	}
	if p.fullPass.take(pod.UID) {
		logger.V(4).Info("Offering every node: no candidate fitted the pod last time", "pod", klog.KObj(pod))
		return nil
	}
	buf := candidateBufferPool.Get().(*candidateBuffers)
	defer buf.release()
	buf.loads = p.cache.NodeLoads(func(vi int) bool { return !s.requests[vi].IsZero() }, buf.loads[:0])
	if len(buf.loads) <= limit {
		return nil
	}
	rounds := p.queueRounds(pod)
	buf.order = newCandidateOrder(buf.order[:0], buf.loads, s.nodePolicy, rounds)
	order := &buf.order
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	offered := sets.New[string]()
	for name, ok := order.next(); ok; name, ok = order.next() {
		if !p.admits(logger, pod, affinity, name) {
			continue
		}
		fit, st, _ := p.fitNodeChecking(s, pod, name, false)
		if !st.IsSuccess() {
			continue
		}
		fit.offered = true
		s.setFit(name, fit)
		offered.Insert(name)
		if offered.Len() == limit {
			break
		}
	}
	if offered.Len() == 0 {
		return nil
	}
	s.narrowed = true
	return &fwk.PreFilterResult{NodeNames: offered}
}

// candidateOrder yields nodes as NormalizeScore would rank them for the
// pod: fewest queue rounds first (when queues are bounded), then the
// fullest (binpack) or the emptiest (spread) by HAMi's node score, then by
// name for a stable order. It is a heap: taking the first few of many
// nodes costs a pass over them, not a sort.
type candidateOrder []rankedNode

type rankedNode struct {
	name   string
	rounds int
	// score is HAMi's node score, negated under spread: higher first.
	score float32
}

// newCandidateOrder fills dst (its capacity reused) with the loads' nodes
// and orders it.
func newCandidateOrder(dst candidateOrder, loads []devicecache.NodeLoad, policy devices.NodePolicy, rounds func(node string) int) candidateOrder {
	o := slices.Grow(dst[:0], len(loads))
	for _, l := range loads {
		n := rankedNode{name: l.Node, score: l.Score}
		if rounds != nil {
			n.rounds = rounds(l.Node)
		}
		if policy == devices.NodeSpread {
			n.score = -n.score
		}
		o = append(o, n)
	}
	heap.Init(&o)
	return o
}

// candidateBuffers are the slices one choice of candidates fills, kept
// for the next: at thousands of nodes a fresh pair per pod is an
// allocation of a few hundred KiB each time.
type candidateBuffers struct {
	loads []devicecache.NodeLoad
	order candidateOrder
}

var candidateBufferPool = sync.Pool{New: func() any { return new(candidateBuffers) }}

// release returns the buffers to the pool, emptied (popping the order
// shortened it; its capacity stays).
func (b *candidateBuffers) release() {
	clear(b.loads)
	b.loads = b.loads[:0]
	b.order = b.order[:0]
	clear(b.order[:cap(b.order)])
	candidateBufferPool.Put(b)
}

// next returns the best node not yet returned.
func (o *candidateOrder) next() (string, bool) {
	if o.Len() == 0 {
		return "", false
	}
	return heap.Pop(o).(rankedNode).name, true
}

func (o candidateOrder) Len() int { return len(o) }
func (o candidateOrder) Less(i, j int) bool {
	a, b := o[i], o[j]
	return cmp.Or(cmp.Compare(a.rounds, b.rounds), cmp.Compare(b.score, a.score), cmp.Compare(a.name, b.name)) < 0
}
func (o candidateOrder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o *candidateOrder) Push(x any)   { *o = append(*o, x.(rankedNode)) }
func (o *candidateOrder) Pop() any {
	old := *o
	n := old[len(old)-1]
	*o = old[:len(old)-1]
	return n
}

// narrowable reports whether the pod may be offered candidates: it asks
// vendors whose node score is HAMi's alone, it cannot preempt (priority 0
// or below), and no other plugin's answer depends on other pods, volumes
// or ports, which the candidates' choice does not look at.
func (p *Plugin) narrowable(s *cycleState, pod *corev1.Pod) bool {
	if p.policyScored(s) || (pod.Spec.Priority != nil && *pod.Spec.Priority > 0) {
		return false
	}
	return othersIgnorePods(pod)
}

// othersIgnorePods reports whether no other plugin's answer for the pod
// depends on other pods, volumes or ports (narrowable's part that reads the
// pod's spec alone).
func othersIgnorePods(pod *corev1.Pod) bool {
	spec := &pod.Spec
	if a := spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return false
	}
	for _, c := range spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return false
		}
	}
	if len(spec.ResourceClaims) > 0 {
		return false
	}
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return false
		}
	}
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range containers {
			for _, port := range c.Ports {
				if port.HostPort > 0 {
					return false
				}
			}
		}
	}
	return true
}

// admits reports whether the node lets the pod in as far as its cordon,
// its NoSchedule and NoExecute taints and the pod's required node affinity
// go (what NodeUnschedulable, TaintToleration and NodeAffinity check).
func (p *Plugin) admits(logger klog.Logger, pod *corev1.Pod, affinity nodeaffinity.RequiredNodeAffinity, name string) bool {
	node, err := p.nodes.Get(name)
	if err != nil {
		return false
	}
	if node.Spec.Unschedulable && !toleratesCordon(pod) {
		return false
	}
	if ok, err := affinity.Match(node); err != nil || !ok {
		return false
	}
	return fwk.ToleratesNoSchedule(logger, pod, node)
}

// toleratesCordon reports whether the pod tolerates the taint a cordoned
// node stands for (node.kubernetes.io/unschedulable:NoSchedule).
func toleratesCordon(pod *corev1.Pod) bool {
	for _, t := range pod.Spec.Tolerations {
		if (t.Key == corev1.TaintNodeUnschedulable || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) &&
			(t.Effect == "" || t.Effect == corev1.TaintEffectNoSchedule) {
			return true
		}
	}
	return false
}

// fullPasses are the pods whose last cycle was narrowed and fitted none of
// the candidates (another plugin turned them all away): their next cycle
// sees every node.
type fullPasses struct {
	mu   sync.Mutex
	pods map[types.UID]struct{}
}

func (f *fullPasses) add(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pods == nil {
		f.pods = map[types.UID]struct{}{}
	}
	f.pods[uid] = struct{}{}
}

// take reports whether the pod is owed a full pass, and forgets it.
func (f *fullPasses) take(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.pods[uid]
	delete(f.pods, uid)
	return ok
}

// has reports whether the pod is owed a full pass.
func (f *fullPasses) has(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.pods[uid]
	return ok
}

func (f *fullPasses) remove(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pods, uid)
}
