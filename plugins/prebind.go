package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// PreBindPreFlight implements fwk.PreBindPlugin: only pods this plugin
// placed have anything to write.
func (p *Plugin) PreBindPreFlight(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if s, err := readState(state); err != nil || s == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: false}, nil
}

// PreBind runs in the asynchronous binding cycle: it takes the node's
// hami.io/mutex.lock (waiting, bounded, while another pod holds it), then
// writes every assignment annotation and the hami.io/vgpu-node label in one
// pod patch with bind-phase allocating, which is what the device plugin
// looks for. Binding itself is left to the default binder. On failure the
// lock is released and an error returned, so Unreserve rolls the cache back.
func (p *Plugin) PreBind(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	logger := klog.FromContext(ctx)
	s, fit, st := chosenFit(state, nodeName)
	if st != nil {
		return st
	}
	if s == nil {
		// PreFilter skipped the pod: no lock, no annotation.
		return nil
	}
	patch, err := p.assignmentPatch(nodeName, fit, time.Now())
	if err != nil {
		return fwk.AsStatus(err)
	}
	if err := p.locker.Lock(ctx, nodeName, pod); err != nil {
		return fwk.AsStatus(fmt.Errorf("lock node %s: %w", nodeName, err))
	}
	_, err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		if rerr := p.locker.Release(context.WithoutCancel(ctx), nodeName, pod); rerr != nil {
			logger.Error(rerr, "Releasing node lock after a failed pod patch", "node", nodeName, "pod", klog.KObj(pod))
		}
		return fwk.AsStatus(fmt.Errorf("write device assignment to pod: %w", err))
	}
	s.mu.Lock()
	s.handedOver = nodeName
	s.mu.Unlock()
	logger.V(3).Info("Device assignment written", "pod", klog.KObj(pod), "node", nodeName)
	return nil
}

// undoHandOver runs when binding fails after PreBind: it marks the pod's
// assignment failed (so no device plugin serves it) and releases the node
// lock, as HAMi's extender does when its bind fails.
func (p *Plugin) undoHandOver(ctx context.Context, pod *corev1.Pod, nodeName string) {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, devices.BindPhase, devices.BindPhaseFailed)
	_, err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Marking the assignment of an unbound pod failed", "pod", klog.KObj(pod), "node", nodeName)
	}
	if err := p.locker.Release(ctx, nodeName, pod); err != nil {
		logger.Error(err, "Releasing the node lock of an unbound pod", "pod", klog.KObj(pod), "node", nodeName)
	}
}

// assignmentPatch is the merge patch that hands the pod to the node's
// device plugin.
func (p *Plugin) assignmentPatch(nodeName string, fit *nodeFit, now time.Time) ([]byte, error) {
	unix := strconv.FormatInt(now.Unix(), 10)
	annotations := map[string]string{
		devices.AssignedNode: nodeName,
		devices.AssignedTime: unix,
		devices.BindPhase:    devices.BindPhaseAllocating,
		devices.BindTime:     unix,
	}
	for vi, v := range p.registry.Vendors() {
		a := fit.assignments[vi]
		if a.Empty() {
			continue
		}
		encoded := devices.EncodeAssignment(a)
		toAllocate, allocated := v.AssignmentAnnotations()
		annotations[toAllocate] = encoded
		annotations[allocated] = encoded
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"annotations": annotations,
			"labels":      map[string]string{devices.AssignedNode: nodeName},
		},
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encode assignment patch: %w", err)
	}
	return data, nil
}
