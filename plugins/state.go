package plugins

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

const stateKey fwk.StateKey = Name

// cycleState is what PreFilter learns of the pod and what Filter decides
// per node, kept for Score, Reserve and PreBind of the same cycle.
type cycleState struct {
	// requests is index-aligned with the registry's vendors; read-only.
	requests   []devices.PodRequest
	nodePolicy devices.NodePolicy

	mu sync.Mutex
	// fits holds Filter's decision per node.
	fits map[string]*nodeFit
	// removed holds, per node, pods that preemption is simulating away
	// (PreFilterExtensions.RemovePod), and what they hold.
	removed map[string]map[types.UID]devicecache.Holding
	// nominated holds, per node, what pods nominated to it would take
	// (PreFilterExtensions.AddPod of a pod not placed yet: a preemptor
	// waiting for its victims to leave), so that this pod does not take the
	// cards freed for them.
	nominated map[string]map[types.UID]*nominatedHold
	// narrowed is set when PreFilter offered candidates alone
	// (candidates.go); PostFilter then owes the pod a full pass.
	narrowed bool
	// handedOver is the node PreBind locked and wrote the assignment for;
	// Unreserve then has API state to undo.
	handedOver string
	// binding is set once PreBind began (the pod is past Permit): an
	// Unreserve then gives back from a binding cycle. patched is the
	// hami.io/bind-time of the assignment PreBind wrote, "" before; failure
	// says why PreBind failed.
	binding          bool
	patched, failure string
	// rejections are the nodes Filter turned away this cycle and why, for
	// HAMi's FilteringSucceed and FilteringFailed events. Clones share it:
	// the framework may filter on a clone (nominated pods added).
	rejections *nodeRejections
	// dra is this cycle's view of the DRA cards (dra.go); nil when no
	// node publishes any.
	dra draView
	// draBinding is the pod's claim on a DRA node, from Reserve on.
	draBinding draBinding
}

// nodeRejections records, per node, why Filter turned the pod away: the
// node-independent status message and the node's own detail.
type nodeRejections struct {
	mu  sync.Mutex
	why map[string]nodeRejection
}

type nodeRejection struct {
	reason, detail string
}

func (r *nodeRejections) add(node, reason, detail string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.why == nil {
		r.why = map[string]nodeRejection{}
	}
	r.why[node] = nodeRejection{reason: reason, detail: detail}
}

// count returns how many nodes were turned away.
func (r *nodeRejections) count() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.why)
}

// snapshot returns a copy of the rejections.
func (r *nodeRejections) snapshot() map[string]nodeRejection {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]nodeRejection, len(r.why))
	for k, v := range r.why {
		out[k] = v
	}
	return out
}

// nodeFit is the pod's assignment on one node and how loaded the node
// would be with it.
type nodeFit struct {
	// assignments is index-aligned with the registry's vendors; nil
	// entries for vendors the pod does not ask for.
	assignments []devices.Assignment
	// score is HAMi's node score: how used the node's cards are before
	// the pod (0 to devices.MaxNodeScore), plus the vendors' scores of the
	// assignment (devices.NodeScorer, e.g. Ascend's NetworkID topology) in
	// the same points, as HAMi adds ScoreNode to its node score.
	score float32
	// single backs assignments for the common one-vendor case.
	single [1]devices.Assignment
	// offered is set on the fits PreFilter made when it chose the
	// candidates (candidates.go): Filter keeps them. A simulation that
	// changes a node's view drops its fit (dropFit), which Filter then
	// computes afresh.
	offered bool
	// onDRA: the cards are a DRA driver's (dra.go); the pod gets a
	// ResourceClaim, not HAMi's annotations and node lock.
	onDRA bool
}

// asksAny reports whether the fit holds an assignment of some vendor.
func (f *nodeFit) asksAny() bool {
	for _, a := range f.assignments {
		if !a.Empty() {
			return true
		}
	}
	return false
}

// nominatedHold is what a nominated pod, not placed yet, would take on a
// node, per vendor (index-aligned with the registry's vendors): the
// assignment Filter would give it there, or blocked when the node's cards
// cannot hold it yet (the pods it preempts still hold them); then the node
// has nothing of that vendor to spare for a pod of lower or equal priority.
// Never modified once recorded.
type nominatedHold struct {
	pod         string
	assignments []devices.Assignment
	// inits is the nominated pod's init container count.
	inits   int
	blocked []bool
}

