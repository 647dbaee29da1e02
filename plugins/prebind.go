package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	"github.com/hami-scheduler/hami-scheduler/internal/jsonpatch"
)

// PreBind runs in the asynchronous binding cycle: it writes every
// assignment annotation and the hami.io/vgpu-node label in one pod patch
// with bind-phase allocating, which is what the device plugin looks for,
// then takes the node's hami.io/mutex.lock (waiting, bounded, while another
// pod holds it). Binding itself is left to the default binder. The patch
// comes first, as HAMi writes the assignment in its Filter: it is off the
// lock's critical path, and harmless before binding (a device plugin finds
// its pod through the lock, or among the pods bound to its node). The patch
// applies only to the pod with pod's UID, not to a pod that took its name
// since. On failure an error is returned and Unreserve rolls the cache
// back and marks the assignment failed (no device plugin serves an
// unbound pod, but a scheduler restarted meanwhile would take an
// assignment still allocating for a hand-over under way, gang_resume.go); once
// the pod holds the lock (the hand-over has begun), Unreserve also
// releases the lock. A gang's members bind as one round (gang_bind.go).
func (p *Plugin) PreBind(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	logger := klog.FromContext(ctx)
	s, fit, st := p.chosenFit(ctx, state, pod, nodeName)
	if st != nil {
		preBindFailed("fit")
		p.bindingFailed(pod, st.AsError())
		return st
	}
	if s == nil {
		// PreFilter skipped the pod: no lock, no annotation.
		return nil
	}
	s.mu.Lock()
	s.binding = true
	s.mu.Unlock()
	// A gang's members bind as one round (gang_bind.go): its preflight
	// first, and the lock waits end when the round is aborted.
	ctx, done, st := p.preBindGang(ctx, pod, nodeName, fit.onDRA)
	defer done()
	if st != nil {
		return p.preBindFailure(s, pod, "gang", st.AsError())
	}
	if fit.onDRA {
		return p.writeClaim(ctx, s, pod, nodeName)
	}
	now := time.Now()
	patch, err := p.assignmentPatch(pod, nodeName, fit, now)
	if err != nil {
		return p.preBindFailure(s, pod, "annotation", err)
	}
	_, err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return p.preBindFailure(s, pod, patchFailure(err), fmt.Errorf("write device assignment to pod: %w", err))
	}
	s.mu.Lock()
	s.patched = strconv.FormatInt(now.Unix(), 10)
	s.mu.Unlock()
	// Vendors with a lock of their own (Cambricon's), see nodelock/vendor.go;
	// Unreserve releases them.
	if st := p.takeVendorLocks(ctx, state, pod, nodeName, s.requests); st != nil {
		s.mu.Lock()
		s.failure = st.Message()
		s.mu.Unlock()
		return st
	}
	// One lock for the pod, however many vendors it asks (HAMi's vendors
	// share hami.io/mutex.lock), init containers included (see
	// sharedLockAsks).
	if sharedLockAsks(p.registry.Vendors(), s.requests) {
		if err := p.locker.Lock(ctx, nodeName, pod); err != nil {
			return p.preBindFailure(s, pod, lockFailure(err), fmt.Errorf("lock node %s: %w", nodeName, err))
		}
	}
	// From here on the node's device plugin may serve the pod once it is
	// bound: a failure must be undone (Unreserve).
	s.mu.Lock()
	s.handedOver = nodeName
	s.mu.Unlock()
	if err := p.stillBinding(pod); err != nil {
		// The member's round was aborted while it took the lock.
		return p.preBindFailure(s, pod, "gang", err)
	}
	p.handOvers.start(pod.UID, time.Now())
	logger.V(3).Info("Device assignment written and node locked", "pod", klog.KObj(pod), "node", nodeName)
	return nil
}

// preBindFailure counts and records a failed PreBind of the pod and keeps
// why, for Unreserve.
func (p *Plugin) preBindFailure(s *cycleState, pod *corev1.Pod, reason string, err error) *fwk.Status {
	preBindFailed(reason)
	p.bindingFailed(pod, err)
	s.mu.Lock()
	s.failure = err.Error()
	s.mu.Unlock()
	return fwk.AsStatus(err)
}

