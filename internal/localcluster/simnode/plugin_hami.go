package simnode

import (
	"context"
	"errors"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// hamiPlugin is HAMi v2.10's NVIDIA device plugin (pkg/device-plugin/nvidiadevice
// in HAMi's tree). HAMi's tree has no other vendor's plugin; the vendors
// modelled from no public plugin (MetaX, Kunlunxin, Moore Threads, AWS
// Neuron, Enflame GCU, Vastai, Iluvatar) use it too, keeping to the keys
// HAMi writes for them (hami-vendors.md).
type hamiPlugin struct {
	// toAllocate is the pod annotation whose next container entry
	// Allocate erases ("": the vendor's assignment has none), and word the
	// card type that, left in it, means the pod is not served yet.
	toAllocate, word string
	// allocated is the vendor's allocated annotation: without a
	// to-allocate key, Allocate refuses a pod whose entry for the
	// container lists no card.
	allocated string
	// lock is the node annotation the plugin releases when the pod is
	// served ("": the vendor takes no lock).
	lock string
	// served are annotations the plugin sets on the pod once it has
	// served it (the vendor's "assigned" flags).
	served map[string]string
	// countCheck: refuse a container whose card count differs from the
	// cards its entry lists (HAMi's NVIDIA plugin: "device number not
	// matched").
	countCheck bool
}

// allocate is HAMi v2.10's Allocate for one container request, in HAMi's
// order of API calls:
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
// pod.
//
// The simulated vendors: a plugin without the shared lock has no pod to
// find in step 1 and takes the pod admitted (one GET). A plugin whose
// vendor has no to-allocate key checks that the container's entry of the
// allocated key lists cards instead of step 2, and then sets
// bind-phase=success. On success a plugin also sets the vendor's
// "assigned" flags (served) and releases its lock, if any.
func (m *hamiPlugin) allocate(ctx context.Context, dp *devicePlugin, call allocateCall) error {
	current, err := m.findPod(ctx, dp, call.admitted)
	if err != nil {
		// HAMi returns the error and touches nothing; the kubelet fails
		// the pod's admission.
		return err
	}
	if err := dp.check(current, call); err != nil {
		return err
	}
	if dp.failing != nil && dp.failing(current.Namespace, current.Name) {
		return m.allocationFailed(ctx, dp, current, "simulated device failure")
	}
	if m.toAllocate == "" {
		grants, err := devices.DecodeAssignment(current.Annotations[m.allocated])
		if err != nil || call.container >= len(grants) || len(grants[call.container]) == 0 {
			return m.allocationFailed(ctx, dp, current, "no device allocation found for container "+strconv.Itoa(call.container))
		}
		dp.succeed(ctx, current, m.lock, m.served)
		return nil
	}
	value, ok := current.Annotations[m.toAllocate]
	if !ok {
		return m.allocationFailed(ctx, dp, current, "device request not found")
	}
	rest, served, err := eraseNext(value)
	switch {
	case err != nil:
		return m.allocationFailed(ctx, dp, current, err.Error())
	case served == nil:
		return m.allocationFailed(ctx, dp, current, "no pending device allocation found")
	case m.countCheck && len(served) != call.devices:
		return m.allocationFailed(ctx, dp, current, "device number not matched")
	}
	if err := dp.patchAnnotations(ctx, current, map[string]string{m.toAllocate: rest}); err != nil {
		return m.allocationFailed(ctx, dp, current, "erase allocated containers annotation: "+err.Error())
	}
	m.trySuccess(ctx, dp, current)
	return nil
}

// findPod is step 1 of Allocate: HAMi's GetPendingPod for a plugin that
// takes the shared lock, else the admitted pod, read again.
func (m *hamiPlugin) findPod(ctx context.Context, dp *devicePlugin, pod *corev1.Pod) (*corev1.Pod, error) {
	if m.lock == devices.NodeLock {
		return dp.pendingPod(ctx, devices.BindPhaseAllocating, devices.BindPhaseSuccess)
	}
	return dp.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
}

// trySuccess is HAMi's PodAllocationTrySuccess: it re-reads the pod and,
// once no card of the plugin's vendor is left to hand out, sets
// bind-phase=success and releases the node lock.
func (m *hamiPlugin) trySuccess(ctx context.Context, dp *devicePlugin, pod *corev1.Pod) {
	fresh, err := dp.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		// HAMi logs and returns; the lock stays until it expires.
		klog.FromContext(ctx).Error(err, "Simulated device plugin cannot re-read the pod", "pod", klog.KObj(pod))
		return
	}
	if strings.Contains(fresh.Annotations[m.toAllocate], m.word) {
		return
	}
	// HAMi's updatePodAnnotationsAndReleaseLock; the vendor's served
	// flags go into the same patch.
	dp.succeed(ctx, pod, m.lock, m.served)
}

// allocationFailed is HAMi's PodAllocationFailed: bind-phase=failed and the
// node lock released; Allocate then returns the error.
func (m *hamiPlugin) allocationFailed(ctx context.Context, dp *devicePlugin, pod *corev1.Pod, reason string) error {
	return dp.failPod(ctx, pod, m.lock, errors.New(reason))
}
