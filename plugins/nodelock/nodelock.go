// Package nodelock takes and releases HAMi's per-node lock, the
// hami.io/mutex.lock node annotation "RFC3339-time,namespace,pod". The
// scheduler takes it before it hands a pod to a node; the device plugin
// releases it once its Allocate has served the pod. It also takes and
// releases the node locks of vendors that have one of their own
// (vendor.go: Cambricon's cambricon.com/dsmlu.lock), and indexes the locks
// by the pod each names, to release those a killed scheduler process left
// behind (holders.go).
package nodelock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// ErrBusy is returned when another live pod holds a fresh lock on the node
// for longer than the wait allows.
var ErrBusy = errors.New("node lock held by another pod")

// ErrNotServed is returned by Lock on a node where no device plugin that
// takes the lock serves any more (Locker.Served).
var ErrNotServed = errors.New("no device plugin that takes the node lock serves the node any more")

// MaxClockSkew is how far the clocks of the lock's writers (this scheduler,
// HAMi's scheduler, device plugins) and the API server may disagree. A lock
// dated more than MaxClockSkew in the future was written by a wrong clock
// and would otherwise never expire, so it counts as expired; a holder pod
// created more than MaxClockSkew after its lock was dated cannot be the pod
// that took it.
const MaxClockSkew = time.Minute

// Locker takes and releases node locks through the API server.
type Locker struct {
	client kubernetes.Interface
	// Expiry is the age after which a lock may be taken over.
	Expiry time.Duration
	// Wait bounds how long Lock waits while another pod holds the lock.
	Wait time.Duration
	// Served, when set, reports whether a device plugin that takes the
	// lock still serves the node: Lock gives up (ErrNotServed) on a node
	// that no longer registers such cards, e.g. one moved to a DRA
	// driver, whose lock nobody would release.
	Served func(node *corev1.Node) bool
	// now is the clock; tests replace it.
	now func() time.Time

	// turns holds one token per node: only the binding cycle holding a
	// node's token asks the API server for that node's lock, the others
	// wait here without any API traffic.
	turnsMu sync.Mutex
	turns   map[string]chan struct{}

	// written remembers, per node, the lock value this Locker last wrote and
	// the UID of the pod it wrote it for: the value names the pod only by
	// namespace/name, which a recreated pod shares.
	writtenMu sync.Mutex
	written   map[string]ownLock

	// nodes and pods, when set (ReadFrom), are the informer stores Lock
	// reads; changes wakes its waits when the node informer reports a node.
	nodes   corelisters.NodeLister
	pods    corelisters.PodLister
	changes changes
	// recheck is RecheckInterval; tests lengthen it.
	recheck time.Duration
	// patched keeps, per node, what this Locker's last lock write returned,
	// until the node informer has caught up with it.
	patchedMu sync.Mutex
	patched   map[string]*corev1.Node

	// Observer hears what Lock does; set it before the Locker is used.
	Observer Observer
}

// Observer hears the outcome of Lock calls, for metrics. Nil funcs are
// skipped; they must be cheap and must not call the Locker.
type Observer struct {
	// Waited is called once per Lock call with the time from the call to
	// its return and its error (nil: the lock is the pod's).
	Waited func(d time.Duration, err error)
	// TookOver is called when Lock has written its lock over one another
	// holder left, with one of the TakeOver reasons.
	TookOver func(reason string)
}

// Why Lock took over a lock it found on the node.
const (
	TakeOverExpired    = "expired"
	TakeOverFuture     = "future"
	TakeOverMalformed  = "malformed"
	TakeOverHolderGone = "holder_gone"
	TakeOverNotHolder  = "not_holder"
	TakeOverRenewed    = "renewed"
)

// ownLock is a lock value this Locker wrote, and for which pod.
type ownLock struct {
	value string
	uid   types.UID
}

