package allocation

import (
	"cmp"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/dra"
)

// KindDevicePlugin is the Kind of a card a HAMi device plugin registers
// in the node's annotations. A card a DRA driver publishes has the
// driver's name as its Kind (dra.HAMiCore.Name, ...).
const KindDevicePlugin = "device-plugin"

// draCard is a DRA device read, and the card of the report it is.
type draCard struct {
	card   int
	device dra.Device
}

// poolKey names a driver's pool.
type poolKey struct{ driver, pool string }

// driverOnNode names a driver's devices on a node.
type driverOnNode struct{ driver, node string }

// nodeDRA is, per node name, the DRA cards its ResourceSlices publish
// (dra.Inventory, of the known drivers, split count split(vendor)); and,
// per driver's pool, the node whose slices name it.
func nodeDRA(slices []resourceapi.ResourceSlice, split func(vendor string) int32) (map[string]*dra.NodeDevices, map[poolKey]string) {
	if split == nil {
		split = func(string) int32 { return devices.DefaultSplitCount }
	}
	byNode := map[string][]*resourceapi.ResourceSlice{}
	pools := map[poolKey]string{}
	for i := range slices {
		s := &slices[i]
		if s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
			continue
		}
		if _, known := dra.DriverNamed(s.Spec.Driver); !known {
			continue
		}
		byNode[*s.Spec.NodeName] = append(byNode[*s.Spec.NodeName], s)
		pools[poolKey{s.Spec.Driver, s.Spec.Pool.Name}] = *s.Spec.NodeName
	}
	out := make(map[string]*dra.NodeDevices, len(byNode))
	for node, list := range byNode {
		nd := dra.Inventory(list, split)
		out[node] = &nd
	}
	return out, pools
}

// readDRACards appends the vendor's DRA cards of the node that its device
// plugin does not list already (by UUID: a card listed by both is one
// card, of the device plugin's kind).
func (rd *reader) readDRACards(node string, v devices.Vendor, nd *dra.NodeDevices) {
	if nd == nil {
		return
	}
	ds, _ := nd.ForVendor(v.Name())
	for _, d := range ds {
		key := cardKey{node, v.Name(), d.Card.UUID}
		idx, listed := rd.cards[key]
		if listed {
			rd.r.Cards[idx].AlsoDRA = d.Driver.Name
		} else {
			idx = len(rd.r.Cards)
			rd.cards[key] = idx
			rd.r.Cards = append(rd.r.Cards, CardUse{Node: node, Vendor: v.Name(), Kind: d.Driver.Name, Card: d.Card, CoreTotal: coreTotal(v, &d.Card)})
		}
		rd.draCards[d.Key] = draCard{card: idx, device: d}
	}
}

// draProblems records the DRA devices of the node that could not be read;
// claims on the node's devices of their drivers are then not reported.
func (rd *reader) draProblems(node string, nd *dra.NodeDevices) []string {
	if nd == nil {
		return nil
	}
	for _, p := range nd.Problems {
		rd.r.UnreadableNodes = append(rd.r.UnreadableNodes, fmt.Sprintf("node %s: %s", node, p))
		driver, _, _ := strings.Cut(p, " ")
		rd.draUnreadable[driverOnNode{driver, node}] = true
	}
	return nd.Problems
}

// readClaims charges what the allocated claims take of the DRA cards read
// (dra.AddResults, dra.Usage: a share by its consumed capacity, a device
// held whole in full) and records a holder per result, named after the
// pod the claim is reserved for.
func (rd *reader) readClaims(claims []resourceapi.ResourceClaim, pods []corev1.Pod) {
	consumed := map[dra.DeviceKey]dra.Consumption{}
	byKey := podsByKey(pods)
	for i := range claims {
		c := &claims[i]
		if c.Status.Allocation == nil {
			continue
		}
		dra.AddResults(consumed, c.Status.Allocation.Devices.Results)
		rd.claimHolders(c, byKey)
	}
	for _, dc := range rd.draCards {
		used := dra.Usage([]dra.Device{dc.device}, consumed)[0]
		c := &rd.r.Cards[dc.card]
		c.Used.Sharers += used.Sharers
		c.Used.MemoryMiB += used.MemoryMiB
		c.Used.Cores += used.Cores
	}
}

