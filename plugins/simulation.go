package plugins

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Simulation is a scratch copy of every node's cards and their usage, as
// the device cache holds them (assumed pods included), on which pods are
// placed one after another as Filter places them: each vendor's Fit with
// the pod's card policy, card type and UUID selectors, NUMA and exclusive
// use, on the nodes the pod may go to as far as their cordon, required
// node affinity and NoSchedule taints tell. Nothing is written to the
// cache. The nodes are tried in a fixed order, the fullest first (binpack,
// the shipped node policy), so a placement it finds is one of several the
// scheduler may choose; its use is whether the pods fit at all. Not safe
// for concurrent use.
type Simulation struct {
	p     *Plugin
	nodes []simNode
	// refused remembers why a node turned a pod of a given shape away:
	// the simulation only adds usage, so the node turns such pods away
	// for the rest of it (and of its forks).
	refused map[refusal]string
}

// refusal is a node and a pod shape (placeKey).
type refusal struct {
	shape string
	node  int
}

// simNode is one node's cards and their usage, per vendor.
type simNode struct {
	name  string
	cards [][]devices.Card
	used  [][]devices.Usage
	load  int64
}

// Simulate copies the cache's cards for a simulation; ok is false while
// the cache is still loading.
func (p *Plugin) Simulate() (s *Simulation, ok bool) {
	if !p.synced() {
		return nil, false
	}
	vendors := p.registry.Vendors()
	byName := map[string]*simNode{}
	for vi := range vendors {
		p.cache.VisitCards(vi, func(node string, cards []devices.Card, used []devices.Usage) {
			n := byName[node]
			if n == nil {
				n = &simNode{name: node, cards: make([][]devices.Card, len(vendors)), used: make([][]devices.Usage, len(vendors))}
				byName[node] = n
			}
			n.cards[vi] = cards
			n.used[vi] = slices.Clone(used)
			for i := range used {
				n.load += used[i].MemoryMiB
			}
		})
	}
	s = &Simulation{p: p, nodes: make([]simNode, 0, len(byName)), refused: map[refusal]string{}}
	for _, n := range byName {
		s.nodes = append(s.nodes, *n)
	}
	sort.Slice(s.nodes, func(i, j int) bool {
		if s.nodes[i].load != s.nodes[j].load {
			return s.nodes[i].load > s.nodes[j].load
		}
		return s.nodes[i].name < s.nodes[j].name
	})
	return s, true
}