// New returns a Locker with HAMi's defaults: locks expire after five
// minutes; Lock waits up to wait for a busy node.
func New(client kubernetes.Interface, expiry, wait time.Duration) *Locker {
	return &Locker{
		client: client, Expiry: expiry, Wait: wait, now: time.Now,
		turns:   map[string]chan struct{}{},
		written: map[string]ownLock{},
		patched: map[string]*corev1.Node{},
		recheck: RecheckInterval,
	}
}

// wroteFor returns the UID of the pod this Locker wrote value for on node,
// if it wrote that value.
func (l *Locker) wroteFor(node, value string) (types.UID, bool) {
	l.writtenMu.Lock()
	defer l.writtenMu.Unlock()
	own, ok := l.written[node]
	if !ok || own.value != value {
		return "", false
	}
	return own.uid, true
}

// remember records (or, for an empty value, forgets) the lock this Locker
// wrote on node.
func (l *Locker) remember(node, value string, uid types.UID) {
	l.writtenMu.Lock()
	defer l.writtenMu.Unlock()
	if value == "" {
		delete(l.written, node)
		return
	}
	l.written[node] = ownLock{value: value, uid: uid}
}

// turn returns the node's token channel.
func (l *Locker) turn(node string) chan struct{} {
	l.turnsMu.Lock()
	defer l.turnsMu.Unlock()
	t, ok := l.turns[node]
	if !ok {
		t = make(chan struct{}, 1)
		l.turns[node] = t
	}
	return t
}

// waitTurn blocks until this binding cycle may try the node's lock. The
// turn is bounded by the lock expiry: every holder releases the lock or
// loses it to expiry within that time, so a turn that takes longer means
// the node is stuck. The returned func gives the turn back.
func (l *Locker) waitTurn(ctx context.Context, node string) (func(), error) {
	t := l.turn(node)
	timer := time.NewTimer(l.Expiry)
	defer timer.Stop()
	select {
	case t <- struct{}{}:
		return func() { <-t }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-timer.C:
		return nil, fmt.Errorf("node %s: %w (other pods of this scheduler waited for it longer than %s)", node, ErrBusy, l.Expiry)
	}
}

// Value is the lock value naming pod, taken at t.
func Value(t time.Time, pod *corev1.Pod) string {
	return t.UTC().Format(time.RFC3339) + "," + pod.Namespace + "," + pod.Name
}

// Parse reads a lock value; the legacy form is a bare RFC3339 time with no
// holder.
func Parse(value string) (taken time.Time, namespace, name string, err error) {
	parts := strings.Split(value, ",")
	switch len(parts) {
	case 1:
	case 3:
		namespace, name = parts[1], parts[2]
	default:
		return time.Time{}, "", "", fmt.Errorf("lock %q: want time,namespace,pod", value)
	}
	taken, err = time.Parse(time.RFC3339, parts[0])
	if err != nil {
		return time.Time{}, "", "", fmt.Errorf("lock %q: bad time: %v", value, err)
	}
	return taken, namespace, name, nil
}

// Lock takes the node's lock for pod. It succeeds at once when the node is
// free, when the pod already holds the lock, when the holder no longer
// exists, or when the lock is older than Expiry (or dated more than
// MaxClockSkew in the future); otherwise it waits, up to Wait, for the
// holder to release it. "The pod" is the pod with pod's UID, not just its
// namespace/name: see mayTake. Concurrent writers are resolved by
// the node's resourceVersion: the loser gets a conflict and tries again.
//
// Binding cycles of this scheduler that want the same node take turns
// before they look at its lock, so a backlog waiting for one node costs
// one writer, not one per pod; Wait counts from the start of the turn.
// With informer stores (ReadFrom) the cycle holding the turn reads the node
// and the holder from them and sleeps until the node informer reports the
// node changed (NodeChanged), rechecking at least every RecheckInterval
// for what no node event announces (a holder deleted, a lock expiring).
func (l *Locker) Lock(ctx context.Context, nodeName string, pod *corev1.Pod) (err error) {
	if waited := l.Observer.Waited; waited != nil {
		start := time.Now()
		defer func() { waited(time.Since(start), err) }()
	}
	return l.lock(ctx, nodeName, pod)
}

