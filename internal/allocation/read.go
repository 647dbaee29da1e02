package allocation

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/dra"
)

// Read reads the cards of every given vendor on the nodes (a vendor whose
// cards of a node cannot be used, Inventory's error, is skipped there and
// reported, naming the vendor; cordoned cards are marked) and accounts, per
// card, the grants of every pod the scheduler counts: bound to a node
// (spec.nodeName equal to its hami.io/vgpu-node annotation), not
// terminated, with a non-empty assignment in a vendor's allocated
// annotation. A grant is matched to a card by node, vendor and UUID. A pod
// whose assignment cannot be decoded, or names a card its node does not
// list, is reported and its other grants are still counted.
//
// It is ReadWithGangs without gangs.
func Read(vendors []devices.Vendor, nodes []corev1.Node, pods []corev1.Pod) Report {
	return ReadCluster(Cluster{Vendors: vendors, Nodes: nodes, Pods: pods})
}

// Cluster is what ReadCluster reads.
type Cluster struct {
	// Vendors are the vendors whose cards are read.
	Vendors []devices.Vendor
	Nodes   []corev1.Node
	Pods    []corev1.Pod
	// Gangs are the PodGroups whose members wait at Permit
	// (ReadWithGangs).
	Gangs []WaitingGang
	// Slices and Claims are the cluster's ResourceSlices and
	// ResourceClaims (ListDRA).
	Slices []resourceapi.ResourceSlice
	Claims []resourceapi.ResourceClaim
	// DRASplit is, per vendor name, how many containers may share one of
	// its DRA cards (devices.SplitCounts: the vendor's deviceSplitCount,
	// as the scheduler counts it); nil: devices.DefaultSplitCount.
	DRASplit func(vendor string) int32
}

// ReadCluster is ReadWithGangs over device-plugin and DRA cards alike.
// Of each node read, besides the cards each vendor's device plugin
// registers, it reads the cards that the node's ResourceSlices of a known
// DRA driver (devices/dra: HAMi's, NVIDIA's) publish for the vendor
// (dra.Inventory; a card both list is one card, the device plugin's). A
// DRA card is charged, as kube-scheduler's DRA manager and the scheduler
// count it, with every allocated claim's results on it (HAMi's claims,
// HAMi-DRA's, native ones: a share by its consumed capacity, a device
// allocated whole in full; admin access takes nothing), each a holder
// named after the first pod the claim is reserved for, and with the
// grants of the pods bound there whose allocated annotations name it by
// UUID (a device plugin served them before the node moved to the
// driver). A pod placed by a claim carries no HAMi assignment, so nothing
// counts twice. A claim holding a device that its node, read, no longer
// publishes is reported.
func ReadCluster(c Cluster) Report {
	rd := reader{
		r:             Report{Grants: map[string][]PodGrant{}, NodeErrors: map[string]string{}},
		cards:         map[cardKey]int{},
		unreadable:    map[cardKey]bool{},
		nodes:         map[string]bool{},
		draCards:      map[dra.DeviceKey]draCard{},
		draUnreadable: map[driverOnNode]bool{},
	}
	var draNodes map[string]*dra.NodeDevices
	draNodes, rd.pools = nodeDRA(c.Slices, c.DRASplit)
	for _, i := range byName(c.Nodes) {
		rd.readNode(c.Vendors, &c.Nodes[i], draNodes[c.Nodes[i].Name])
	}
	for i := range c.Pods {
		rd.readPod(c.Vendors, &c.Pods[i])
	}
	rd.readGangs(c.Vendors, c.Pods, c.Gangs)
	rd.readClaims(c.Claims, c.Pods)
	return rd.r
}

