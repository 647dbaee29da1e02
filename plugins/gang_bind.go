package plugins

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// A gang's members are bound one by one after Permit lets them go, each in
// a binding cycle of its own, and members on one node take its lock one
// after another (the node's device plugin serves one pod at a time). A
// member that then fails (its node deleted, its Bind refused, a lock never
// released) would leave the others bound below minMember, holding cards
// for a gang that cannot run: the deadlock gangs exist to prevent, which
// both scheduler-plugins and kube-scheduler accept. So the members a
// process let through together bind as one round:
//
//   - before the first of them is bound, the round checks what can be
//     checked (gangPreflight): each member's node is still there, its cards
//     still hold it, and each node's lock is free, held by the gang, or
//     released within nodeLockWait; when not, none of them binds;
//   - when a member fails later, the round is aborted: the members not yet
//     bound give back their cards, locks and assignments at once (their
//     lock waits are cancelled), and once every member is bound or has given
//     back, the ones not bound are sent back to the active queue, to be
//     placed again around those already bound, and the PodGroup gets a
//     GangBindingFailed event saying which are bound.
//
// Rounds are this process's: a process that stops mid-round leaves its
// members to the next (gang_resume.go).

// reasonGangBindingFailed is the PodGroup event of an aborted round.
const reasonGangBindingFailed = "GangBindingFailed"

// gangRetryDelays are when, after an aborted round ends, its members not
// bound are sent back to the active queue. A binding cycle returns its pod
// to the scheduler's backoff queue right after Unreserve; the queue tells
// no plugin when, so the activation is repeated a few times.
var gangRetryDelays = []time.Duration{50 * time.Millisecond, 250 * time.Millisecond, time.Second}

// gangBindings tracks, per gang, the members this process reserved and
// has not seen bound or given back, and the round binding them.
type gangBindings struct {
	mu       sync.Mutex
	reserved map[string]map[types.UID]gangMember
	rounds   map[string]*bindRound
}

// gangMember is a reserved member and the node it was reserved on.
type gangMember struct {
	pod  *corev1.Pod
	node string
	// onDRA: the member's cards are a ResourceClaim pending in the DRA
	// account (dra.go), not a holding of the device cache, and it takes
	// no node lock.
	onDRA bool
}

// bindRound is one round of a gang's members going to binding together.
type bindRound struct {
	gang string
	// ctx ends when the round is aborted; members' binding waits derive
	// from it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// checked is closed once the preflight has run; checkErr is its
	// outcome.
	checked  chan struct{}
	checkErr error
	// members are those of the round not yet bound or given back.
	members map[types.UID]gangMember
	// bound and given are the members bound, and those that gave back,
	// during the round; failure tells the first failure.
	bound, given []string
	failure      string
}

// reserve records a gang member reserved on node.
func (g *gangBindings) reserve(gang string, pod *corev1.Pod, node string, onDRA bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reserved == nil {
		g.reserved = map[string]map[types.UID]gangMember{}
	}
	if g.reserved[gang] == nil {
		g.reserved[gang] = map[types.UID]gangMember{}
	}
	g.reserved[gang][pod.UID] = gangMember{pod: pod, node: node, onDRA: onDRA}
}

// join returns the round binding the member, starting one with every
// member of the gang reserved now when there is none; first reports
// whether the caller started it (and runs its preflight).
func (g *gangBindings) join(gang string, pod *corev1.Pod, node string, onDRA bool) (r *bindRound, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rounds == nil {
		g.rounds = map[string]*bindRound{}
	}
	r, ok := g.rounds[gang]
	if !ok {
		r = &bindRound{gang: gang, checked: make(chan struct{}), members: map[types.UID]gangMember{}}
		r.ctx, r.cancel = context.WithCancelCause(context.Background())
		for uid, m := range g.reserved[gang] {
			r.members[uid] = m
		}
		g.rounds[gang] = r
		first = true
	}
	if _, in := r.members[pod.UID]; !in {
		// Reserved after the round began (a member placed once the gang
		// had its quorum): it binds with the round.
		r.members[pod.UID] = gangMember{pod: pod, node: node, onDRA: onDRA}
	}
	return r, first
}

// abort ends the round's binding: the members not bound yet give back.
// The first cause is kept.
func (g *gangBindings) abort(r *bindRound, cause string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.abortLocked(r, cause)
}

func (g *gangBindings) abortLocked(r *bindRound, cause string) {
	if r.failure == "" {
		r.failure = cause
	}
	r.cancel(errors.New(cause))
}