// RecheckInterval bounds how long a Lock reading informer stores sleeps
// without a node event before it looks at the lock again.
const RecheckInterval = time.Second

func (l *Locker) lock(ctx context.Context, nodeName string, pod *corev1.Pod) error {
	done, err := l.waitTurn(ctx, nodeName)
	if err != nil {
		return err
	}
	defer done()
	// Wait bounds the time this cycle waits once it has the turn.
	deadline := l.now().Add(l.Wait)
	delay := 50 * time.Millisecond
	for {
		changed := l.changes.next(nodeName)
		node, held, err := l.try(ctx, nodeName, pod)
		if held || err != nil {
			return err
		}
		remaining := deadline.Sub(l.now())
		if l.nodes == nil {
			// No informer: poll the API server with a growing delay.
			if delay >= remaining {
				return busy(node)
			}
			if err := sleep(ctx, jitter(delay), nil); err != nil {
				return err
			}
			delay = min(delay*2, time.Second)
			continue
		}
		if remaining <= 0 {
			return busy(node)
		}
		if err := sleep(ctx, min(jitter(l.recheck), remaining), changed); err != nil {
			return err
		}
	}
}

// try makes one attempt at the lock: it reads the node, and writes the lock
// when the rules let pod have it. held reports that pod holds the lock now;
// false with no error means wait and try again (held by another pod, or a
// conflicting write). node is the node as read.
func (l *Locker) try(ctx context.Context, nodeName string, pod *corev1.Pod) (node *corev1.Node, held bool, err error) {
	node, err = l.readNode(ctx, nodeName)
	if err != nil {
		return nil, false, fmt.Errorf("read node %s for its lock: %w", nodeName, err)
	}
	if l.Served != nil && !l.Served(node) {
		return node, false, fmt.Errorf("node %s: %w", nodeName, ErrNotServed)
	}
	free, takeOver, err := l.mayTake(ctx, klog.FromContext(ctx), node, pod)
	if errors.Is(err, errHeldByPod) {
		return node, true, nil
	}
	if err != nil || !free {
		return node, false, err
	}
	value := Value(l.now(), pod)
	err = l.patchLock(ctx, node, value)
	if apierrors.IsConflict(err) {
		return node, false, nil
	}
	if err != nil {
		return node, false, fmt.Errorf("take lock on node %s: %w", nodeName, err)
	}
	l.remember(nodeName, value, pod.UID)
	if takeOver != "" && l.Observer.TookOver != nil {
		l.Observer.TookOver(takeOver)
	}
	klog.FromContext(ctx).V(4).Info("Node lock taken", "node", nodeName, "pod", klog.KObj(pod))
	return node, true, nil
}

// busy is the error of a Lock that waited as long as it may, naming the
// lock it last saw on node.
func busy(node *corev1.Node) error {
	return fmt.Errorf("node %s: %w (%s)", node.Name, ErrBusy, node.Annotations[devices.NodeLock])
}

var errHeldByPod = errors.New("lock already held by this pod")

