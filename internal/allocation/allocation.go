// Package allocation reads back, from the pods' and nodes' annotations,
// what each card holds: per card usage against its capacity, each pod's
// cards, and anything that cannot be accounted. Tests use it to check that
// no card is over-committed; hami-local prints it as a table.
package allocation

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// CardUse is one card of a node and what the pods bound to the node hold
// of it, according to their hami.io/vgpu-devices-allocated annotations.
type CardUse struct {
	Node string
	devices.Card
	Used devices.Usage
	// Pods lists the holders as namespace/name, one entry per grant.
	Pods []string
	// Holders are the grants on the card, index-aligned with Pods.
	Holders []Holder
}

// Holder is one container's grant on a card.
type Holder struct {
	Namespace, Pod, Container string
	MemoryMiB, Cores          int32
}

// Overcommitted reports whether the card's holders exceed its split count,
// memory or cores.
func (c *CardUse) Overcommitted() bool {
	return c.Used.Sharers > c.Split || c.Used.MemoryMiB > int64(c.MemoryMiB) || c.Used.Cores > int64(c.Cores)
}

// PodGrant is one card given to one container of a pod.
type PodGrant struct {
	Container string
	devices.Grant
	// Index is the card's index on its node, -1 if the node lists no such
	// card.
	Index int
}

// Report is what Read found.
type Report struct {
	// Cards are every readable card, by node name then index.
	Cards []CardUse
	// Grants are each pod's cards, keyed namespace/name.
	Grants map[string][]PodGrant
	// UnreadableNodes say why a node's register annotation was skipped.
	UnreadableNodes []string
	// PodProblems say what of a pod could not be accounted: an undecodable
	// annotation, a card its node does not have.
	PodProblems []string
	// NodeErrors is UnreadableNodes by node name: the reason alone.
	NodeErrors map[string]string
	// PodIssues is PodProblems with the pod and its node apart.
	PodIssues []PodIssue
}

// PodIssue is what of one pod could not be accounted.
type PodIssue struct {
	// Namespace and Pod name the pod; Node is the node it is bound to.
	Namespace, Pod, Node string
	// Problem says what is wrong, without the pod's name.
	Problem string
}

func (r *Report) podProblem(p *corev1.Pod, problem string) {
	r.PodProblems = append(r.PodProblems, fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, problem))
	r.PodIssues = append(r.PodIssues, PodIssue{Namespace: p.Namespace, Pod: p.Name, Node: p.Spec.NodeName, Problem: problem})
}

// Read reads the NVIDIA cards of the nodes (nodes whose register
// annotation cannot be decoded are skipped and reported; cordoned cards are
// marked) and accounts, per card, the grants of every pod the scheduler
// counts: bound to a node (spec.nodeName equal to its hami.io/vgpu-node
// annotation), not terminated, with a non-empty assignment. A pod whose
// assignment cannot be decoded, or names a card its node does not list, is
// reported and its other grants are still counted.
func Read(nodes []corev1.Node, pods []corev1.Pod) Report {
	var cards []CardUse
	r := Report{NodeErrors: map[string]string{}}
	byUUID := map[string]int{}
	for i := range nodes {
		raw, ok := nodes[i].Annotations[nvidia.RegisterAnnotation]
		if !ok {
			continue
		}
		inventory, err := devices.DecodeInventory(raw)
		if err != nil {
			r.UnreadableNodes = append(r.UnreadableNodes, fmt.Sprintf("node %s: %v", nodes[i].Name, err))
			r.NodeErrors[nodes[i].Name] = err.Error()
			continue
		}
		devices.ApplyCordon(inventory, nodes[i].Annotations[devices.DeviceCordon])
		for _, c := range inventory {
			byUUID[nodes[i].Name+"/"+c.UUID] = len(cards)
			cards = append(cards, CardUse{Node: nodes[i].Name, Card: c})
		}
	}
	grants := map[string][]PodGrant{}
	for i := range pods {
		p := &pods[i]
		raw, ok := p.Annotations[nvidia.AllocatedAnnotation]
		if !ok || p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		key := p.Namespace + "/" + p.Name
		a, err := devices.DecodeAssignment(raw)
		if err != nil {
			r.podProblem(p, fmt.Sprintf("%s: %v", nvidia.AllocatedAnnotation, err))
			continue
		}
		if a.Empty() {
			continue
		}
		if assigned := p.Annotations[devices.AssignedNode]; assigned != p.Spec.NodeName {
			r.podProblem(p, fmt.Sprintf("bound to node %s but %s is %q: not counted, as the scheduler does not count it",
				p.Spec.NodeName, devices.AssignedNode, assigned))
			continue
		}
		_, nodeUnreadable := r.NodeErrors[p.Spec.NodeName]
		containers := devices.Containers(p)
		for ci, container := range a {
			name := fmt.Sprintf("#%d", ci)
			if ci < len(containers) {
				name = containers[ci].Name
			}
			for _, g := range container {
				idx, ok := byUUID[p.Spec.NodeName+"/"+g.UUID]
				pg := PodGrant{Container: name, Grant: g, Index: -1}
				if ok {
					c := &cards[idx]
					c.Pods = append(c.Pods, key)
					c.Holders = append(c.Holders, Holder{Namespace: p.Namespace, Pod: p.Name, Container: name, MemoryMiB: g.MemoryMiB, Cores: g.Cores})
					pg.Index = c.Index
				} else if !nodeUnreadable {
					r.podProblem(p, fmt.Sprintf("holds card %s that node %s does not list", g.UUID, p.Spec.NodeName))
				}
				grants[key] = append(grants[key], pg)
			}
		}
		chargePod(p, a, cards, byUUID)
	}
	sort.SliceStable(cards, func(i, j int) bool {
		if cards[i].Node != cards[j].Node {
			return cards[i].Node < cards[j].Node
		}
		return cards[i].Index < cards[j].Index
	})
	r.Cards, r.Grants = cards, grants
	return r
}

// chargePod adds what a pod holds to its node's cards, as the scheduler
// accounts it: per card the larger of its biggest init grant and the sum
// of its regular grants, the regular grants alone once every init
// container has succeeded (HAMi's rules).
func chargePod(p *corev1.Pod, a devices.Assignment, cards []CardUse, byUUID map[string]int) {
	inits := len(p.Spec.InitContainers)
	if inits > 0 && devices.InitContainersSucceeded(p) {
		a, inits = a.Regular(inits), 0
	}
	seen := map[int]bool{}
	a.Grants(func(g devices.Grant) {
		idx, ok := byUUID[p.Spec.NodeName+"/"+g.UUID]
		if !ok || seen[idx] {
			return
		}
		seen[idx] = true
		one := []devices.Card{cards[idx].Card}
		used := []devices.Usage{{}}
		devices.ApplyGrants(one, used, a, inits, true)
		cards[idx].Used.Sharers += used[0].Sharers
		cards[idx].Used.MemoryMiB += used[0].MemoryMiB
		cards[idx].Used.Cores += used[0].Cores
	})
}

// Overcommitments describes every card whose holders exceed it.
func Overcommitments(cards []CardUse) []string {
	var out []string
	for i := range cards {
		c := &cards[i]
		if c.Overcommitted() {
			out = append(out, fmt.Sprintf("node %s card %d (%s): %d/%d shares, %d/%d MiB, %d/%d cores held by %v",
				c.Node, c.Index, c.UUID, c.Used.Sharers, c.Split, c.Used.MemoryMiB, c.MemoryMiB, c.Used.Cores, c.Cores, c.Pods))
		}
	}
	return out
}