// leave records that the member with uid left the gang's reservations:
// bound (true) or given back. A member given back from its binding cycle
// (inBinding) aborts its round, with cause. It returns the round when the
// member was the last of it, so that the caller settles it.
func (g *gangBindings) leave(gang string, uid types.UID, name string, bound, inBinding bool, cause string) *bindRound {
	g.mu.Lock()
	defer g.mu.Unlock()
	if members := g.reserved[gang]; members != nil {
		delete(members, uid)
		if len(members) == 0 {
			delete(g.reserved, gang)
		}
	}
	r, ok := g.rounds[gang]
	if !ok {
		return nil
	}
	if _, in := r.members[uid]; !in {
		return nil
	}
	delete(r.members, uid)
	if bound {
		r.bound = append(r.bound, name)
	} else {
		r.given = append(r.given, name)
		if inBinding {
			g.abortLocked(r, cause)
		}
	}
	if len(r.members) > 0 {
		return nil
	}
	delete(g.rounds, gang)
	r.cancel(nil)
	return r
}

// onNode aborts the rounds with a member on node, because of cause.
func (g *gangBindings) onNode(node, cause string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.rounds {
		for _, m := range r.members {
			if m.node == node {
				g.abortLocked(r, cause)
				break
			}
		}
	}
}

// aborted reports whether the round was aborted, and why.
func (r *bindRound) aborted() (string, bool) {
	if r.ctx.Err() == nil {
		return "", false
	}
	return context.Cause(r.ctx).Error(), true
}

// preBindGang runs before a gang member's PreBind writes anything: it
// joins the member's round, runs the round's preflight (the first member)
// or waits for it, and returns the context the member's binding waits in,
// which ends when the round is aborted. A non-nil status fails PreBind:
// the round was aborted, or its preflight found a member that cannot
// bind. done releases the context.
func (p *Plugin) preBindGang(ctx context.Context, pod *corev1.Pod, nodeName string, onDRA bool) (context.Context, func(), *fwk.Status) {
	gang := gangOf(pod)
	if gang == "" {
		return ctx, func() {}, nil
	}
	r, first := p.gangs.join(gang, pod, nodeName, onDRA)
	bindCtx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(r.ctx, func() { cancel(context.Cause(r.ctx)) })
	done := func() { stop(); cancel(nil) }
	if first {
		r.checkErr = p.gangPreflight(bindCtx, r)
		close(r.checked)
		if r.checkErr != nil {
			p.gangs.abort(r, r.checkErr.Error())
		}
	}
	select {
	case <-r.checked:
	case <-bindCtx.Done():
	}
	if cause, aborted := r.aborted(); aborted {
		return ctx, done, fwk.AsStatus(fmt.Errorf("gang %s binds no member now: %s", gang, cause))
	}
	if err := context.Cause(bindCtx); err != nil {
		return ctx, done, fwk.AsStatus(err)
	}
	return bindCtx, done, nil
}

// stillBinding reports an error when the member's round was aborted while
// the member took its lock: it must give back rather than bind.
func (p *Plugin) stillBinding(pod *corev1.Pod) error {
	gang := gangOf(pod)
	if gang == "" {
		return nil
	}
	p.gangs.mu.Lock()
	r, ok := p.gangs.rounds[gang]
	p.gangs.mu.Unlock()
	if !ok {
		return nil
	}
	if cause, aborted := r.aborted(); aborted {
		return fmt.Errorf("gang %s binds no member now: %s", gang, cause)
	}
	return nil
}

// gangPreflight checks, before any member of the round is bound, that
// each can be: its node exists and is not being deleted, the cards the
// cache holds for it are still registered, healthy and not over-committed,
// and the node's lock is free, held by a member of the gang, or becomes
// obtainable within nodeLockWait (Locker.WaitObtainable).
func (p *Plugin) gangPreflight(ctx context.Context, r *bindRound) error {
	p.gangs.mu.Lock()
	members := make([]gangMember, 0, len(r.members))
	for _, m := range r.members {
		members = append(members, m)
	}
	p.gangs.mu.Unlock()
	sort.Slice(members, func(i, j int) bool { return members[i].pod.Name < members[j].pod.Name })
	nodes := map[string]*corev1.Pod{}
	for _, m := range members {
		if err := p.memberStillFits(m); err != nil {
			return err
		}
		if _, seen := nodes[m.node]; !seen && !m.onDRA && p.takesSharedLock(m.pod) {
			nodes[m.node] = m.pod
		}
	}
	ours := func(namespace, name string) bool {
		holder, err := p.pods.Pods(namespace).Get(name)
		return err == nil && gangOf(holder) == r.gang
	}
	for node, pod := range nodes {
		if err := p.locker.WaitObtainable(ctx, node, pod, ours); err != nil {
			return fmt.Errorf("member %s: node %s's lock: %w", klog.KObj(pod), node, err)
		}
	}
	return nil
}