// claimHolders records, on its card and in the pods' grants, what each
// counted result of an allocated claim on a known driver's device takes;
// a device no node read publishes any more is reported when its node is
// read.
func (rd *reader) claimHolders(c *resourceapi.ResourceClaim, pods map[string]*corev1.Pod) {
	consumers := reservedPods(c)
	first, holder := "", fmt.Sprintf("%s/%s (claim, not reserved)", c.Namespace, c.Name)
	if len(consumers) > 0 {
		first, holder = consumers[0].Name, c.Namespace+"/"+consumers[0].Name
	}
	results := c.Status.Allocation.Devices.Results
	for i := range results {
		r := &results[i]
		if _, known := dra.DriverNamed(r.Driver); !known || !dra.Counted(r) {
			continue
		}
		dc, ok := rd.draCards[dra.DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}]
		if !ok {
			rd.unpublished(c, first, r)
			continue
		}
		g := dra.ResultGrant(dc.device, r)
		card := &rd.r.Cards[dc.card]
		containers := make([]string, len(consumers))
		for j, consumer := range consumers {
			key := c.Namespace + "/" + consumer.Name
			containers[j] = claimContainers(pods[key], consumer, c.Name, r.Request)
			rd.r.Grants[key] = append(rd.r.Grants[key], PodGrant{Container: containers[j], Grant: g, Index: card.Index, Claim: c.Name})
		}
		h := Holder{Namespace: c.Namespace, Pod: first, MemoryMiB: g.MemoryMiB, Cores: g.Cores, Claim: c.Name}
		if len(containers) > 0 {
			h.Container = containers[0]
		}
		card.Pods = append(card.Pods, holder)
		card.Holders = append(card.Holders, h)
	}
}

// unpublished reports a result on a device of a node read that the node's
// slices do not publish (the device vanished, or the node moved back to a
// device plugin), unless the node's devices of that driver could not all
// be read. The node is the one whose slices name the pool, else the one
// the allocation is for.
func (rd *reader) unpublished(c *resourceapi.ResourceClaim, pod string, r *resourceapi.DeviceRequestAllocationResult) {
	node, ok := rd.pools[poolKey{r.Driver, r.Pool}]
	if !ok {
		node = allocatedNode(c.Status.Allocation)
	}
	if !rd.nodes[node] || rd.draUnreadable[driverOnNode{r.Driver, node}] {
		return
	}
	name := cmp.Or(pod, c.Name)
	problem := fmt.Sprintf("ResourceClaim %s holds device %s/%s/%s, which node %s does not publish", c.Name, r.Driver, r.Pool, r.Device, node)
	rd.r.PodProblems = append(rd.r.PodProblems, fmt.Sprintf("pod %s/%s: %s", c.Namespace, name, problem))
	rd.r.PodIssues = append(rd.r.PodIssues, PodIssue{Namespace: c.Namespace, Pod: name, Node: node, Problem: problem})
}

// allocatedNode is the one node an allocation's node selector names by
// metadata.name, as kube-scheduler writes it for a node's devices; ""
// for any other selector.
func allocatedNode(a *resourceapi.AllocationResult) string {
	if a.NodeSelector == nil || len(a.NodeSelector.NodeSelectorTerms) != 1 {
		return ""
	}
	fields := a.NodeSelector.NodeSelectorTerms[0].MatchFields
	if len(fields) != 1 || fields[0].Key != "metadata.name" || fields[0].Operator != corev1.NodeSelectorOpIn || len(fields[0].Values) != 1 {
		return ""
	}
	return fields[0].Values[0]
}

// reservedPods are the pods the claim is reserved for.
func reservedPods(c *resourceapi.ResourceClaim) []resourceapi.ResourceClaimConsumerReference {
	var out []resourceapi.ResourceClaimConsumerReference
	for _, r := range c.Status.ReservedFor {
		if r.APIGroup == "" && r.Resource == "pods" {
			out = append(out, r)
		}
	}
	return out
}

// claimContainers names the containers of the pod (the consumer, when it
// is the same pod) that use the claim's request: those kube-scheduler
// mapped to it (status.extendedResourceClaimStatus), else those whose
// resources.claims name the pod's entry for the claim and the request
// (or all of the claim); "" when the pod is not known.
func claimContainers(p *corev1.Pod, consumer resourceapi.ResourceClaimConsumerReference, claim, request string) string {
	if p == nil || (p.UID != "" && consumer.UID != "" && p.UID != consumer.UID) {
		return ""
	}
	if s := p.Status.ExtendedResourceClaimStatus; s != nil && s.ResourceClaimName == claim {
		for _, m := range s.RequestMappings {
			if m.RequestName == request {
				return m.ContainerName
			}
		}
	}
	entry := podClaimEntry(p, claim)
	if entry == "" {
		return ""
	}
	parent, _, _ := strings.Cut(request, "/")
	var names []string
	for _, c := range devices.Containers(p) {
		for _, rc := range c.Resources.Claims {
			if rc.Name == entry && (rc.Request == "" || rc.Request == parent) {
				names = append(names, c.Name)
				break
			}
		}
	}
	return strings.Join(names, ",")
}

// podClaimEntry is the name of the pod's spec.resourceClaims entry that
// is the claim: named directly, or made from a template (the pod's
// status.resourceClaimStatuses).
func podClaimEntry(p *corev1.Pod, claim string) string {
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil && *s.ResourceClaimName == claim {
			return s.Name
		}
	}
	for _, e := range p.Spec.ResourceClaims {
		if e.ResourceClaimName != nil && *e.ResourceClaimName == claim {
			return e.Name
		}
	}
	return ""
}