// sharedLockAsks reports whether a container of the pod, init containers
// included, asks for a device of a vendor that takes HAMi's node lock
// hami.io/mutex.lock: every vendor but those whose devices.NodeLocker names
// another lock or none (Cambricon's device plugin releases its own
// cambricon.com/dsmlu.lock, taken by takeVendorLocks, never
// hami.io/mutex.lock). requests are index-aligned with vendors.
//
// HAMi's LockNode looks at spec.containers alone, so a pod whose devices
// are all in init containers is bound without the lock, and the node's
// plugin must find it among the node's pods: AMD's plugin then refuses it
// ("lock is missing before CU allocation commit"), and the others may
// take whichever pod another scheduler locked the node for meanwhile.
// With the lock the plugin finds the pod as its holder (docs/vendors.md,
// "Vendors' device plugins").
func sharedLockAsks(vendors []devices.Vendor, requests []devices.PodRequest) bool {
	for i := range requests {
		if i < len(vendors) {
			if nl, ok := vendors[i].(devices.NodeLocker); ok && nl.NodeLock() != devices.NodeLock {
				continue
			}
		}
		if !requests[i].IsZero() {
			return true
		}
	}
	return false
}

// servedByLockingPlugin reports whether a device plugin that takes HAMi's
// node lock still registers cards on the node: a node moved to a DRA
// driver does not, and a pod waiting for its lock is placed again (on its
// DRA cards) rather than waiting for a lock no device plugin will release.
func (p *Plugin) servedByLockingPlugin(node *corev1.Node) bool {
	for _, v := range p.registry.Vendors() {
		if nl, ok := v.(devices.NodeLocker); ok && nl.NodeLock() != devices.NodeLock {
			continue
		}
		if cards, err := v.Inventory(node); err == nil && len(cards) > 0 {
			return true
		}
	}
	return false
}

// undoHandOver runs when binding fails after PreBind wrote the pod's
// assignment: it marks the assignment failed (so no device plugin serves
// it, and no scheduler takes it for a hand-over under way) and, when the
// pod held the node lock (locked), releases it, as HAMi's extender does
// when its bind fails. The patch applies only to the assignment PreBind
// wrote, and only while the pod is unbound: a binding whose caller saw an error may still
// have been stored (a timeout, a scheduler stopping mid-call), and failing
// that pod's assignment would make its device plugin refuse it. Such a
// hand-over stands (true is returned); the lock stays for the device plugin
// to release.
func (p *Plugin) undoHandOver(ctx context.Context, pod *corev1.Pod, nodeName, bindTime string, locked bool) (stands bool) {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := p.failUnboundAssignment(ctx, pod, nodeName, bindTime)
	if err != nil && p.boundTo(ctx, pod, nodeName) {
		logger.Info("Binding reported an error but the pod is bound; its device plugin serves it", "pod", klog.KObj(pod), "node", nodeName)
		return true
	}
	switch {
	case apierrors.IsInvalid(err):
		logger.V(2).Info("The pod carries another attempt's assignment now; left as it is", "pod", klog.KObj(pod), "node", nodeName)
	case err != nil && !apierrors.IsNotFound(err):
		logger.Error(err, "Marking the assignment of an unbound pod failed", "pod", klog.KObj(pod), "node", nodeName)
	}
	if !locked {
		return false
	}
	p.handOvers.drop(pod.UID)
	p.bindingFailed(pod, fmt.Errorf("pod was not bound to node %s; its device assignment is marked %s and the node lock released", nodeName, devices.BindPhaseFailed))
	if err := p.locker.Release(ctx, nodeName, pod); err != nil {
		logger.Error(err, "Releasing the node lock of an unbound pod", "pod", klog.KObj(pod), "node", nodeName)
	}
	return false
}

// failUnboundAssignment sets bind-phase failed on the pod with pod's UID
// if it is not bound to any node and still carries the assignment this
// PreBind wrote (for nodeName, at bindTime), not one another replica wrote
// since for the pod's next attempt.
func (p *Plugin) failUnboundAssignment(ctx context.Context, pod *corev1.Pod, nodeName, bindTime string) error {
	ops := []jsonpatch.Op{
		{Op: "test", Path: "/metadata/uid", Value: pod.UID},
		{Op: "test", Path: "/spec/nodeName", Value: nil},
		{Op: "test", Path: jsonpatch.Annotation(devices.AssignedNode), Value: nodeName},
		{Op: "test", Path: jsonpatch.Annotation(devices.BindTime), Value: bindTime},
	}
	// PreBind wrote annotations, so the map exists.
	ops = appendMapOps(ops, "/metadata/annotations", true, map[string]string{devices.BindPhase: devices.BindPhaseFailed})
	patch, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode pod patch: %w", err)
	}
	_, err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