// mayTake reports whether the lock on node may be written for pod now.
//
// HAMi's rules: a lock may be taken over when it is older than Expiry, when
// the pod it names no longer exists, or when it names pod itself. The lock
// names its holder by namespace/name only, so a pod recreated under the same
// name (a StatefulSet's) looks like its predecessor. What the API server says
// decides instead:
//   - a lock naming pod is pod's own only when this Locker wrote that very
//     value for pod's UID; otherwise it is a predecessor's lock (or one lost
//     in a restart) and is rewritten with a fresh time rather than inherited;
//   - a lock naming another pod that exists is that pod's only if the pod can
//     be its holder (notTheHolder).
//
// A lock dated more than MaxClockSkew in the future counts as expired.
// logger hears why a lock may be taken over.
func (l *Locker) mayTake(ctx context.Context, logger klog.Logger, node *corev1.Node, pod *corev1.Pod) (free bool, takeOver string, err error) {
	value, held := node.Annotations[devices.NodeLock]
	if !held {
		return true, "", nil
	}
	taken, ns, name, err := Parse(value)
	if err != nil {
		logger.Info("Taking over a malformed node lock", "node", node.Name, "lock", value, "err", err)
		return true, TakeOverMalformed, nil
	}
	now := l.now()
	if taken.Sub(now) > MaxClockSkew {
		logger.Info("Taking over a node lock dated in the future", "node", node.Name, "lock", value, "maxClockSkew", MaxClockSkew)
		return true, TakeOverFuture, nil
	}
	if now.Sub(taken) > l.Expiry {
		logger.Info("Taking over an expired node lock", "node", node.Name, "lock", value)
		return true, TakeOverExpired, nil
	}
	if ns == pod.Namespace && name == pod.Name {
		if uid, ok := l.wroteFor(node.Name, value); ok && uid == pod.UID {
			return false, "", errHeldByPod
		}
		logger.V(4).Info("Renewing a node lock that names this pod but was not taken for it", "node", node.Name, "lock", value, "pod", klog.KObj(pod), "uid", pod.UID)
		return true, TakeOverRenewed, nil
	}
	if name == "" {
		return false, "", nil
	}
	holder, err := l.readPod(ctx, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		logger.Info("Taking over the node lock of a pod that no longer exists", "node", node.Name, "lock", value)
		return true, TakeOverHolderGone, nil
	case err != nil:
		return false, "", fmt.Errorf("read holder %s/%s of node %s's lock: %w", ns, name, node.Name, err)
	}
	if why := l.notTheHolder(holder, node.Name, value, taken); why != "" {
		logger.Info("Taking over the node lock of a pod that no longer exists", "node", node.Name, "lock", value, "holder", klog.KObj(holder), "uid", holder.UID, "reason", why)
		return true, TakeOverNotHolder, nil
	}
	return false, "", nil
}

// WaitObtainable waits, up to Wait, until Lock could take the node's
// lock for pod at once, or the lock names a pod that ours accepts (a pod
// that hands over on the node before pod, such as another member of its
// gang), and writes nothing: a gang's members check their nodes this way
// before any of them is bound. It reads the node and the holder as Lock
// does and wakes on the node's changes. It returns an ErrBusy error when
// the wait ends first, the error of reading the node (NotFound for a
// deleted node) or ctx's cause.
func (l *Locker) WaitObtainable(ctx context.Context, nodeName string, pod *corev1.Pod, ours func(namespace, name string) bool) error {
	deadline := l.now().Add(l.Wait)
	for {
		changed := l.changes.next(nodeName)
		node, err := l.readNode(ctx, nodeName)
		if err != nil {
			return fmt.Errorf("read node %s for its lock: %w", nodeName, err)
		}
		if ok, err := l.obtainable(ctx, node, pod, ours); ok || err != nil {
			return err
		}
		remaining := deadline.Sub(l.now())
		if remaining <= 0 {
			return busy(node)
		}
		if err := sleep(ctx, min(jitter(l.recheck), remaining), changed); err != nil {
			return err
		}
	}
}

// obtainable reports whether Lock could take the node's lock for pod at
// once, or ours accepts the pod the lock names.
func (l *Locker) obtainable(ctx context.Context, node *corev1.Node, pod *corev1.Pod, ours func(namespace, name string) bool) (bool, error) {
	if value, held := node.Annotations[devices.NodeLock]; held {
		if _, ns, name, err := Parse(value); err == nil && name != "" && ours(ns, name) {
			return true, nil
		}
	}
	free, _, err := l.mayTake(ctx, klog.FromContext(ctx).V(5), node, pod)
	if errors.Is(err, errHeldByPod) {
		return true, nil
	}
	return free, err
}

