package simnode

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
)

// ascendPluginVersion is the Ascend device plugin the model follows.
const ascendPluginVersion = "Project-HAMi/ascend-device-plugin v1.4.0 (ed35e1c, on HAMi 5f0adaa7)"

// ascendPlugin is the Allocate of HAMi's Ascend device plugin for one chip
// (one plugin per chip; it registers huawei.com/<chip> only, so -memory
// and -core get no call):
//
//  1. GetPendingPod: the lock's holder, whatever it is, else the first
//     Pending pod of the node with bind-phase allocating or success;
//  2. huawei.com/<chip> must hold the runtime JSON ("build runtimeInfo
//     lookup: annotation ... not set"), hami.io/<chip>-devices-to-allocate
//     must exist;
//  3. the first entry listing cards, by index, empty pieces kept (HAMi
//     v2.10's codec); none left: "no pending device allocation found"; a
//     card count other than the kubelet's: "device number not matched:
//     annotation has N, request has M"; every card must be the node's;
//  4. PATCH the to-allocate key with the entry blanked;
//  5. GET the pod, PATCH bind-phase=success and release hami.io/mutex.lock
//     after this first container: the plugin never fills HAMi's
//     DevicesToHandle, so its "anything left?" test never holds the pod
//     back. A second container then finds whichever pod the lock or the
//     node's list gives.
//
// Any failure after step 1 PATCHes bind-phase=failed and releases the lock;
// the to-allocate key is left as it was.
type ascendPlugin struct {
	chip string
}

func (m *ascendPlugin) allocate(ctx context.Context, dp *devicePlugin, call allocateCall) error {
	pod, err := dp.pendingPod(ctx, devices.BindPhaseAllocating, devices.BindPhaseSuccess)
	if err != nil {
		return fmt.Errorf("get pending pod error: %w", err)
	}
	if err := dp.check(pod, call); err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		return dp.failPod(ctx, pod, devices.NodeLock, fmt.Errorf(format, args...))
	}
	if dp.simulatedFailure(pod) {
		return fail("simulated device failure")
	}
	runtimeKey := ascend.RuntimeInfoAnnotation(m.chip)
	raw, ok := pod.Annotations[runtimeKey]
	if !ok {
		return fail("build runtimeInfo lookup: annotation %s not set", runtimeKey)
	}
	var runtime []map[string]any
	if err := json.Unmarshal([]byte(raw), &runtime); err != nil {
		return fail("build runtimeInfo lookup: annotation %s value %s invalid: %v", runtimeKey, raw, err)
	}
	toAllocate := ascend.ToAllocateAnnotation(m.chip)
	value, ok := pod.Annotations[toAllocate]
	if !ok {
		return fail("decode device annotations: device %s not found in pod annotations", m.chip)
	}
	rest, served, err := eraseNext(value)
	switch {
	case err != nil:
		return fail("decode device annotations: %v", err)
	case served == nil:
		return fail("get next container devices: no pending device allocation found")
	case len(served) != call.devices:
		return fail("device number not matched: annotation has %d, request has %d", len(served), call.devices)
	}
	for _, d := range served {
		if !dp.hasCard(ascend.RegisterAnnotation(m.chip), d.UUID) {
			return fail("build container allocate response: unknown uuid: %s", d.UUID)
		}
	}
	if err := dp.patchAnnotations(ctx, pod, map[string]string{toAllocate: rest}); err != nil {
		return fail("erase allocated containers annotation: %v", err)
	}
	if _, err := dp.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
		// The plugin logs and returns: the lock stays until it expires.
		return nil
	}
	dp.succeed(ctx, pod, devices.NodeLock, nil)
	return nil
}
