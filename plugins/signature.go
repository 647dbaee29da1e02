package plugins

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/plugins/handover"
)

// SignatureKey is the key of the HAMi plugin's fragment of a pod's
// scheduling signature (kube-scheduler's opportunistic batching, KEP-5598):
// what its Filter and Score read of a pod that asks for devices.
const SignatureKey = "HAMi.deviceFitInputs()"

// deviceSignature is everything of a device pod that the plugin's
// PreFilter, Filter and Score read, so that two pods with equal
// signatures fit and score alike on every node in the same state (the
// cache's cards, holds and queues are the state, not the pod). A pod's
// annotations enter only where the plugin reads them: through the
// requests the vendors parse (card selectors, types, policies, NUMA,
// modes), the node policy, and the few a vendor's score reads besides
// (devices.PolicyNeutralScorer); annotations nothing reads (an indexed
// Job's completion index, a training operator's replica index, kubectl's)
// do not keep replicas out of one batch. What the plugin keeps by the
// pod's UID is either signed too (whether the pod counts among those
// waiting) or makes the pod unsigned (signable).
type deviceSignature struct {
	// Namespace selects the device quota (quota.go).
	Namespace string `json:"namespace"`
	// Requests are the pod's device requests as PreFilter parses them,
	// by vendor name, for the vendors it asks: every container's ask and
	// the card preferences its annotations give, all that Filter reads of
	// them.
	Requests map[string]devices.PodRequest `json:"requests"`
	// NodePolicy orders the nodes (hami.io/node-scheduler-policy, or the
	// scheduler's default).
	NodePolicy devices.NodePolicy `json:"nodePolicy"`
	// ScoredAnnotations are the annotations a vendor the pod asks reads
	// when it scores (devices.PolicyNeutralScorer).
	ScoredAnnotations map[string]string `json:"scoredAnnotations,omitempty"`
	// Priority decides whether the pod may be narrowed to candidates.
	Priority *int32 `json:"priority,omitempty"`
	// Gang is the pod's gang (namespace/name): the plugin treats members
	// apart (PreFilter in a pod-group cycle, Unreserve, resumed
	// hand-overs), so members of different gangs are not batched together.
	Gang string `json:"gang,omitempty"`
	// Waiting is whether the pod is one that waits for its scheduler
	// (handover.WaitsForScheduler): the backlog the node queues are
	// bounded by counts the other pods waiting, so whether the pod
	// is among those waiting sets it apart from a pod that is not.
	Waiting bool `json:"waiting"`
	// What the choice of candidates (candidates.go) reads of the spec: the
	// nodes it admits and whether other plugins look at other pods.
	NodeSelector     map[string]string   `json:"nodeSelector,omitempty"`
	Affinity         *corev1.Affinity    `json:"affinity,omitempty"`
	Tolerations      []corev1.Toleration `json:"tolerations,omitempty"`
	OthersIgnorePods bool                `json:"othersIgnorePods"`
}

// podSignature returns the pod's signature value: nil for a pod that asks
// for no managed device (PreFilter skips it: no Filter or Score of this
// plugin runs for it), and ok false for a pod whose requests do not parse
// (PreFilter turns it away; it is not worth a batch) or that the plugin
// keeps state for by its UID that the signature cannot carry (signable).
func (p *Plugin) podSignature(pod *corev1.Pod) (value *deviceSignature, ok bool) {
	requests, asks, err := p.podRequests(pod)
	if err != nil {
		return nil, false
	}
	if !asks {
		return nil, true
	}
	if !p.signable(pod) {
		return nil, false
	}
	sig := &deviceSignature{
		Namespace:        pod.Namespace,
		Requests:         make(map[string]devices.PodRequest, 1),
		NodePolicy:       p.nodePolicy(pod),
		Priority:         pod.Spec.Priority,
		Gang:             gangOf(pod),
		Waiting:          handover.WaitsForScheduler(pod),
		NodeSelector:     pod.Spec.NodeSelector,
		Affinity:         pod.Spec.Affinity,
		Tolerations:      pod.Spec.Tolerations,
		OthersIgnorePods: othersIgnorePods(pod),
	}
	for vi, v := range p.registry.Vendors() {
		if requests[vi].IsZero() {
			continue
		}
		sig.Requests[v.Name()] = requests[vi]
		scorer, ok := v.(devices.PolicyNeutralScorer)
		if !ok {
			continue
		}
		for _, key := range scorer.ScoredAnnotations() {
			if value, set := pod.Annotations[key]; set {
				if sig.ScoredAnnotations == nil {
					sig.ScoredAnnotations = map[string]string{}
				}
				sig.ScoredAnnotations[key] = value
			}
		}
	}
	return sig, true
}

// signable reports whether nothing the plugin keeps by the pod's UID
// would set its fit or score apart from another pod's with the same
// signature: a hold of its own (the cards of a hand-over another
// scheduler process began, resumed for it, gang_resume.go, which its own cycle
// may take again), or a full pass it is owed (its last cycle was narrowed
// to candidates that all failed, candidates.go). A pod whose annotations
// show a hand-over under way (a gang member, unbound, its assignment
// allocating) may get such a hold at any time, whatever order the
// scheduler's queue and this plugin hear of it in, so it is not signed
// either.
func (p *Plugin) signable(pod *corev1.Pod) bool {
	if held, ok := p.cache.Holding(pod.UID); ok && held.Assumed {
		return false
	}
	if p.fullPass.has(pod.UID) {
		return false
	}
	return pod.Spec.NodeName != "" || gangOf(pod) == "" || pod.Annotations[devices.BindPhase] != devices.BindPhaseAllocating
}
