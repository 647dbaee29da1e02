package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
)

// TopAPIVersion and TopKind head the document `kubectl hami top -o json`
// prints. Within this version fields are only ever added, never renamed,
// removed or given another meaning.
const (
	TopAPIVersion = "kubectl-hami.hami.io/v1"
	TopKind       = "Top"
)

// Top is what `kubectl hami top` shows, and the document it prints with
// -o json. Nodes are sorted by name, cards by index, the pods of a card in
// the order the API listed them, then the members of waiting gangs by
// PodGroup.
type Top struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is the -n filter, empty for all namespaces. It only
	// restricts the pods listed (and the problems reported): the amounts
	// used always count the pods of every namespace.
	Namespace string `json:"namespace,omitempty"`
	// Nodes are the nodes with cards of a vendor read (readable or not:
	// NVIDIA's hami.io/node-nvidia-register annotation, ...), and any node
	// named on the command line.
	Nodes []TopNode `json:"nodes"`
	// Total sums every readable card of Nodes.
	Total Total `json:"total"`
	// Warnings say what the figures may miss, e.g. pods that could not be
	// listed cluster-wide.
	Warnings []string `json:"warnings,omitempty"`
}

// TopNode is one node and its cards.
type TopNode struct {
	Name string `json:"name"`
	// Kind is how the node's cards are known: "device-plugin" (a HAMi
	// device plugin registers them in the node's annotations), the name of
	// the DRA driver whose ResourceSlices publish them (e.g.
	// "hami-core-gpu.project-hami.io"), or several of these joined by
	// ", ": a vendor of each kind, or a node moving from the device plugin
	// to a driver whose register annotation remains (its cards, listed by
	// both, count once); empty for a node without cards.
	Kind string `json:"kind,omitempty"`
	// Error says why the node shows no cards, or not those of every
	// vendor: a vendor's register annotation cannot be used (each such
	// vendor named), or it has none.
	Error string `json:"error,omitempty"`
	// Cards are the node's cards by vendor, then index; empty (never
	// null) when no card could be read.
	Cards []TopCard `json:"cards"`
	// Total sums the node's cards; Total.Nodes is not set.
	Total Total `json:"total"`
	// Problems are the pods bound to the node whose cards could not all be
	// accounted (undecodable assignment, unknown card, ...).
	Problems []PodProblem `json:"problems,omitempty"`
}

// TopCard is one card, as registered, and what the pods hold of it.
type TopCard struct {
	// Vendor is the card's vendor, e.g. "NVIDIA", "Ascend910B4" or "DCU".
	Vendor string `json:"vendor"`
	// Kind is how the card is known: "device-plugin", or the name of the
	// DRA driver that publishes it.
	Kind string `json:"kind"`
	// AlsoDRA is the DRA driver that publishes a device-plugin card too
	// (allocation.CardUse.AlsoDRA); the card counts once.
	AlsoDRA string `json:"alsoDRA,omitempty"`
	// Index is the card's index among its vendor's cards of the node.
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	// Model is the registered type, e.g. "NVIDIA-Tesla T4".
	Model string `json:"model"`
	// Mode is the sharing mode: hami-core, mig or mps.
	Mode     string `json:"mode"`
	NUMA     int    `json:"numa"`
	Healthy  bool   `json:"healthy"`
	Cordoned bool   `json:"cordoned"`
	// Overcommitted is true when the holders exceed the card's memory or
	// cores, or, on a device-plugin card, its split count.
	Overcommitted bool `json:"overcommitted"`
	// MemoryMiB is the memory granted of the registered memory (already
	// scaled by the device plugin's memory scaling).
	MemoryMiB Amount `json:"memoryMiB"`
	// Cores is the core share granted of the card's core total (registered;
	// 100, percent, for an Ascend NPU in hami-core mode).
	Cores Amount `json:"cores"`
	// Sharers is the number of containers holding the card (on a DRA
	// card: allocation results) of its split count.
	Sharers Amount `json:"sharers"`
	// Pods are the grants on the card, one per container, restricted to
	// Top.Namespace when set; never null. They include the cards reserved
	// for members of gangs waiting at Permit (Grant.ReservedFor).
	Pods []Grant `json:"pods"`
	// OtherPods counts the grants left out of Pods by the namespace filter.
	OtherPods int `json:"otherPods,omitempty"`
}

// Amount is a used part of a total.
type Amount struct {
	Used  int64 `json:"used"`
	Total int64 `json:"total"`
}

// Grant is one container's share of a card, or one allocation result of
// a ResourceClaim on a DRA card.
type Grant struct {
	Namespace string `json:"namespace"`
	// Name is the pod; for a claim, the first pod it is reserved for,
	// empty when it is reserved for none.
	Name string `json:"name"`
	// Container is the container; for a claim, those using its request,
	// joined by ",".
	Container string `json:"container"`
	MemoryMiB int32  `json:"memoryMiB"`
	Cores     int32  `json:"cores"`
	// Claim is the ResourceClaim, in Namespace, whose allocation result
	// this is; empty for a grant of the pod's allocated annotation.
	Claim string `json:"claim,omitempty"`
	// ReservedFor, when set, is the PodGroup, as namespace/name, of the
	// gang whose member, this unbound pod, waits at Permit for the rest of
	// the gang: the card is reserved for it by the scheduler
	// (hami.io/gang-reservations on the PodGroup), not yet given by an
	// allocated annotation of the pod.
	ReservedFor string `json:"reservedFor,omitempty"`
}

