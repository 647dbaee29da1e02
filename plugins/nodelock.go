package plugins

// The plugin's side of HAMi's node lock (plugins/nodelock): the vendor
// locks PreBind takes beside hami.io/mutex.lock and Unreserve gives back,
// and the stale locks the informers show.

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	"github.com/hami-scheduler/hami-scheduler/plugins/nodelock"
)

// vendorLockStateKey is the cycle state key of the vendor locks PreBind
// took for the pod (nodelock/vendor.go).
const vendorLockStateKey fwk.StateKey = Name + "/vendor-locks"

// takenVendorLocks are the vendor locks PreBind took for a pod: key and the
// value written, so that Unreserve deletes only its own.
type takenVendorLocks struct {
	node  string
	locks []nodelock.VendorLock
}

// Clone implements fwk.StateData; the record is not changed once written.
func (t *takenVendorLocks) Clone() fwk.StateData { return t }

// takeVendorLocks takes, on nodeName, the own node lock of each vendor a
// regular container of the pod asks for (PreBind, before
// hami.io/mutex.lock), and records them in state for Unreserve. On failure
// it releases those it took and returns the status PreBind returns.
func (p *Plugin) takeVendorLocks(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string, requests []devices.PodRequest) *fwk.Status {
	keys := nodelock.VendorKeys(p.registry.Vendors(), requests)
	if len(keys) == 0 {
		return nil
	}
	taken := &takenVendorLocks{node: nodeName}
	for _, key := range keys {
		value, err := p.locker.TakeVendor(ctx, nodeName, key, time.Now())
		if err != nil {
			p.locker.ReleaseVendor(ctx, pod, taken.node, taken.locks)
			reason := "lock_error"
			if errors.Is(err, nodelock.ErrVendorBusy) {
				reason = "lock_busy"
			}
			preBindFailed(reason)
			err = fmt.Errorf("lock node %s (%s): %w", nodeName, key, err)
			p.bindingFailed(pod, err)
			return fwk.AsStatus(err)
		}
		taken.locks = append(taken.locks, nodelock.VendorLock{Key: key, Value: value})
	}
	state.Write(vendorLockStateKey, taken)
	klog.FromContext(ctx).V(4).Info("Vendor node locks taken", "pod", klog.KObj(pod), "node", nodeName, "locks", keys)
	return nil
}

// releaseVendorLocks deletes the vendor locks PreBind took for the pod, if
// any (Unreserve: the pod patch or the binding failed), as HAMi does when
// its bind fails.
func (p *Plugin) releaseVendorLocks(ctx context.Context, state fwk.CycleState, pod *corev1.Pod) {
	data, err := state.Read(vendorLockStateKey)
	if err != nil {
		return
	}
	taken, ok := data.(*takenVendorLocks)
	if !ok || len(taken.locks) == 0 {
		return
	}
	state.Delete(vendorLockStateKey)
	p.locker.ReleaseVendor(ctx, pod, taken.node, taken.locks)
}

// Stale node locks: a lock left by a scheduler process killed between
// taking a node's lock and binding its pod there is released as soon as
// the informers show its pod bound to another node, or deleted
// (nodelock.Holders).

// trackLock indexes the node's lock and releases it at once when its
// holder is already bound to another node.
func (p *Plugin) trackLock(logger klog.Logger, node *corev1.Node) {
	holder := p.lockHolders.Set(node.Name, node.Annotations[devices.NodeLock])
	if holder == "" || p.pods == nil {
		return
	}
	ns, name, err := cache.SplitMetaNamespaceKey(holder)
	if err != nil {
		return
	}
	pod, err := p.pods.Pods(ns).Get(name)
	if err != nil || pod.Spec.NodeName == "" || pod.Spec.NodeName == node.Name {
		return
	}
	p.lockHolders.ReleaseStale(logger, p.locker, node.Name, node.Annotations[devices.NodeLock], "its pod is bound to node "+pod.Spec.NodeName)
}

// releaseLocksOf releases the locks naming the pod on nodes other than
// the one it is bound to, or all of them when it was deleted.
func (p *Plugin) releaseLocksOf(logger klog.Logger, pod *corev1.Pod, deleted bool) {
	for node, value := range p.lockHolders.Of(pod.Namespace + "/" + pod.Name) {
		switch {
		case deleted:
			p.lockHolders.ReleaseStale(logger, p.locker, node, value, "its pod was deleted")
		case pod.Spec.NodeName != "" && pod.Spec.NodeName != node:
			p.lockHolders.ReleaseStale(logger, p.locker, node, value, "its pod is bound to node "+pod.Spec.NodeName)
		}
	}
}