// notTheHolder says why the existing pod named by the lock value (dated
// taken) on node cannot be the pod that took it, or "" when it may be. The
// lock is taken before the pod's assignment is written, so a pod without
// one may still be the holder; only facts that rule the pod out count.
func (l *Locker) notTheHolder(holder *corev1.Pod, node, value string, taken time.Time) string {
	if uid, ok := l.wroteFor(node, value); ok && uid != holder.UID {
		return fmt.Sprintf("the lock was taken for UID %s; the pod of that name now has UID %s", uid, holder.UID)
	}
	if created := holder.CreationTimestamp.Time; created.After(taken.Add(MaxClockSkew)) {
		return fmt.Sprintf("the pod of that name was created at %s, after the lock", created.UTC().Format(time.RFC3339))
	}
	if holder.Spec.NodeName != "" && holder.Spec.NodeName != node {
		return "the pod of that name is bound to node " + holder.Spec.NodeName
	}
	// The holder's bind phase does not rule it out: HAMi's device plugin
	// sets success (or failed) first and releases the lock in later calls,
	// at 5 QPS; a lock taken over in between would be deleted by that
	// release, and the next pod's Allocate would find another pod.
	return ""
}

// Release deletes the node's lock if this Locker wrote it for pod (its
// UID). Any other lock is left alone, also one naming pod that this Locker
// did not write: another scheduler (a replica that took over after this
// one lost its lease) may have taken it for the pod's next attempt.
func (l *Locker) Release(ctx context.Context, nodeName string, pod *corev1.Pod) error {
	// Release runs only when a hand-over fails: it reads the API server, not
	// the informer, which may not show the lock this Locker just wrote.
	_, err := l.deleteLockIf(ctx, nodeName, "release its lock", func(value string) bool {
		if _, ns, name, err := Parse(value); err != nil || ns != pod.Namespace || name != pod.Name {
			return false
		}
		uid, ok := l.wroteFor(nodeName, value)
		return ok && uid == pod.UID
	})
	return err
}

// deleteLockIf deletes the node's lock, as the API server has it, when
// there is one and match says it is the one to delete; a write that
// conflicts with another writer is retried on the node read afresh. what
// names the operation in errors.
func (l *Locker) deleteLockIf(ctx context.Context, nodeName, what string, match func(value string) bool) (deleted bool, err error) {
	for attempt := 0; attempt < 5; attempt++ {
		node, err := l.getNode(ctx, nodeName)
		if err != nil {
			return false, fmt.Errorf("read node %s to %s: %w", nodeName, what, err)
		}
		value, held := node.Annotations[devices.NodeLock]
		if !held || !match(value) {
			return false, nil
		}
		err = l.patchLock(ctx, node, "")
		if err == nil {
			l.remember(nodeName, "", "")
			return true, nil
		}
		if !apierrors.IsConflict(err) {
			return false, err
		}
	}
	return false, fmt.Errorf("%s on node %s: too many conflicting writers", what, nodeName)
}

// patchLock writes (or, for "", deletes) the lock with a merge patch that
// carries the node's resourceVersion, so a concurrent writer conflicts.
func (l *Locker) patchLock(ctx context.Context, node *corev1.Node, value string) error {
	v := "null"
	if value != "" {
		v = fmt.Sprintf("%q", value)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s},"resourceVersion":%q}}`, devices.NodeLock, v, node.ResourceVersion)
	patched, err := l.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err == nil {
		l.wrote(patched)
	}
	return err
}

func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// sleep waits for d, for changed to close (nil: never) or for ctx to end.
func sleep(ctx context.Context, d time.Duration, changed <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	case <-changed:
		return nil
	}
}

// ReleaseStale deletes the node's lock if it still reads value: a lock
// whose holder can no longer hand over on this node (it is bound to
// another, or gone), which nothing else would release before it expires.
// It reads the API server and writes with the node's resourceVersion, so a
// lock taken since is left alone. released is false when the lock had
// changed already.
func (l *Locker) ReleaseStale(ctx context.Context, nodeName, value string) (released bool, err error) {
	released, err = l.deleteLockIf(ctx, nodeName, "release its stale lock", func(v string) bool { return v == value })
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return released, err
}
