package plugins

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
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
	if st := p.countFits(pod, nodeInfo, s.requests); st != nil {
		s.rejections.add(node.Name, st.Message(), "")
		return st
	}
	if fit, ok := s.fit(node.Name); ok && fit.offered {
		// PreFilter fitted it when it chose the candidates.
		return nil
	}
	fit, st, detail := p.fitNode(s, pod, node.Name)
	if !st.IsSuccess() {
		// The status message is the same for the same cause on any node,
		// so that kube-scheduler's FailedScheduling counts nodes per
		// reason; the node's own detail goes to the log and to HAMi's
		// FilteringFailed event.
		klog.FromContext(ctx).V(4).Info("Node's devices do not fit the pod", "pod", klog.KObj(pod), "node", node.Name, "reason", st.Message(), "detail", detail)
		s.rejections.add(node.Name, st.Message(), detail)
		return st
	}
	s.setFit(node.Name, fit)
	return nil
}

// fitNode places the pod on the node's cards (as this cycle sees them) and
// computes the node's score. A status that turns the node away carries a
// node-independent message; detail is the node's own account of it.
func (p *Plugin) fitNode(s *cycleState, pod *corev1.Pod, nodeName string) (fit *nodeFit, st *fwk.Status, detail string) {
	return p.fitNodeChecking(s, pod, nodeName, true)
}

// fitNodeChecking is fitNode; with recheckGone false, a failed fit is not
// retried without the pods the informer no longer has (releaseGone), which
// costs a lookup per pod on the node: choosing candidates (candidates.go)
// tries many full nodes, and leaving out one that fits only once the
// cache has caught up with a deletion costs nothing.
func (p *Plugin) fitNodeChecking(s *cycleState, pod *corev1.Pod, nodeName string, recheckGone bool) (fit *nodeFit, st *fwk.Status, detail string) {
	fit = &nodeFit{}
	fit.assignments = fit.single[:]
	vendors := p.registry.Vendors()
	if len(vendors) > 1 {
		fit.assignments = make([]devices.Assignment, len(vendors))
	}
	var usageBuf [16]devices.Usage
	var tally devices.NodeTally
	var vendorScore float64
	for vi, v := range vendors {
		req := &s.requests[vi]
		if req.IsZero() {
			// HAMi's node score counts every card of the node.
			if cards, used, _, _, err := p.nodeCards(s, nodeName, vi, usageBuf[:0]); err == nil {
				tally.Add(cards, used)
			}
			continue
		}
		cards, used, heldFor, onDRA, err := p.nodeCards(s, nodeName, vi, usageBuf[:0])
		switch {
		case errors.Is(err, devicecache.ErrUnknownNode):
			p.rejected.add(pod)
			return nil, fwk.NewStatus(fwk.Unschedulable, "node's devices not known yet"), err.Error()
		case err != nil:
			p.rejected.add(pod)
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Name()+" devices unusable"), err.Error()
		case len(cards) == 0:
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no "+v.Name()+" device on node"), ""
		case heldFor != "":
			return nil, fwk.NewStatus(fwk.Unschedulable, "insufficient "+v.Name()+" devices: held for a nominated pod"), "freed for nominated pod " + heldFor
		}
		if onDRA {
			req = claimedRequest(req)
		}
		a, rej := v.Fit(cards, used, req)
		if rej != nil && !rej.Unresolvable && recheckGone && p.releaseGone(nodeName, cards, used, vi) {
			a, rej = v.Fit(cards, used, req)
		}
		if rej != nil {
			if rej.Unresolvable {
				// The pod's own annotations cannot be honoured on any node.
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Name()+" devices: "+rej.Summary()), rej.Reason()
			}
			p.rejected.add(pod)
			return nil, fwk.NewStatus(fwk.Unschedulable, "insufficient "+v.Name()+" devices: "+rej.Summary()), rej.Reason()
		}
		if key, why := p.exceedsQuota(s, pod, vi, v, a, req.Inits); why != "" {
			p.rejected.add(pod)
			return nil, fwk.NewStatus(fwk.Unschedulable, "exceeding resource quota: "+string(key)), why
		}
		if onDRA != fit.onDRA && fit.asksAny() {
			// One pod's shares on one node come from one kind of card:
			// a claim, or HAMi's annotations for the device plugins.
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "devices of a DRA driver and of a device plugin on one node"), ""
		}
		fit.onDRA = onDRA
		fit.assignments[vi] = a
		tally.Add(cards, used)
		if ns, ok := v.(devices.NodeScorer); ok {
			vendorScore += ns.ScoreAssignment(cards, a)
		}
		vendorScore += placementScore(s.nodePolicy, pod, v, cards, used, a)
	}
	if st, detail := p.claimNamedElsewhere(pod, fit); st != nil {
		return nil, st, detail
	}
	fit.score = tally.Score() + float32(vendorScore)
	return fit, nil, ""
}

