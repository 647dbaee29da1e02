package simnode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/biren"
)

// birenPluginVersion is the Biren device plugin the model follows.
const birenPluginVersion = "Project-HAMi/biren-device-plugin 331ee2b (2026-05-28, runc mode)"

// birenPlugin is the Allocate of Biren's device plugin (runc mode; resource
// birentech.com/gpu):
//
//  1. GetPendingPod: the lock's holder, whatever it is, else the first
//     Pending pod of the node with bind-phase allocating (not success). When
//     none is found the plugin's deferred clean-up dereferences a nil pod
//     and the process dies: the kubelet sees the call fail as a transport
//     error;
//  2. it reads hami.io/Biren-devices-allocated, never the to-allocate key:
//     the first entry listing cards (empty entries dropped); none: PATCH
//     bind-phase=failed, "device request not found";
//  3. a card count other than the kubelet's: PATCH bind-phase=failed,
//     "device number not matched"; a card not the node's: "invalid
//     allocation request for : unknown device <uuid>" (no patch);
//  4. PATCH the allocated key with that entry erased: the key HAMi's
//     scheduler rebuilds its usage from is consumed;
//  5. deferred, after every call that found a pod: GET the pod, and once no
//     entry is left, release hami.io/mutex.lock if it ends with the pod's
//     ",<namespace>,<name>" (releaseSuffixLock: a legacy lock, a bare time,
//     stays). Never bind-phase=success: a served pod stays allocating.
type birenPlugin struct{}

func (*birenPlugin) allocate(ctx context.Context, dp *devicePlugin, call allocateCall) error {
	pod, err := dp.pendingPod(ctx, devices.BindPhaseAllocating)
	if err != nil {
		return fmt.Errorf("rpc error: code = Unavailable desc = error reading from server: EOF (the Biren device plugin crashed on get pending pod error: %v)", err)
	}
	if err := dp.check(pod, call); err != nil {
		return err
	}
	err = birenServe(ctx, dp, pod, call)
	birenReleaseWhenDone(ctx, dp, pod)
	return err
}

// birenServe is steps 2 to 4.
func birenServe(ctx context.Context, dp *devicePlugin, pod *corev1.Pod, call allocateCall) error {
	failed := func(reason string) error {
		return dp.failPod(ctx, pod, "", errors.New(reason))
	}
	if dp.simulatedFailure(pod) {
		return failed("simulated device failure")
	}
	rest, served, err := eraseFirstListed(pod.Annotations[biren.AllocatedAnnotation])
	switch {
	case err != nil || served == nil:
		return failed("device request not found")
	case len(served) != call.devices:
		return failed("device number not matched")
	}
	for _, d := range served {
		if !dp.hasCard(biren.RegisterAnnotation, d.UUID) {
			return fmt.Errorf("invalid allocation request for : unknown device %s", d.UUID)
		}
	}
	if err := dp.patchAnnotations(ctx, pod, map[string]string{biren.AllocatedAnnotation: rest}); err != nil {
		return failed(err.Error())
	}
	return nil
}

// birenReleaseWhenDone is step 5.
func birenReleaseWhenDone(ctx context.Context, dp *devicePlugin, pod *corev1.Pod) {
	fresh, err := dp.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return
	}
	if _, next, err := eraseFirstListed(fresh.Annotations[biren.AllocatedAnnotation]); err == nil && next != nil {
		return
	}
	releaseSuffixLockLogged(ctx, dp, fresh, birenReleaseBackoff)
}

// birenReleaseBackoff is the Biren plugin's nodelock.DefaultStrategy.
var birenReleaseBackoff = wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Factor: 1.0, Jitter: 0.1}

// releaseSuffixLock is nodelock.ReleaseNodeLock as the Biren and AMD
// plugins carry it: GET the node and leave unless hami.io/mutex.lock ends
// with ",<namespace>,<name>" of the pod (so a legacy lock, a bare time, is
// never released); then, retried with the backoff on any error, GET the
// node and delete the lock with a merge patch carrying its
// resourceVersion, without looking at the lock again.
func releaseSuffixLock(ctx context.Context, dp *devicePlugin, pod *corev1.Pod, backoff wait.Backoff) error {
	n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	value, held := n.Annotations[devices.NodeLock]
	if !held || !strings.HasSuffix(value, ","+pod.Namespace+","+pod.Name) {
		return nil
	}
	return retry.OnError(backoff, func(error) bool { return ctx.Err() == nil }, func() error {
		n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null},"resourceVersion":%q}}`, devices.NodeLock, n.ResourceVersion)
		_, err = dp.client.Nodes().Patch(ctx, dp.node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
}

// releaseSuffixLockLogged is releaseSuffixLock with its error logged, as
// the plugins do, and the release reported to the hand-over log.
func releaseSuffixLockLogged(ctx context.Context, dp *devicePlugin, pod *corev1.Pod, backoff wait.Backoff) {
	if err := releaseSuffixLock(ctx, dp, pod, backoff); err != nil {
		klog.FromContext(ctx).Error(err, "Simulated device plugin cannot release the node lock", "node", dp.node, "pod", klog.KObj(pod), "lock", devices.NodeLock)
	} else if dp.released != nil {
		dp.released(dp.node, time.Now())
	}
}
