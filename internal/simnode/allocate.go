package simnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
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
// calls:
//
//  1. find the pending pod (GetPendingPod): GET the node; if its lock names
//     a pod, GET that pod, else LIST the pods on the node;
//  2. pop the container's cards and PATCH the pod's to-allocate annotation;
//  3. re-read the pod (GET); if no NVIDIA card is left to hand out, PATCH
//     bind-phase=success and release the lock (ReleaseNodeLock: GET the
//     node, then GET and PATCH it again within a retry);
//
// or, on any error after step 1, PATCH bind-phase=failed and release the
// lock. An error is Allocate's refusal: the kubelet does not start the
// pod. One check is the simulator's own and makes no call: when the pod
// found is not the pod being admitted, the protocol was violated; HAMi
// would serve the wrong pod, here the call fails and counts as mismatched.
func (dp *devicePlugin) Allocate(ctx context.Context, pod *corev1.Pod, want int) error {
	dp.applyMu.Lock()
	defer dp.applyMu.Unlock()

	current, err := dp.pendingPod(ctx)
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
		return dp.allocationFailed(ctx, current, "simulated device failure")
	}
	value, ok := current.Annotations[nvidia.ToAllocateAnnotation]
	if !ok {
		return dp.allocationFailed(ctx, current, "device request not found")
	}
	rest, served, err := eraseNext(value)
	switch {
	case err != nil:
		return dp.allocationFailed(ctx, current, err.Error())
	case served == nil:
		return dp.allocationFailed(ctx, current, "no pending device allocation found")
	case len(served) != want:
		return dp.allocationFailed(ctx, current, "device number not matched")
	}
	if err := dp.patchAnnotations(ctx, current, map[string]string{nvidia.ToAllocateAnnotation: rest}); err != nil {
		return dp.allocationFailed(ctx, current, "erase allocated containers annotation: "+err.Error())
	}
	dp.trySuccess(ctx, current)
	return nil
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
// once no NVIDIA card is left to hand out, sets bind-phase=success and
// releases the node lock.
func (dp *devicePlugin) trySuccess(ctx context.Context, pod *corev1.Pod) {
	fresh, err := dp.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		// HAMi logs and returns; the lock stays until it expires.
		klog.FromContext(ctx).Error(err, "Simulated device plugin cannot re-read the pod", "pod", klog.KObj(pod))
		return
	}
	if strings.Contains(fresh.Annotations[nvidia.ToAllocateAnnotation], nvidia.VendorWord) {
		return
	}
	dp.finish(ctx, pod, devices.BindPhaseSuccess)
}

// allocationFailed is HAMi's PodAllocationFailed: bind-phase=failed and the
// node lock released; Allocate then returns the error.
func (dp *devicePlugin) allocationFailed(ctx context.Context, pod *corev1.Pod, reason string) error {
	dp.finish(ctx, pod, devices.BindPhaseFailed)
	return errors.New(reason)
}

// finish is HAMi's updatePodAnnotationsAndReleaseLock: errors are logged,
// not returned.
func (dp *devicePlugin) finish(ctx context.Context, pod *corev1.Pod, phase string) {
	logger := klog.FromContext(ctx)
	if err := dp.patchAnnotations(ctx, pod, map[string]string{devices.BindPhase: phase}); err != nil {
		logger.Error(err, "Simulated device plugin cannot set the bind phase", "pod", klog.KObj(pod), "phase", phase)
	}
	if err := dp.releaseLock(ctx, pod); err != nil {
		logger.Error(err, "Simulated device plugin cannot release the node lock", "node", dp.node, "pod", klog.KObj(pod))
	} else if dp.released != nil {
		dp.released(dp.node, time.Now())
	}
}

// releaseLock is HAMi's nodelock.ReleaseNodeLock: GET the node and leave
// when the lock is gone or names another pod; then, retried with HAMi's
// backoff on any error, GET the node again and delete the lock with a
// merge patch carrying the node's resourceVersion, unless it has gone or
// changed hands meanwhile. A legacy lock (a bare time) is released only if
// it is still the value first read.
func (dp *devicePlugin) releaseLock(ctx context.Context, pod *corev1.Pod) error {
	n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	first, held := n.Annotations[devices.NodeLock]
	if !held || !lockHeldBy(first, pod.Namespace, pod.Name) {
		return nil
	}
	return retry.OnError(releaseBackoff, func(error) bool { return ctx.Err() == nil }, func() error {
		n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current, held := n.Annotations[devices.NodeLock]
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
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null},"resourceVersion":%q}}`, devices.NodeLock, n.ResourceVersion)
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
