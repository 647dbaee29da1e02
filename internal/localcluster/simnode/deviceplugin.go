package simnode

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// releaseBackoff is HAMi v2.10's nodelock.DefaultStrategy, with which
// ReleaseNodeLock retries its GET and PATCH of the node.
var releaseBackoff = wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.5}

// devicePlugin is one node's device plugins, as far as the API server sees
// them: every call goes through client, which in the faithful mode is the
// node's own, rate-limited like HAMi's (5 QPS, burst 10 by default; every
// public plugin modelled here uses client-go's defaults, the same). Each
// vendor's Allocate is an allocator (plugin.go); devicePlugin holds what
// they share and the state a plugin keeps between calls.
type devicePlugin struct {
	node   string
	client corev1client.CoreV1Interface
	// nodes reads the node's own objects from the agent's informer: the
	// hardware a plugin knows without asking the API (nil in unit tests
	// that need none).
	nodes corelisters.NodeLister
	// applyMu serialises Allocate as the plugins' own mutexes do (the
	// kubelet calls them one at a time anyway).
	applyMu sync.Mutex
	// failing tells whether Allocate must fail for a pod (FailPod).
	failing func(namespace, name string) bool
	// mismatched counts Allocate calls that found another pod than the one
	// being admitted.
	mismatched *atomic.Int64
	// released, if set, hears each release of the node lock.
	released func(node string, t time.Time)
	// dsmlu is Cambricon's record of the pod whose first call it served.
	dsmlu dsmluRecord
}

// Allocate serves one kubelet call with the endpoint's model.
func (dp *devicePlugin) Allocate(ctx context.Context, p plugin, call allocateCall) error {
	dp.applyMu.Lock()
	defer dp.applyMu.Unlock()
	return p.model.allocate(ctx, dp, call)
}

// pendingPod finds the pod being allocated on the node as HAMi's
// util.GetPendingPod does: the holder of the node lock, whatever its state,
// else the first Pending pod on the node (in list order) with a bind time,
// one of the bind phases (HAMi v2.10: allocating or success; the plugins
// built on older HAMi code: allocating only), and hami.io/vgpu-node naming
// the node.
func (dp *devicePlugin) pendingPod(ctx context.Context, phases ...string) (*corev1.Pod, error) {
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
		if !slices.Contains(phases, p.Annotations[devices.BindPhase]) {
			continue
		}
		if p.Annotations[devices.AssignedNode] == dp.node {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no binding pod found on node %s", dp.node)
}

// setAnnotationsLogged patches the pod's annotations, logging a failure as
// the plugins do (they do not return it).
func (dp *devicePlugin) setAnnotationsLogged(ctx context.Context, pod *corev1.Pod, annotations map[string]string) {
	if err := dp.patchAnnotations(ctx, pod, annotations); err != nil {
		klog.FromContext(ctx).Error(err, "Simulated device plugin cannot annotate the pod", "pod", klog.KObj(pod), "annotations", annotations)
	}
}

// releaseLockLogged is ReleaseNodeLock with its error logged, not returned,
// as every plugin does; a released hami.io/mutex.lock is reported to the
// hand-over log.
func (dp *devicePlugin) releaseLockLogged(ctx context.Context, pod *corev1.Pod, key string) {
	if err := dp.releaseLock(ctx, pod, key); err != nil {
		klog.FromContext(ctx).Error(err, "Simulated device plugin cannot release the node lock", "node", dp.node, "pod", klog.KObj(pod), "lock", key)
	} else if dp.released != nil && key == devices.NodeLock {
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

// failPod is the plugins' PodAllocationFailed: PATCH bind-phase=failed,
// release the lock (lockKey "" for none), and return cause as Allocate's
// error.
func (dp *devicePlugin) failPod(ctx context.Context, pod *corev1.Pod, lockKey string, cause error) error {
	dp.setAnnotationsLogged(ctx, pod, map[string]string{devices.BindPhase: devices.BindPhaseFailed})
	if lockKey != "" {
		dp.releaseLockLogged(ctx, pod, lockKey)
	}
	return cause
}

// succeed is the plugins' PodAllocationTrySuccess once nothing is left:
// PATCH bind-phase=success with the extra annotations, then release the
// lock.
func (dp *devicePlugin) succeed(ctx context.Context, pod *corev1.Pod, lockKey string, extra map[string]string) {
	annotations := map[string]string{devices.BindPhase: devices.BindPhaseSuccess}
	maps.Copy(annotations, extra)
	dp.setAnnotationsLogged(ctx, pod, annotations)
	if lockKey != "" {
		dp.releaseLockLogged(ctx, pod, lockKey)
	}
}

// simulatedFailure tells whether the test harness made the pod's Allocate
// fail (FailPod), as a broken card or driver would.
func (dp *devicePlugin) simulatedFailure(pod *corev1.Pod) bool {
	return dp.failing != nil && dp.failing(pod.Namespace, pod.Name)
}

// hasCard reports whether the card is one the node's plugin registered
// under the register annotation key: the hardware the plugin knows, read
// from the agent's informer (no API call). Without an informer (unit
// tests of the call sequence) every card is the node's.
func (dp *devicePlugin) hasCard(registerKey, uuid string) bool {
	_, ok := dp.card(registerKey, uuid)
	return ok
}

// card is the registered card with the uuid.
func (dp *devicePlugin) card(registerKey, uuid string) (devices.Card, bool) {
	if dp.nodes == nil {
		return devices.Card{UUID: uuid}, true
	}
	n, err := dp.nodes.Get(dp.node)
	if err != nil {
		return devices.Card{}, false
	}
	cards, err := devices.DecodeInventory(n.Annotations[registerKey])
	if err != nil {
		return devices.Card{}, false
	}
	for _, c := range cards {
		if c.UUID == uuid {
			return c, true
		}
	}
	return devices.Card{}, false
}
