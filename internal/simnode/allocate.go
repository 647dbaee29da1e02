package simnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// releaseBackoff is HAMi v2.10's nodelock.DefaultStrategy, with which
// ReleaseNodeLock retries its GET and PATCH of the node.
var releaseBackoff = wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.5}

// devicePlugin is HAMi v2.10's NVIDIA device plugin on one node, as far as
// the API server sees it: every call goes through client, which in the
// faithful mode is the node's own, rate-limited like HAMi's (5 QPS, burst
// 10 by default).
type devicePlugin struct {
	node   string
	client corev1client.CoreV1Interface
	// applyMu serialises Allocate as the plugin's applyMutex does.
	applyMu sync.Mutex
	// failing tells whether Allocate must fail for a pod (FailPod).
	failing func(namespace, name string) bool
	// mismatched counts Allocate calls that found another pod than the
	// one being admitted.
	mismatched *atomic.Int64
	// released, if set, hears each release of the node lock.
	released func(node string, t time.Time)
}

// Allocate is HAMi v2.10's Allocate for one container request of want
// cards (the kubelet asks once per container), in HAMi's order of API
// calls, for the device plugin p of the container's vendor (ctr is the
// container's index, init containers first):
//
//  1. find the pending pod (GetPendingPod): GET the node; if its lock names
//     a pod, GET that pod, else LIST the pods on the node;
//  2. pop the container's cards and PATCH the pod's to-allocate annotation;
//  3. re-read the pod (GET); if no card of the vendor is left to hand out,
//     PATCH bind-phase=success and release the lock (ReleaseNodeLock: GET
//     the node, then GET and PATCH it again within a retry);
//
// or, on any error after step 1, PATCH bind-phase=failed and release the
// lock. An error is Allocate's refusal: the kubelet does not start the
// pod. One check is the simulator's own and makes no call: when the pod
// found is not the pod being admitted, the protocol was violated; HAMi
// would serve the wrong pod, here the call fails and counts as mismatched.
//
// Other vendors' plugins are not in HAMi's tree; the simulation keeps to
// the keys HAMi writes for them (hami-vendors.md). A plugin without the
// shared lock has no pod to find in step 1 and takes the pod admitted (one
// GET). A plugin whose vendor has no to-allocate key checks that the
// container's entry of the allocated key lists cards instead of step 2,
// and then sets bind-phase=success. On success a plugin also sets the
// vendor's "assigned" flags (plugin.served) and releases its lock, if any.
func (dp *devicePlugin) Allocate(ctx context.Context, pod *corev1.Pod, p plugin, ctr, want int) error {
	dp.applyMu.Lock()
	defer dp.applyMu.Unlock()

	current, err := dp.findPod(ctx, pod, p)
	if err != nil {
		// HAMi returns the error and touches nothing; the kubelet fails
		// the pod's admission.
		return err
	}
	if current.UID != pod.UID {
		dp.mismatched.Add(1)
		return fmt.Errorf("device plugin found pod %s/%s on node %s, not %s/%s",
			current.Namespace, current.Name, dp.node, pod.Namespace, pod.Name)
	}
	if dp.failing != nil && dp.failing(current.Namespace, current.Name) {
		return dp.allocationFailed(ctx, current, p, "simulated device failure")
	}
	if p.toAllocate == "" {
		grants, err := devices.DecodeAssignment(current.Annotations[p.allocated])
		if err != nil || ctr >= len(grants) || len(grants[ctr]) == 0 {
			return dp.allocationFailed(ctx, current, p, "no device allocation found for container "+strconv.Itoa(ctr))
		}
		dp.finish(ctx, current, p, devices.BindPhaseSuccess)
		return nil
	}
	value, ok := current.Annotations[p.toAllocate]
	if !ok {
		return dp.allocationFailed(ctx, current, p, "device request not found")
	}
	rest, served, err := eraseNext(value)
	switch {
	case err != nil:
		return dp.allocationFailed(ctx, current, p, err.Error())
	case served == nil:
		return dp.allocationFailed(ctx, current, p, "no pending device allocation found")
	case p.countCheck && len(served) != want:
		return dp.allocationFailed(ctx, current, p, "device number not matched")
	}
	if err := dp.patchAnnotations(ctx, current, map[string]string{p.toAllocate: rest}); err != nil {
		return dp.allocationFailed(ctx, current, p, "erase allocated containers annotation: "+err.Error())
	}
	dp.trySuccess(ctx, current, p)
	return nil
}

// findPod is step 1 of Allocate: HAMi's GetPendingPod for a plugin that
// takes the shared lock, else the admitted pod, read again.
func (dp *devicePlugin) findPod(ctx context.Context, pod *corev1.Pod, p plugin) (*corev1.Pod, error) {
	if p.lock == devices.NodeLock {
		return dp.pendingPod(ctx)
	}
	return dp.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
}

