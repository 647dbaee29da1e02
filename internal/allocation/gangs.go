package allocation

import (
	"cmp"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// WaitingGang is a PodGroup some of whose members wait at the scheduler's
// Permit for the rest of the group, with the cards each of them holds, as
// the scheduler published them on the PodGroup
// (devices.GangReservationsAnnotation). Those cards are reserved in the
// scheduler's memory only: the pods carry no allocated annotation and are
// not bound yet.
type WaitingGang struct {
	// Namespace and Name name the PodGroup; its members are pods of its
	// namespace.
	Namespace, Name string
	// Members are the waiting members, as the annotation lists them.
	Members []devices.GangReservation
}

// Key is the PodGroup as namespace/name.
func (g *WaitingGang) Key() string { return g.Namespace + "/" + g.Name }

// WaitingGangOf reads the waiting members a PodGroup's annotations
// publish. ok is false when it has no devices.GangReservationsAnnotation:
// none of its members waits.
func WaitingGangOf(namespace, name string, annotations map[string]string) (g WaitingGang, ok bool, err error) {
	value, ok := annotations[devices.GangReservationsAnnotation]
	if !ok {
		return WaitingGang{}, false, nil
	}
	r, err := devices.ParseGangReservations(value)
	if err != nil {
		return WaitingGang{}, false, fmt.Errorf("PodGroup %s/%s: %w", namespace, name, err)
	}
	return WaitingGang{Namespace: namespace, Name: name, Members: r.Members}, true, nil
}

// ReadWithGangs is Read, and also counts the cards that the gangs' members
// waiting at Permit hold: a member's cards count on the cards of its node
// exactly as if its pod carried the member's assignment in its allocated
// annotations, each grant marked ReservedFor the gang (Holder, PodGrant).
// pods must then hold the members' pods, unbound as they are; Read skips
// unbound pods, so they are not counted twice.
//
// A member counts only while it still waits: its pod is among pods (by
// namespace and name, and UID when both the member and the pod have one),
// is not bound (spec.nodeName empty), has not terminated, and the member's
// node is among nodes. Any other member is stale (its pod was deleted,
// recreated or bound, or its node is not read) and is ignored; a bound pod
// counts from its own annotation, as any pod does. A member whose pod
// already carries its own assignment (PreBind wrote it, bind phase
// allocating or success: it was let through and is being bound) counts
// once, from that annotation, on the node its hami.io/vgpu-node annotation
// names, unmarked. A pod listed by several members counts once, for the
// first.
func ReadWithGangs(vendors []devices.Vendor, nodes []corev1.Node, pods []corev1.Pod, gangs []WaitingGang) Report {
	return ReadCluster(Cluster{Vendors: vendors, Nodes: nodes, Pods: pods, Gangs: gangs})
}

// readGangs counts the cards the gangs' waiting members hold
// (ReadWithGangs).
func (rd *reader) readGangs(vendors []devices.Vendor, pods []corev1.Pod, gangs []WaitingGang) {
	if len(gangs) == 0 {
		return
	}
	byKey := podsByKey(pods)
	counted := map[string]bool{}
	for gi := range gangs {
		g := &gangs[gi]
		for mi := range g.Members {
			m := &g.Members[mi]
			key := g.Namespace + "/" + m.Pod
			p, ok := byKey[key]
			if !ok || counted[key] || !stillWaiting(p, m) {
				continue
			}
			counted[key] = true
			rd.readMember(vendors, g, m, p)
		}
	}
}

// podsByKey indexes the pods by namespace/name.
func podsByKey(pods []corev1.Pod) map[string]*corev1.Pod {
	out := make(map[string]*corev1.Pod, len(pods))
	for i := range pods {
		out[pods[i].Namespace+"/"+pods[i].Name] = &pods[i]
	}
	return out
}

// stillWaiting reports whether the member's pod may still wait at Permit:
// the same pod (UID, when both know it), neither bound nor terminated.
func stillWaiting(p *corev1.Pod, m *devices.GangReservation) bool {
	if m.UID != "" && p.UID != "" && string(p.UID) != m.UID {
		return false
	}
	return p.Spec.NodeName == "" && !terminated(p)
}

// handedOver reports whether PreBind wrote the pod's assignment for the
// binding under way (bind phase allocating) or done (success); an
// assignment marked failed is a former attempt's and says nothing.
func handedOver(p *corev1.Pod) bool {
	phase := p.Annotations[devices.BindPhase]
	return phase == devices.BindPhaseAllocating || phase == devices.BindPhaseSuccess
}

// readMember accounts what a waiting member of the gang holds on a node
// read: its reservation, or its own annotation once it was handed over.
func (rd *reader) readMember(vendors []devices.Vendor, g *WaitingGang, m *devices.GangReservation, p *corev1.Pod) {
	if handedOver(p) {
		node := cmp.Or(p.Annotations[devices.AssignedNode], m.Node)
		if rd.nodes[node] {
			h := holding{pod: p, node: node}
			rd.hold(vendors, h, rd.assignments(vendors, h, p.Annotations))
		}
		return
	}
	if !rd.nodes[m.Node] {
		return
	}
	h := holding{pod: p, node: m.Node, gang: g.Key()}
	rd.hold(vendors, h, rd.assignments(vendors, h, m.Allocated))
}