// memberStillFits checks that the member's node exists and that the cards
// the cache holds for it there still take it.
func (p *Plugin) memberStillFits(m gangMember) error {
	node, err := p.nodes.Get(m.node)
	if err != nil {
		return fmt.Errorf("member %s: node %s: %w", klog.KObj(m.pod), m.node, err)
	}
	if node.DeletionTimestamp != nil {
		return fmt.Errorf("member %s: node %s is being deleted", klog.KObj(m.pod), m.node)
	}
	if m.onDRA {
		// The claim is pending in the DRA account, which the shared DRA
		// manager's in-flight allocations keep from any other claim.
		return nil
	}
	held, ok := p.cache.Holding(m.pod.UID)
	if !ok || held.Node != m.node {
		return fmt.Errorf("member %s: its cards on node %s are no longer reserved", klog.KObj(m.pod), m.node)
	}
	for vi, a := range held.Assignments {
		if a.Empty() {
			continue
		}
		cards, used, err := p.cache.Snapshot(m.node, vi, nil)
		if err != nil {
			return fmt.Errorf("member %s: node %s's cards: %w", klog.KObj(m.pod), m.node, err)
		}
		var bad error
		a.Grants(func(g devices.Grant) {
			if bad == nil {
				bad = cardStillTakes(cards, used, g.UUID)
			}
		})
		if bad != nil {
			return fmt.Errorf("member %s: node %s: %w", klog.KObj(m.pod), m.node, bad)
		}
	}
	return nil
}

// cardStillTakes checks that the card with uuid is registered, healthy and
// holds what its holders were granted (used counts them all).
func cardStillTakes(cards []devices.Card, used []devices.Usage, uuid string) error {
	for i := range cards {
		if cards[i].UUID != uuid {
			continue
		}
		c, u := &cards[i], used[i]
		switch {
		case !c.Healthy:
			return fmt.Errorf("card %s is unhealthy", uuid)
		case u.Sharers > c.Split || u.MemoryMiB > int64(c.MemoryMiB) || u.Cores > int64(c.Cores):
			return fmt.Errorf("card %s is over-committed (%d of %d shares, %d of %d MiB, %d of %d cores)", uuid, u.Sharers, c.Split, u.MemoryMiB, c.MemoryMiB, u.Cores, c.Cores)
		}
		return nil
	}
	return fmt.Errorf("card %s is no longer registered", uuid)
}

// takesSharedLock reports whether the pod's PreBind takes hami.io/mutex.lock.
func (p *Plugin) takesSharedLock(pod *corev1.Pod) bool {
	requests, asks, err := p.podRequests(pod)
	return err == nil && asks && sharedLockAsks(p.registry.Vendors(), requests)
}

// leaveGang records that a gang member is bound, or gave back (inBinding:
// from its binding cycle, which aborts its round, with cause); when it was
// the last of an aborted round, the round is settled.
func (p *Plugin) leaveGang(logger klog.Logger, pod *corev1.Pod, bound, inBinding bool, cause string) {
	gang := gangOf(pod)
	if gang == "" {
		return
	}
	if r := p.gangs.leave(gang, pod.UID, pod.Name, bound, inBinding, cause); r != nil && r.failure != "" {
		p.settleAbortedRound(logger, pod, r)
	}
}

// settleAbortedRound tells the gang's PodGroup what became of an aborted
// round and sends the gang's members not bound back to the active queue.
func (p *Plugin) settleAbortedRound(logger klog.Logger, pod *corev1.Pod, r *bindRound) {
	sort.Strings(r.bound)
	sort.Strings(r.given)
	bound := "none of its members is bound"
	if len(r.bound) > 0 {
		bound = "bound: " + strings.Join(r.bound, ", ")
	}
	note := fmt.Sprintf("%s; %s; %s gave back their devices and are placed again", r.failure, bound, strings.Join(r.given, ", "))
	logger.Info("A gang's binding round was aborted", "gang", r.gang, "failure", r.failure, "bound", r.bound, "released", r.given)
	p.gangEvent(pod, corev1.EventTypeWarning, reasonGangBindingFailed, note)
	for _, d := range gangRetryDelays {
		time.AfterFunc(d, func() { p.activateGang(logger, pod.Namespace, r.gang) })
	}
}

// activateGang sends the gang's members not bound to the active queue.
func (p *Plugin) activateGang(logger klog.Logger, namespace, gang string) {
	pods, err := p.pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	keyed := map[string]*corev1.Pod{}
	for _, pod := range pods {
		if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && gangOf(pod) == gang {
			keyed[klog.KObj(pod).String()] = pod
		}
	}
	if len(keyed) > 0 {
		fwk.Activate(p.handle, logger, keyed)
	}
}