// Clone implements fwk.StateData. A clone keeps the cycle's fits (they are
// never modified once recorded): opportunistic batching rescores a node
// on a clone of the state its Filter ran on. AddPod and RemovePod drop the
// fit of the node whose view they change (dropFit), so a simulation
// re-filters that node. The simulation's removals and nominated pods are
// deep-copied since AddPod/RemovePod change them.
func (s *cycleState) Clone() fwk.StateData {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &cycleState{
		requests:   s.requests,
		nodePolicy: s.nodePolicy,
		narrowed:   s.narrowed,
		fits:       maps.Clone(s.fits),
		rejections: s.rejections,
		dra:        s.dra,
		draBinding: s.draBinding,
	}
	if c.fits == nil {
		c.fits = map[string]*nodeFit{}
	}
	if len(s.removed) > 0 {
		c.removed = make(map[string]map[types.UID]devicecache.Holding, len(s.removed))
		for node, pods := range s.removed {
			cp := make(map[types.UID]devicecache.Holding, len(pods))
			for uid, a := range pods {
				cp[uid] = a
			}
			c.removed[node] = cp
		}
	}
	if len(s.nominated) > 0 {
		c.nominated = make(map[string]map[types.UID]*nominatedHold, len(s.nominated))
		for node, pods := range s.nominated {
			cp := make(map[types.UID]*nominatedHold, len(pods))
			for uid, h := range pods {
				cp[uid] = h
			}
			c.nominated[node] = cp
		}
	}
	return c
}

func (s *cycleState) setFit(node string, f *nodeFit) {
	s.mu.Lock()
	s.fits[node] = f
	s.mu.Unlock()
}

// dropFit forgets Filter's decision on node: a simulation changed what
// the node holds in this state.
func (s *cycleState) dropFit(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.fits, node)
}

func (s *cycleState) fit(node string) (*nodeFit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.fits[node]
	return f, ok
}

// simulatedOn returns the simulated removals and nominated pods on node;
// the caller must not keep the maps past the call that changes them.
func (s *cycleState) simulatedOn(node string) (map[types.UID]devicecache.Holding, map[types.UID]*nominatedHold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removed[node], s.nominated[node]
}

// chosenFit reads the cycle state and Filter's assignment on node, for
// Reserve and PreBind. It returns nil, nil, nil when PreFilter skipped the
// pod: there is nothing to reserve or write.
func (p *Plugin) chosenFit(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string) (*cycleState, *nodeFit, *fwk.Status) {
	s, err := readState(state)
	if err != nil {
		return nil, nil, fwk.AsStatus(err)
	}
	if s == nil {
		return nil, nil, nil
	}
	fit, ok := s.fit(node)
	if ok {
		return s, fit, nil
	}
	// The framework may have filtered the node on a clone of this cycle's
	// state (a pass with nominated pods added); fit it now, from the same
	// cache, and keep the result for the rest of the cycle.
	klog.FromContext(ctx).V(4).Info("No device assignment kept from Filter; fitting the node again", "pod", klog.KObj(pod), "node", node)
	fit, st, _ := p.fitNode(s, pod, node)
	if !st.IsSuccess() {
		return nil, nil, st
	}
	s.setFit(node, fit)
	return s, fit, nil
}

// readState returns the state PreFilter wrote, or nil (and no error) when
// PreFilter wrote none: it skipped the pod, which asks for no managed
// device. The framework then leaves out Filter, PreFilterExtensions and,
// through PreScore's Skip, Score; Reserve, Unreserve and PreBind still run
// and must find nothing to do, as every extension point does on a nil state.
func readState(state fwk.CycleState) (*cycleState, error) {
	data, err := state.Read(stateKey)
	if errors.Is(err, fwk.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s cycle state: %w", Name, err)
	}
	s, ok := data.(*cycleState)
	if !ok {
		return nil, fmt.Errorf("%s cycle state has type %T", Name, data)
	}
	return s, nil
}
