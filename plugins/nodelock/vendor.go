package nodelock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/jsonpatch"
)

// Vendor node locks. A vendor whose devices.NodeLocker names a key other
// than hami.io/mutex.lock (Cambricon: cambricon.com/dsmlu.lock) has a lock
// of its own, taken the HAMi way: the node annotation holds the RFC3339
// time it was taken; a lock younger than vendorLockExpiry fails the bind,
// an older one is replaced. HAMi deletes it when the bind fails; on
// success the vendor's device plugin releases it.
//
// Unlike HAMi, the lock is taken and released with JSON patches that test
// the value first: two schedulers (or replicas) cannot both take a free or
// an expired lock, an expired lock is replaced in one patch (HAMi deletes
// it, then sets it), an unreadable value is replaced (HAMi fails every
// bind on the node), and a release deletes only the value this pod wrote,
// never a lock another pod took since. As in HAMi, a lock younger than
// vendorLockExpiry blocks every pod, the same pod retrying included; the
// error says so.

// vendorLockExpiry is the age after which HAMi replaces a vendor's own
// node lock (Cambricon's 2 minutes).
const vendorLockExpiry = 2 * time.Minute

// ErrVendorBusy is a vendor lock younger than vendorLockExpiry.
var ErrVendorBusy = errors.New("node lock held")

// VendorLock is a vendor lock taken for a pod: its key and the value
// written, so that a release deletes only its own.
type VendorLock struct{ Key, Value string }

// VendorKeys returns the vendor lock keys the pod must take: those of the
// vendors with a lock of their own that a regular (not init) container
// asks for, as HAMi's LockNode looks at spec.containers alone. requests
// are index-aligned with vendors; each key appears once.
func VendorKeys(vendors []devices.Vendor, requests []devices.PodRequest) []string {
	var keys []string
	for i := range requests {
		if i >= len(vendors) {
			break
		}
		nl, ok := vendors[i].(devices.NodeLocker)
		if !ok {
			continue
		}
		key := nl.NodeLock()
		if key == "" || key == devices.NodeLock || !asksInRegular(&requests[i]) {
			continue
		}
		dup := false
		for _, k := range keys {
			dup = dup || k == key
		}
		if !dup {
			keys = append(keys, key)
		}
	}
	return keys
}

// asksInRegular reports whether a regular container of r asks for devices.
func asksInRegular(r *devices.PodRequest) bool {
	for _, c := range r.Containers[min(max(r.Inits, 0), len(r.Containers)):] {
		if !c.IsZero() {
			return true
		}
	}
	return false
}

// TakeVendor sets the node annotation key, a vendor's own node lock, to
// now (RFC3339) when it is absent, older than vendorLockExpiry or not an
// RFC3339 time, and returns the value written. A younger lock is
// ErrVendorBusy. PreBind takes it before hami.io/mutex.lock.
func (l *Locker) TakeVendor(ctx context.Context, nodeName, key string, now time.Time) (string, error) {
	nodes := l.client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	value := now.Format(time.RFC3339)
	path := jsonpatch.Annotation(key)
	var ops []jsonpatch.Op
	old, held := node.Annotations[key]
	switch {
	case node.Annotations == nil:
		ops = []jsonpatch.Op{
			{Op: "test", Path: "/metadata/annotations", Value: nil},
			{Op: "add", Path: "/metadata/annotations", Value: map[string]string{key: value}},
		}
	case !held:
		ops = []jsonpatch.Op{{Op: "test", Path: path, Value: nil}, {Op: "add", Path: path, Value: value}}
	default:
		// A value that is not an RFC3339 time was written by neither HAMi
		// nor this plugin: it is replaced (HAMi fails every bind on the
		// node until someone deletes it).
		if at, err := time.Parse(time.RFC3339, old); err == nil && now.Sub(at) <= vendorLockExpiry {
			return "", fmt.Errorf("%w: taken at %s for another pod being bound (it is released by the device plugin, or replaced once %v old)", ErrVendorBusy, old, vendorLockExpiry)
		}
		klog.FromContext(ctx).V(2).Info("Replacing an expired or unreadable vendor node lock", "node", nodeName, "lock", key, "value", old)
		ops = []jsonpatch.Op{{Op: "test", Path: path, Value: old}, {Op: "replace", Path: path, Value: value}}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return "", err
	}
	if _, err := nodes.Patch(ctx, nodeName, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			// The test failed: another pod took the lock meanwhile.
			return "", fmt.Errorf("%w: taken by another pod meanwhile", ErrVendorBusy)
		}
		return "", err
	}
	return value, nil
}

// ReleaseVendor deletes each of the vendor locks taken for the pod on node
// whose value is still the one written for it: a lock the device plugin
// released, or another pod took since, is left alone. Unreserve calls it
// when the pod patch or the binding failed, as HAMi does when its bind
// fails.
func (l *Locker) ReleaseVendor(ctx context.Context, pod *corev1.Pod, node string, locks []VendorLock) {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, lock := range locks {
		path := jsonpatch.Annotation(lock.Key)
		patch, err := json.Marshal([]jsonpatch.Op{{Op: "test", Path: path, Value: lock.Value}, {Op: "remove", Path: path}})
		if err == nil {
			_, err = l.client.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, patch, metav1.PatchOptions{})
		}
		switch {
		case err == nil:
			logger.V(4).Info("Vendor node lock released", "pod", klog.KObj(pod), "node", node, "lock", lock.Key)
		case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsConflict(err):
			logger.V(4).Info("Vendor node lock no longer the pod's", "pod", klog.KObj(pod), "node", node, "lock", lock.Key)
		default:
			logger.Error(err, "Releasing a vendor node lock", "pod", klog.KObj(pod), "node", node, "lock", lock.Key)
		}
	}
}