// reader is the state of one Read.
type reader struct {
	r Report
	// cards indexes r.Cards by node, vendor and UUID.
	cards map[cardKey]int
	// unreadable holds the node and vendor (no UUID) of each inventory
	// that could not be read.
	unreadable map[cardKey]bool
	// nodes are the names of the nodes read.
	nodes map[string]bool
	// draCards are the DRA devices read, by key.
	draCards map[dra.DeviceKey]draCard
	// pools are the nodes whose slices name each driver's pool.
	pools map[poolKey]string
	// draUnreadable holds the drivers of a node some of whose devices
	// could not be read.
	draUnreadable map[driverOnNode]bool
}

// holding is who holds an assignment, and on which node: a pod bound to
// it, or a gang member waiting at Permit whose reservation names it.
type holding struct {
	pod  *corev1.Pod
	node string
	// gang is the PodGroup, as namespace/name, whose waiting member holds
	// the cards by the reservation published on it; empty for what the
	// pod's own allocated annotation says.
	gang string
}

// problem reports what of the holding could not be accounted, on its
// node, saying when it is a waiting member's reservation.
func (rd *reader) problem(h holding, problem string) {
	if h.gang != "" {
		problem = fmt.Sprintf("reserved for waiting gang %s: %s", h.gang, problem)
	}
	rd.r.podProblem(h.pod, h.node, problem)
}

// cardKey names a card by node, vendor name and UUID.
type cardKey struct{ node, vendor, uuid string }

// byName returns the nodes' indexes in name order.
func byName(nodes []corev1.Node) []int {
	order := make([]int, len(nodes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return nodes[order[a]].Name < nodes[order[b]].Name })
	return order
}

// readNode appends each vendor's cards of the node, by index, then its
// DRA cards of the vendor (nd, nil for none), or records why they cannot
// be read.
func (rd *reader) readNode(vendors []devices.Vendor, n *corev1.Node, nd *dra.NodeDevices) {
	rd.nodes[n.Name] = true
	var reasons []string
	for _, v := range vendors {
		cards, err := v.Inventory(n)
		if err != nil {
			reason := fmt.Sprintf("%s: %v", v.Name(), err)
			rd.r.UnreadableNodes = append(rd.r.UnreadableNodes, fmt.Sprintf("node %s: %s", n.Name, reason))
			reasons = append(reasons, reason)
			rd.unreadable[cardKey{node: n.Name, vendor: v.Name()}] = true
			cards = nil
		}
		sort.SliceStable(cards, func(i, j int) bool { return cards[i].Index < cards[j].Index })
		for _, c := range cards {
			rd.cards[cardKey{n.Name, v.Name(), c.UUID}] = len(rd.r.Cards)
			rd.r.Cards = append(rd.r.Cards, CardUse{Node: n.Name, Vendor: v.Name(), Kind: KindDevicePlugin, Card: c, CoreTotal: coreTotal(v, &c)})
		}
		rd.readDRACards(n.Name, v, nd)
	}
	reasons = append(reasons, rd.draProblems(n.Name, nd)...)
	if len(reasons) > 0 {
		rd.r.NodeErrors[n.Name] = strings.Join(reasons, "; ")
	}
}

// readPod accounts what a bound, not terminated pod holds of each vendor's
// cards.
func (rd *reader) readPod(vendors []devices.Vendor, p *corev1.Pod) {
	if p.Spec.NodeName == "" || terminated(p) {
		return
	}
	h := holding{pod: p, node: p.Spec.NodeName}
	held := rd.assignments(vendors, h, p.Annotations)
	if len(held) == 0 {
		return
	}
	if assigned := p.Annotations[devices.AssignedNode]; assigned != p.Spec.NodeName {
		rd.problem(h, fmt.Sprintf("bound to node %s but %s is %q: not counted, as the scheduler does not count it",
			p.Spec.NodeName, devices.AssignedNode, assigned))
		return
	}
	rd.hold(vendors, h, held)
}

