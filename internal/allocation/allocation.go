// Package allocation reads back, from the pods' and nodes' annotations
// and from the DRA drivers' ResourceSlices and the ResourceClaims
// allocated on them, what each card holds: per card usage against its
// capacity, each pod's cards, and anything that cannot be accounted. One
// account per card: a card a DRA driver publishes counts its claims and
// the grants of pods a device plugin served on it before the node moved
// to the driver. Tests use it to check that no card is over-committed;
// hami-local prints it as a table; kubectl hami top shows it. It covers
// every vendor it is given (devices.Vendor).
package allocation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// CardUse is one card of a node and what the pods bound to the node hold
// of it, according to their allocated annotations of the card's vendor
// (NVIDIA's hami.io/vgpu-devices-allocated, ...), what members of gangs
// waiting at Permit reserved on it (ReadWithGangs), and, for a card a DRA
// driver publishes, what the claims allocated on it take (ReadCluster).
type CardUse struct {
	Node string
	// Vendor is the name of the card's vendor (devices.Vendor.Name), e.g.
	// "NVIDIA" or "Ascend910B4".
	Vendor string
	// Kind is how the card is known: KindDevicePlugin (a device plugin's
	// register annotation), or the name of the DRA driver whose
	// ResourceSlice publishes it.
	Kind string
	// AlsoDRA is, for a card a device plugin registers, the DRA driver
	// that publishes it too (same UUID: a node moving from one to the
	// other whose register annotation remains); empty otherwise. The card
	// is one card, of the device plugin's kind, as the scheduler counts it.
	AlsoDRA string
	devices.Card
	// CoreTotal is the core total the scheduler checks the card's grants
	// against: Card.Cores, but 100 for an Ascend NPU in hami-core mode
	// (its grants' cores are percent).
	CoreTotal int32
	Used      devices.Usage
	// Pods lists the holders as namespace/name, one entry per grant.
	Pods []string
	// Holders are the grants on the card, index-aligned with Pods.
	Holders []Holder
}

// Holder is one container's grant on a card, or one allocation result of
// a claim on a DRA card.
type Holder struct {
	// Namespace and Pod name the pod holding the grant; for a claim, the
	// first pod it is reserved for ("" when none). Container is the
	// container (for a claim: the containers using the request, joined by
	// ","; "" when the pod is not known).
	Namespace, Pod, Container string
	MemoryMiB, Cores          int32
	// Claim is the name of the ResourceClaim, in Namespace, whose
	// allocation result this is; empty for an annotation's grant.
	Claim string
	// ReservedFor is the PodGroup, as namespace/name, of a gang whose
	// member, the pod, waits at Permit for the rest of the gang, holding
	// the card by the reservation the scheduler published on the
	// PodGroup (ReadWithGangs); empty for a grant the pod's own allocated
	// annotation carries.
	ReservedFor string
}

// Overcommitted reports whether the card's holders exceed its memory or
// cores, or, on a card a device plugin registers, its split count. A DRA
// card's split count bounds only the pods hami-scheduler places there:
// the driver lets any number of claims share the device within its
// capacities, so more sharers is not an over-commit.
func (c *CardUse) Overcommitted() bool {
	return (c.Used.Sharers > c.Split && !c.OnDRA()) || c.Used.MemoryMiB > int64(c.MemoryMiB) || c.Used.Cores > int64(c.CoreTotal)
}

// OnDRA reports whether a DRA driver publishes the card.
func (c *CardUse) OnDRA() bool { return c.Kind != "" && c.Kind != KindDevicePlugin }

// PodGrant is one card given to one container of a pod.
type PodGrant struct {
	Container string
	devices.Grant
	// Index is the card's index on its node, -1 if the node lists no such
	// card.
	Index int
	// ReservedFor is the PodGroup, as namespace/name, of the gang whose
	// waiting member holds the card by reservation (Holder.ReservedFor);
	// empty for the pod's own annotation.
	ReservedFor string
	// Claim is the ResourceClaim, of the pod's namespace, that gives the
	// pod the card; empty for an annotation's grant.
	Claim string
}

// Report is what Read found.
type Report struct {
	// Cards are every readable card, by node name, then vendor in the
	// order Read was given them, then index.
	Cards []CardUse
	// Grants are each pod's cards, keyed namespace/name.
	Grants map[string][]PodGrant
	// UnreadableNodes say why a vendor's cards of a node were skipped, as
	// "node <name>: <vendor>: <reason>", or a DRA device, as "node <name>:
	// <driver> device <device>: <reason>".
	UnreadableNodes []string
	// PodProblems say what of a pod could not be accounted: an undecodable
	// annotation, a card its node does not have.
	PodProblems []string
	// NodeErrors is UnreadableNodes by node name: "<vendor>: <reason>"
	// (or "<driver> device <device>: <reason>"), joined by "; " when
	// several vendors or devices of the node are unreadable.
	NodeErrors map[string]string
	// PodIssues is PodProblems with the pod and its node apart.
	PodIssues []PodIssue
}

// PodIssue is what of one pod could not be accounted.
type PodIssue struct {
	// Namespace and Pod name the pod; Node is the node it is bound to, or
	// that the reservation of a waiting gang member names.
	Namespace, Pod, Node string
	// Problem says what is wrong, without the pod's name.
	Problem string
}

// podProblem reports what of the pod could not be accounted on node.
func (r *Report) podProblem(p *corev1.Pod, node, problem string) {
	r.PodProblems = append(r.PodProblems, fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, problem))
	r.PodIssues = append(r.PodIssues, PodIssue{Namespace: p.Namespace, Pod: p.Name, Node: node, Problem: problem})
}

// Overcommitments describes every card whose holders exceed it.
func Overcommitments(cards []CardUse) []string {
	var out []string
	for i := range cards {
		c := &cards[i]
		if c.Overcommitted() {
			out = append(out, fmt.Sprintf("node %s %s card %d (%s): %d/%d shares, %d/%d MiB, %d/%d cores held by %v",
				c.Node, c.Vendor, c.Index, c.UUID, c.Used.Sharers, c.Split, c.Used.MemoryMiB, c.MemoryMiB, c.Used.Cores, c.CoreTotal, c.Pods))
		}
	}
	return out
}
