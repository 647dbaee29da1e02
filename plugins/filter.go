package plugins

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// Filter checks whether the node's cards can hold every container of the
// pod, and keeps the chosen cards for Score, Reserve and PreBind. It reads
// only the in-memory cache and writes nothing to the API server. A pod
// PreFilter skipped passes every node (the framework does not even call
// Filter for it).
func (p *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s == nil {
		return nil
	}
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	fit := &nodeFit{}
	fit.assignments = fit.single[:]
	vendors := p.registry.Vendors()
	if len(vendors) > 1 {
		fit.assignments = make([]devices.Assignment, len(vendors))
	}
	var usageBuf [16]devices.Usage
	fitted := int64(0)
	for vi, v := range vendors {
		req := &s.requests[vi]
		if req.IsZero() {
			continue
		}
		cards, used, heldFor, err := p.nodeCards(s, node.Name, vi, usageBuf[:0])
		switch {
		case errors.Is(err, devicecache.ErrUnknownNode):
			p.rejected.add(pod)
			return fwk.NewStatus(fwk.Unschedulable, "node's devices not known yet")
		case err != nil:
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Name()+" devices unusable: "+err.Error())
		case len(cards) == 0:
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no "+v.Name()+" device on node")
		case heldFor != "":
			return fwk.NewStatus(fwk.Unschedulable, "insufficient "+v.Name()+" devices: freed for nominated pod "+heldFor)
		}
		a, rej := v.Fit(cards, used, req)
		if rej != nil {
			p.rejected.add(pod)
			return fwk.NewStatus(fwk.Unschedulable, "insufficient "+v.Name()+" devices: "+rej.Reason())
		}
		fit.assignments[vi] = a
		fit.load += devices.NodeLoad(cards, used, a)
		fitted++
	}
	if fitted > 1 {
		fit.load /= fitted
	}
	s.setFit(node.Name, fit)
	return nil
}

// nodeCards returns vendor vi's cards on node and their usage as this
// cycle sees it (a copy in dst): the cache's, less what the pods preemption
// is simulating away hold, plus what the nominated pods AddPod counted would
// take. heldFor names a nominated pod the cards cannot hold yet: nothing of
// the vendor is to spare on the node.
func (p *Plugin) nodeCards(s *cycleState, node string, vi int, dst []devices.Usage) (cards []devices.Card, used []devices.Usage, heldFor string, err error) {
	cards, used, err = p.cache.Snapshot(node, vi, dst)
	if err != nil || len(cards) == 0 {
		return cards, used, "", err
	}
	removed, nominated := s.simulatedOn(node)
	releaseRemoved(cards, used, removed, vi)
	for _, h := range nominated {
		if h.blocked[vi] {
			return cards, used, h.pod, nil
		}
		devices.ApplyGrants(cards, used, h.assignments[vi], h.inits, true)
		devices.ApplyReservations(cards, used, h.assignments[vi], devices.Reservations(h.assignments[vi]), true)
	}
	return cards, used, "", nil
}

// releaseRemoved subtracts, from a copy of the node's usage, what the pods
// that preemption is simulating away hold on vendor vi's cards.
func releaseRemoved(cards []devices.Card, used []devices.Usage, removed map[types.UID]devicecache.Holding, vi int) {
	for _, held := range removed {
		held.Apply(cards, used, vi, false)
	}
}