// terminated reports whether the pod has succeeded or failed: it holds
// nothing any more.
func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// hold records and charges the assignments, by vendor name, of one
// holding, vendor by vendor.
func (rd *reader) hold(vendors []devices.Vendor, h holding, held map[string]devices.Assignment) {
	for _, v := range vendors {
		if a, ok := held[v.Name()]; ok {
			rd.grant(v.Name(), h, a)
			rd.charge(v.Name(), h, a)
		}
	}
}

// assignments decodes the non-empty assignments, by vendor name, that
// annotations hold under the vendors' allocated keys (or in a
// devices.AssignmentRecord), reporting those that cannot be decoded: the
// pod's own annotations, or the Allocated map of a waiting member's
// reservation, which is keyed and encoded alike.
func (rd *reader) assignments(vendors []devices.Vendor, h holding, annotations map[string]string) map[string]devices.Assignment {
	held := map[string]devices.Assignment{}
	values, err := devices.ReadAllocated(annotations)
	if err != nil {
		rd.problem(h, err.Error())
		return held
	}
	for _, v := range vendors {
		_, key := v.AssignmentAnnotations()
		raw, ok := values.Value(key)
		if !ok {
			continue
		}
		a, err := devices.DecodeAssignment(raw)
		if err != nil {
			rd.problem(h, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		if !a.Empty() {
			if gc, ok := v.(devices.GrantClassifier); ok {
				// The pod's class, as the scheduler's cache counts it.
				a.WithClass(gc.GrantClass(h.pod))
			}
			held[v.Name()] = a
		}
	}
	return held
}

// grant records each grant of the holding's assignment of one vendor, on
// its card and in the pod's grants; a card the node does not list is
// reported unless the node's cards of that vendor could not be read.
func (rd *reader) grant(vendor string, h holding, a devices.Assignment) {
	p := h.pod
	key := p.Namespace + "/" + p.Name
	nodeUnreadable := rd.unreadable[cardKey{node: h.node, vendor: vendor}]
	containers := devices.Containers(p)
	for ci, container := range a {
		name := fmt.Sprintf("#%d", ci)
		if ci < len(containers) {
			name = containers[ci].Name
		}
		for _, g := range container {
			idx, ok := rd.cards[cardKey{h.node, vendor, g.UUID}]
			pg := PodGrant{Container: name, Grant: g, Index: -1, ReservedFor: h.gang}
			if ok {
				c := &rd.r.Cards[idx]
				c.Pods = append(c.Pods, key)
				c.Holders = append(c.Holders, Holder{Namespace: p.Namespace, Pod: p.Name, Container: name, MemoryMiB: g.MemoryMiB, Cores: g.Cores, ReservedFor: h.gang})
				pg.Index = c.Index
			} else if !nodeUnreadable {
				rd.problem(h, fmt.Sprintf("holds card %s that node %s does not list", g.UUID, h.node))
			}
			rd.r.Grants[key] = append(rd.r.Grants[key], pg)
		}
	}
}

// charge adds what a holding holds of one vendor's cards to its node's cards,
// as the scheduler accounts it: per card the larger of its biggest init
// grant and the sum of its regular grants, the regular grants alone once
// every init container has succeeded (HAMi's rules).
func (rd *reader) charge(vendor string, h holding, a devices.Assignment) {
	p := h.pod
	inits := len(p.Spec.InitContainers)
	if inits > 0 && devices.InitContainersSucceeded(p) {
		a, inits = a.Regular(inits), 0
	}
	seen := map[int]bool{}
	a.Grants(func(g devices.Grant) {
		idx, ok := rd.cards[cardKey{h.node, vendor, g.UUID}]
		if !ok || seen[idx] {
			return
		}
		seen[idx] = true
		c := &rd.r.Cards[idx]
		used := []devices.Usage{{}}
		devices.ApplyGrants([]devices.Card{c.Card}, used, a, inits, true)
		c.Used.Sharers += used[0].Sharers
		c.Used.MemoryMiB += used[0].MemoryMiB
		c.Used.Cores += used[0].Cores
	})
}