// boundTo reports whether the API server has the pod with pod's UID bound
// to nodeName.
func (p *Plugin) boundTo(ctx context.Context, pod *corev1.Pod, nodeName string) bool {
	got, err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	return err == nil && got.UID == pod.UID && got.Spec.NodeName == nodeName
}

// assignmentPatch is the pod patch that hands the pod to the node's device
// plugin: the generic keys, each vendor's assignment pair and, for vendors
// that implement devices.PodAnnotator, their extra annotations (e.g.
// Ascend's huawei.com/<chip> and predicate-time), all in one patch. Two
// vendors writing the same extra key with different values is an error.
func (p *Plugin) assignmentPatch(pod *corev1.Pod, nodeName string, fit *nodeFit, now time.Time) ([]byte, error) {
	unix := strconv.FormatInt(now.Unix(), 10)
	annotations := map[string]string{
		devices.AssignedNode: nodeName,
		devices.AssignedTime: unix,
		devices.BindPhase:    devices.BindPhaseAllocating,
		devices.BindTime:     unix,
	}
	record := map[string]string{}
	for vi, v := range p.registry.Vendors() {
		a := fit.assignments[vi]
		if a.Empty() {
			continue
		}
		encoded := devices.EncodeAssignment(a)
		toAllocate, allocated := v.AssignmentAnnotations()
		// Some vendors' device plugins read no to-allocate key (HAMi
		// writes none for Moore Threads, AWS Neuron, Enflame DRS).
		if toAllocate != "" {
			annotations[toAllocate] = encoded
		}
		annotations[allocated] = encoded
		record[allocated] = encoded
	}
	if len(record) > 0 {
		value, err := devices.EncodeRecord(record)
		if err != nil {
			return nil, err
		}
		annotations[devices.AssignmentRecord] = value
	}
	for vi, v := range p.registry.Vendors() {
		pa, ok := v.(devices.PodAnnotator)
		a := fit.assignments[vi]
		if !ok || a.Empty() {
			continue
		}
		extras, err := pa.AssignmentExtras(pod, a, now)
		if err != nil {
			return nil, fmt.Errorf("%s annotations: %w", v.Name(), err)
		}
		for k, val := range extras {
			if old, set := annotations[k]; set && old != val {
				return nil, fmt.Errorf("%s annotation %s: %q clashes with %q", v.Name(), k, val, old)
			}
			annotations[k] = val
		}
	}
	return podPatch(pod.UID, len(pod.Annotations) > 0, annotations, len(pod.Labels) > 0, map[string]string{devices.AssignedNode: nodeName})
}

// podPatch is a JSON patch that sets annotations and labels on the pod with
// the given UID, and on no other pod: it first tests metadata.uid, so the
// API server refuses it (422) when the pod was deleted and another one took
// its name. (A merge patch has no precondition; an Update with
// resourceVersion would fail on any unrelated change to the pod.) JSON
// patch cannot add a key to a map that does not exist, so when the pod, as
// the caller knows it, has no annotations (labels), the patch tests that
// the API server's copy has none either and adds the whole map; otherwise
// it adds each key. A copy that changed in between makes the patch fail,
// and the pod is tried again.
func podPatch(uid types.UID, haveAnnotations bool, annotations map[string]string, haveLabels bool, labels map[string]string) ([]byte, error) {
	ops := []jsonpatch.Op{{Op: "test", Path: "/metadata/uid", Value: uid}}
	ops = appendMapOps(ops, "/metadata/annotations", haveAnnotations, annotations)
	ops = appendMapOps(ops, "/metadata/labels", haveLabels, labels)
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encode pod patch: %w", err)
	}
	return data, nil
}

// appendMapOps appends the operations that set kv in the map at path.
func appendMapOps(ops []jsonpatch.Op, path string, exists bool, kv map[string]string) []jsonpatch.Op {
	if len(kv) == 0 {
		return ops
	}
	if !exists {
		return append(ops,
			jsonpatch.Op{Op: "test", Path: path, Value: nil},
			jsonpatch.Op{Op: "add", Path: path, Value: kv})
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ops = append(ops, jsonpatch.Op{Op: "add", Path: path + "/" + jsonpatch.Token(k), Value: kv[k]})
	}
	return ops
}