// Place puts the pod on the first node whose cards take it and counts
// what it takes there. It returns the node ("" for a pod that asks no
// managed device, which fits anywhere), or why it fits on no node: the
// nodes per reason, in the words of Filter's status, e.g. "8 nodes:
// insufficient NVIDIA devices: insufficient memory".
func (s *Simulation) Place(pod *corev1.Pod) (node string, why string, ok bool) {
	requests, asks, err := s.p.podRequests(pod)
	if err != nil {
		return "", err.Error(), false
	}
	if !asks {
		return "", "", true
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	logger := klog.Background()
	reasons := map[string]int{}
	vendors := s.p.registry.Vendors()
	assignments := make([]devices.Assignment, len(vendors))
	shape := placeKey(pod, requests)
	for ni := range s.nodes {
		n := &s.nodes[ni]
		if why, ok := s.refused[refusal{shape, ni}]; ok {
			reasons[why]++
			continue
		}
		if !s.p.admits(logger, pod, affinity, n.name) {
			s.refused[refusal{shape, ni}] = "node(s) the pod may not go to"
			reasons["node(s) the pod may not go to"]++
			continue
		}
		reason := ""
		for vi, v := range vendors {
			req := &requests[vi]
			if req.IsZero() {
				continue
			}
			if len(n.cards[vi]) == 0 {
				reason = "no " + v.Name() + " device on node"
				break
			}
			a, rej := v.Fit(n.cards[vi], n.used[vi], req)
			if rej != nil {
				reason = "insufficient " + v.Name() + " devices: " + rej.Summary()
				if rej.Unresolvable {
					return "", v.Name() + " devices: " + rej.Summary(), false
				}
				break
			}
			assignments[vi] = a
		}
		if reason != "" {
			s.refused[refusal{shape, ni}] = reason
			reasons[reason]++
			continue
		}
		for vi := range vendors {
			if requests[vi].IsZero() {
				continue
			}
			devices.ApplyGrants(n.cards[vi], n.used[vi], assignments[vi], requests[vi].Inits, true)
			devices.ApplyReservations(n.cards[vi], n.used[vi], assignments[vi], devices.Reservations(assignments[vi]), true)
		}
		return n.name, "", true
	}
	return "", nodeReasons(len(s.nodes), reasons), false
}

// placeKey is what decides where a pod may go and whether a node's cards
// take it: its device requests and preferences, and what the node's
// admission reads (node selector, affinity, tolerations).
func placeKey(pod *corev1.Pod, requests []devices.PodRequest) string {
	// JSON, not %v: the affinity's nested pointers would print as addresses.
	admission, _ := json.Marshal([]any{pod.Spec.NodeSelector, pod.Spec.Affinity, pod.Spec.Tolerations})
	return fmt.Sprintf("%v|%s", requests, admission)
}

// nodeReasons renders reasons (nodes per reason) as "0/8 nodes: 8
// insufficient NVIDIA devices: insufficient memory", the most frequent
// reason first.
func nodeReasons(nodes int, reasons map[string]int) string {
	if nodes == 0 {
		return "no node has cards of a vendor the plugin serves"
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if reasons[keys[i]] != reasons[keys[j]] {
			return reasons[keys[i]] > reasons[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", reasons[k], k)
	}
	return fmt.Sprintf("0/%d nodes with cards: %s", nodes, strings.Join(parts, ", "))
}

// Describe says what the pod asks of each vendor's cards, in HAMi's words:
// e.g. "1 NVIDIA card of 30000 MiB and 0% cores". Empty when it asks none
// or its requests cannot be read.
func (p *Plugin) Describe(pod *corev1.Pod) string {
	requests, asks, err := p.podRequests(pod)
	if err != nil || !asks {
		return ""
	}
	var parts []string
	for vi, v := range p.registry.Vendors() {
		r := &requests[vi]
		for ci, c := range r.Containers {
			if c.IsZero() || ci < r.Inits {
				continue
			}
			mem := fmt.Sprintf("%d MiB", c.MemoryMiB)
			if c.MemoryMiB == 0 {
				mem = fmt.Sprintf("%d%% memory", c.MemoryPercent)
			}
			unit := "card"
			if c.Count != 1 {
				unit = "cards"
			}
			parts = append(parts, fmt.Sprintf("%d %s %s of %s and %d%% cores", c.Count, v.Name(), unit, mem, c.Cores))
		}
	}
	return strings.Join(parts, ", ")
}

// Placed reports whether the pod holds cards in the device cache (assumed
// or confirmed) or is bound to a node.
func (p *Plugin) Placed(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" {
		return true
	}
	_, ok := p.cache.Holding(pod.UID)
	return ok
}

// Fork copies the simulation: pods placed on the copy leave s as it is.
func (s *Simulation) Fork() *Simulation {
	out := &Simulation{p: s.p, nodes: make([]simNode, len(s.nodes)), refused: maps.Clone(s.refused)}
	for i, n := range s.nodes {
		n.used = slices.Clone(n.used)
		for vi := range n.used {
			n.used[vi] = slices.Clone(n.used[vi])
		}
		out.nodes[i] = n
	}
	return out
}

// AdmissionDefaults applies, in place, every vendor's container defaults
// the webhook applies to a pod it admits (Default, or DefaultInPod for a
// devices.PodDefaulter), for a pod built from a template before the API
// server admitted it.
func (p *Plugin) AdmissionDefaults(pod *corev1.Pod) error {
	for _, ctr := range devices.Containers(pod) {
		for _, v := range p.registry.Vendors() {
			var err error
			if pd, ok := v.(devices.PodDefaulter); ok {
				_, err = pd.DefaultInPod(pod, ctr)
			} else {
				_, err = v.Default(ctr)
			}
			if err != nil {
				return fmt.Errorf("container %s: %w", ctr.Name, err)
			}
		}
	}
	return nil
}

// KubeConfig is the scheduler's connection to the API server.
func (p *Plugin) KubeConfig() *rest.Config { return p.handle.KubeConfig() }

// PodLister reads the scheduler's pod informer.
func (p *Plugin) PodLister() corelisters.PodLister { return p.pods }
