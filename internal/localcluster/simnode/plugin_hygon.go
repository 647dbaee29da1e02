package simnode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
)

// hygonPluginVersion is the Hygon device plugin the model follows.
const hygonPluginVersion = "Project-HAMi/dcu-vgpu-device-plugin 8160fc0 (v1.0.6-13, on HAMi ab547e40)"

// hygonPlugin is the Allocate of Hygon's DCU plugin. It registers
// hygon.com/dcunum only (dcumem and dcucores get no call), and serves one
// container a call:
//
//  1. GetPendingPod of the HAMi code it vendors: the lock's holder, else the
//     first Pending pod of the node with bind-phase allocating (not
//     success);
//  2. the first entry of hami.io/dcu-devices-to-allocate that lists cards
//     (empty entries dropped); none: "device request not found";
//  3. a card count other than the kubelet's: "device number not matched";
//  4. PATCH the to-allocate key without that entry;
//  5. every card must be one of the node's ("device serial number ... not
//     found in mapper"; the entry stays erased);
//  6. GET the pod (an error is only logged: the call succeeds, the lock
//     stays): once no DCU is left to hand out, PATCH bind-phase=success and
//     release hami.io/mutex.lock.
//
// Any failure after step 1 PATCHes bind-phase=failed and releases the lock.
// The release is that of the HAMi commit the plugin vendors
// (hygonReleaseLock), not v2.10's.
type hygonPlugin struct{}

func (*hygonPlugin) allocate(ctx context.Context, dp *devicePlugin, call allocateCall) error {
	pod, err := dp.pendingPod(ctx, devices.BindPhaseAllocating)
	if err != nil {
		return err
	}
	if err := dp.check(pod, call); err != nil {
		return err
	}
	failed := func(cause error) error {
		dp.failPod(ctx, pod, "", cause)
		hygonReleaseLockLogged(ctx, dp, pod)
		return cause
	}
	fail := func(reason string) error { return failed(errors.New(reason)) }
	if dp.simulatedFailure(pod) {
		return fail("simulated device failure")
	}
	value, ok := pod.Annotations[hygon.ToAllocateAnnotation]
	if !ok {
		return fail("device request not found")
	}
	rest, served, err := eraseFirstListed(value)
	switch {
	case err != nil || served == nil:
		return fail("device request not found")
	case len(served) != call.devices:
		return fail("device number not matched")
	}
	if err := dp.patchAnnotations(ctx, pod, map[string]string{hygon.ToAllocateAnnotation: rest}); err != nil {
		return failed(err)
	}
	for _, d := range served {
		if !dp.hasCard(hygon.RegisterAnnotation, d.UUID) {
			return fail("device serial number " + strings.TrimPrefix(d.UUID, "DCU-") + " not found in mapper")
		}
	}
	fresh, err := dp.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || strings.Contains(fresh.Annotations[hygon.ToAllocateAnnotation], hygon.VendorWord) {
		return nil
	}
	dp.succeed(ctx, pod, "", nil)
	hygonReleaseLockLogged(ctx, dp, pod)
	return nil
}

// hygonLockRetries is MaxLockRetry of the HAMi commit the plugin vendors.
const hygonLockRetries = 5

// hygonReleaseLock is nodelock.ReleaseNodeLock of HAMi ab547e4, which the
// plugin vendors: GET the node and leave when hami.io/mutex.lock is gone
// or its value does not contain the pod's name (a substring test; the
// namespace is not compared); else UPDATE the node as read without the
// lock, and after an error GET it and UPDATE again, up to 5 more times
// 100 ms apart.
func hygonReleaseLock(ctx context.Context, dp *devicePlugin, pod *corev1.Pod) error {
	n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if value, held := n.Annotations[devices.NodeLock]; !held || !strings.Contains(value, pod.Name) {
		return nil
	}
	update := func(n *corev1.Node) error {
		n = n.DeepCopy()
		delete(n.Annotations, devices.NodeLock)
		_, err := dp.client.Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	}
	err = update(n)
	for i := 0; i < hygonLockRetries && err != nil; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if n, err = dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{}); err != nil {
			continue
		}
		err = update(n)
	}
	if err != nil {
		return fmt.Errorf("releaseNodeLock exceeds retry count %d", hygonLockRetries)
	}
	return nil
}

// hygonReleaseLockLogged is hygonReleaseLock with its error logged, and
// the release reported to the hand-over log.
func hygonReleaseLockLogged(ctx context.Context, dp *devicePlugin, pod *corev1.Pod) {
	if err := hygonReleaseLock(ctx, dp, pod); err != nil {
		klog.FromContext(ctx).Error(err, "Simulated Hygon plugin cannot release the node lock", "node", dp.node, "pod", klog.KObj(pod))
	} else if dp.released != nil {
		dp.released(dp.node, time.Now())
	}
}