// claimedRequest is the pod's request as its claim consumes a DRA node's
// cards: each container's share is a result of its own that consumes its
// capacity, so init containers add to the regular ones, where HAMi's
// collapsed accounting counts the largest init container or the regular
// ones' sum, whichever is more.
func claimedRequest(req *devices.PodRequest) *devices.PodRequest {
	if req.Inits == 0 {
		return req
	}
	r := *req
	r.Inits = 0
	return &r
}

// releaseGone subtracts from used what pods hold that the informer's
// store no longer has (deleted, but the cache's own informer handler has
// not caught up yet), and reports whether there were any. Only a fit that
// failed pays for this check.
func (p *Plugin) releaseGone(node string, cards []devices.Card, used []devices.Usage, vi int) bool {
	released := false
	for uid, held := range p.cache.HoldingsOn(node) {
		if held.Assumed {
			continue
		}
		ns, name, err := cache.SplitMetaNamespaceKey(held.Key)
		if err != nil {
			continue
		}
		pod, err := p.pods.Pods(ns).Get(name)
		if (err != nil && apierrors.IsNotFound(err)) || (err == nil && pod.UID != uid) {
			held.Apply(cards, used, vi, false)
			released = true
		}
	}
	return released
}

// nodeCards returns vendor vi's cards on node and their usage as this
// cycle sees it (a copy in dst): the cache's, less what the pods preemption
// is simulating away hold, plus what the nominated pods AddPod counted would
// take. heldFor names a nominated pod the cards cannot hold yet: nothing of
// the vendor is to spare on the node.
func (p *Plugin) nodeCards(s *cycleState, node string, vi int, dst []devices.Usage) (cards []devices.Card, used []devices.Usage, heldFor string, onDRA bool, err error) {
	cards, used, onDRA, err = p.accountedCards(s.dra, node, vi, dst)
	if err != nil || len(cards) == 0 {
		return cards, used, "", false, err
	}
	removed, nominated := s.simulatedOn(node)
	releaseRemoved(cards, used, removed, vi)
	for _, h := range nominated {
		if h.blocked[vi] {
			return cards, used, h.pod, onDRA, nil
		}
		devices.ApplyGrants(cards, used, h.assignments[vi], h.inits, true)
		devices.ApplyReservations(cards, used, h.assignments[vi], devices.Reservations(h.assignments[vi]), true)
	}
	return cards, used, "", onDRA, nil
}

// accountedCards returns vendor vi's cards on node and their usage (a copy
// in dst), in the one account the scheduler keeps of each card: those a
// device plugin registers, from the device cache; else, when the node
// registers none of the vendor's, those a DRA driver publishes (view: the
// cycle's, nil without DRA cards), and onDRA is true.
func (p *Plugin) accountedCards(view draView, node string, vi int, dst []devices.Usage) (cards []devices.Card, used []devices.Usage, onDRA bool, err error) {
	cards, used, err = p.cache.Snapshot(node, vi, dst)
	if err == nil && len(cards) == 0 && view != nil {
		// No device plugin registers the vendor's cards here: a DRA
		// driver may publish them.
		cards, used, err = p.draCards(view, node, vi, dst)
		onDRA = len(cards) > 0
	}
	return cards, used, onDRA, err
}

// draCards returns vendor vi's DRA cards on the node and their usage:
// what the claims take of them (the cycle's DRA view) and what pods the
// device cache counts there hold of the same cards, by UUID (pods a
// device plugin served before the node moved to a DRA driver keep their
// cards until they end).
func (p *Plugin) draCards(view draView, node string, vi int, dst []devices.Usage) ([]devices.Card, []devices.Usage, error) {
	cards, used, err := view.cards(node, vi, dst)
	if err != nil || len(cards) == 0 {
		return cards, used, err
	}
	for _, held := range p.cache.HoldingsOn(node) {
		held.Apply(cards, used, vi, true)
	}
	return cards, used, nil
}

// releaseRemoved subtracts, from a copy of the node's usage, what the pods
// that preemption is simulating away hold on vendor vi's cards.
func releaseRemoved(cards []devices.Card, used []devices.Usage, removed map[types.UID]devicecache.Holding, vi int) {
	for _, held := range removed {
		held.Apply(cards, used, vi, false)
	}
}