// Total sums cards.
type Total struct {
	// Nodes counts the nodes with at least one readable card (cluster
	// total only).
	Nodes int `json:"nodes,omitempty"`
	// UnreadableNodes counts the nodes shown with an Error and no card
	// (cluster total only).
	UnreadableNodes int    `json:"unreadableNodes,omitempty"`
	Cards           int    `json:"cards"`
	MemoryMiB       Amount `json:"memoryMiB"`
	Cores           Amount `json:"cores"`
	Sharers         Amount `json:"sharers"`
}

// PodProblem is a pod whose cards could not all be accounted.
type PodProblem struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Problem   string `json:"problem"`
}

func (t *Total) add(c *TopCard) {
	t.Cards++
	t.MemoryMiB.Used += c.MemoryMiB.Used
	t.MemoryMiB.Total += c.MemoryMiB.Total
	t.Cores.Used += c.Cores.Used
	t.Cores.Total += c.Cores.Total
	t.Sharers.Used += c.Sharers.Used
	t.Sharers.Total += c.Sharers.Total
}

// noRegister is the Error of a node named on the command line that has no
// card of any vendor read.
const noRegister = "no card registered by a HAMi device plugin of the vendors read (e.g. hami.io/node-nvidia-register), nor published by a known DRA driver: not a HAMi node (or its device plugin or driver has not registered yet)"

// addKind adds a card's kind to its node's, each kind once, in the order
// first seen.
func addKind(kinds, kind string) string {
	if kinds == "" {
		return kind
	}
	if slices.Contains(strings.Split(kinds, ", "), kind) {
		return kinds
	}
	return kinds + ", " + kind
}

// buildTop turns what allocation.Read found into the document.
// unregistered are nodes named on the command line that have no card of
// any vendor read: they are shown with noRegister. namespace, when set,
// restricts the pods and problems listed.
func buildTop(r allocation.Report, unregistered []string, namespace string) Top {
	doc := Top{APIVersion: TopAPIVersion, Kind: TopKind, Namespace: namespace, Nodes: []TopNode{}}
	byName := map[string]*TopNode{}
	node := func(name string) *TopNode {
		if n, ok := byName[name]; ok {
			return n
		}
		n := &TopNode{Name: name, Cards: []TopCard{}}
		byName[name] = n
		return n
	}
	for _, name := range unregistered {
		node(name).Error = noRegister
	}
	for name, reason := range r.NodeErrors {
		node(name).Error = "cards cannot be read: " + reason
	}
	for i := range r.Cards {
		c := &r.Cards[i]
		n := node(c.Node)
		n.Kind = addKind(n.Kind, c.Kind)
		if c.AlsoDRA != "" {
			n.Kind = addKind(n.Kind, c.AlsoDRA)
		}
		card := TopCard{
			Vendor: c.Vendor, Kind: c.Kind, AlsoDRA: c.AlsoDRA, Index: c.Index, UUID: c.UUID, Model: c.Model, Mode: c.Mode, NUMA: c.NUMA,
			Healthy: c.Healthy, Cordoned: c.Cordoned, Overcommitted: c.Overcommitted(),
			MemoryMiB: Amount{int64(c.Used.MemoryMiB), int64(c.MemoryMiB)},
			Cores:     Amount{int64(c.Used.Cores), int64(c.CoreTotal)},
			Sharers:   Amount{int64(c.Used.Sharers), int64(c.Split)},
			Pods:      []Grant{},
		}
		for _, h := range c.Holders {
			if namespace != "" && h.Namespace != namespace {
				card.OtherPods++
				continue
			}
			card.Pods = append(card.Pods, Grant{Namespace: h.Namespace, Name: h.Pod, Container: h.Container, MemoryMiB: h.MemoryMiB, Cores: h.Cores, Claim: h.Claim, ReservedFor: h.ReservedFor})
		}
		n.Cards = append(n.Cards, card)
		n.Total.add(&n.Cards[len(n.Cards)-1])
	}
	for _, p := range r.PodIssues {
		if namespace != "" && p.Namespace != namespace {
			continue
		}
		if n, ok := byName[p.Node]; ok {
			n.Problems = append(n.Problems, PodProblem{Namespace: p.Namespace, Name: p.Pod, Problem: p.Problem})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		n := byName[name]
		doc.Nodes = append(doc.Nodes, *n)
		if len(n.Cards) == 0 && n.Error != "" {
			doc.Total.UnreadableNodes++
			continue
		}
		doc.Total.Nodes++
		for i := range n.Cards {
			doc.Total.add(&n.Cards[i])
		}
	}
	return doc
}