// pendingPod finds the pod being allocated on the node as HAMi's
// util.GetPendingPod does: the holder of the node lock, else the first
// Pending pod on the node with a bind time, bind-phase allocating or
// success, and hami.io/vgpu-node naming the node.
func (dp *devicePlugin) pendingPod(ctx context.Context) (*corev1.Pod, error) {
	n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if value, ok := n.Annotations[devices.NodeLock]; ok {
		_, namespace, name, err := parseLock(value)
		if err != nil {
			return nil, err
		}
		if namespace != "" && name != "" {
			return dp.client.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		}
	}
	list, err := dp.client.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + dp.node})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase != corev1.PodPending {
			continue
		}
		if _, ok := p.Annotations[devices.BindTime]; !ok {
			continue
		}
		if phase := p.Annotations[devices.BindPhase]; phase != devices.BindPhaseAllocating && phase != devices.BindPhaseSuccess {
			continue
		}
		if p.Annotations[devices.AssignedNode] == dp.node {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no binding pod found on node %s", dp.node)
}

// trySuccess is HAMi's PodAllocationTrySuccess: it re-reads the pod and,
// once no card of the plugin's vendor is left to hand out, sets
// bind-phase=success and releases the node lock.
func (dp *devicePlugin) trySuccess(ctx context.Context, pod *corev1.Pod, p plugin) {
	fresh, err := dp.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		// HAMi logs and returns; the lock stays until it expires.
		klog.FromContext(ctx).Error(err, "Simulated device plugin cannot re-read the pod", "pod", klog.KObj(pod))
		return
	}
	if strings.Contains(fresh.Annotations[p.toAllocate], p.word) {
		return
	}
	dp.finish(ctx, pod, p, devices.BindPhaseSuccess)
}

// allocationFailed is HAMi's PodAllocationFailed: bind-phase=failed and the
// node lock released; Allocate then returns the error.
func (dp *devicePlugin) allocationFailed(ctx context.Context, pod *corev1.Pod, p plugin, reason string) error {
	dp.finish(ctx, pod, p, devices.BindPhaseFailed)
	return errors.New(reason)
}

// finish is HAMi's updatePodAnnotationsAndReleaseLock: errors are logged,
// not returned. On success the vendor's served flags go into the same
// patch; a plugin without a lock releases none.
func (dp *devicePlugin) finish(ctx context.Context, pod *corev1.Pod, p plugin, phase string) {
	logger := klog.FromContext(ctx)
	annotations := map[string]string{devices.BindPhase: phase}
	if phase == devices.BindPhaseSuccess {
		maps.Copy(annotations, p.served)
	}
	if err := dp.patchAnnotations(ctx, pod, annotations); err != nil {
		logger.Error(err, "Simulated device plugin cannot set the bind phase", "pod", klog.KObj(pod), "phase", phase)
	}
	if p.lock == "" {
		return
	}
	if err := dp.releaseLock(ctx, pod, p.lock); err != nil {
		logger.Error(err, "Simulated device plugin cannot release the node lock", "node", dp.node, "pod", klog.KObj(pod))
	} else if dp.released != nil && p.lock == devices.NodeLock {
		dp.released(dp.node, time.Now())
	}
}

// releaseLock is HAMi's nodelock.ReleaseNodeLock of the lock key: GET the
// node and leave when the lock is gone or names another pod; then, retried
// with HAMi's backoff on any error, GET the node again and delete the lock
// with a merge patch carrying the node's resourceVersion, unless it has
// gone or changed hands meanwhile. A legacy lock (a bare time) is released only if
// it is still the value first read.
func (dp *devicePlugin) releaseLock(ctx context.Context, pod *corev1.Pod, key string) error {
	n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	first, held := n.Annotations[key]
	if !held || !lockHeldBy(first, pod.Namespace, pod.Name) {
		return nil
	}
	return retry.OnError(releaseBackoff, func(error) bool { return ctx.Err() == nil }, func() error {
		n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current, held := n.Annotations[key]
		switch {
		case !held:
			return nil
		case !strings.Contains(current, ","):
			if current != first {
				return nil
			}
		case !lockHeldBy(current, pod.Namespace, pod.Name):
			return nil
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null},"resourceVersion":%q}}`, key, n.ResourceVersion)
		_, err = dp.client.Nodes().Patch(ctx, dp.node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
}

func (dp *devicePlugin) patchAnnotations(ctx context.Context, pod *corev1.Pod, annotations map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	_, err = dp.client.Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
