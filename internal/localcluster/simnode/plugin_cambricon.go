package simnode

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices/cambricon"
)

// cambriconRealCountsName is the third resource Cambricon's plugin
// registers in dynamic-smlu mode (one per card); HAMi never asks it.
const cambriconRealCountsName corev1.ResourceName = "cambricon.com/real-mlu-counts"

// cambriconProfileInstanceAnnotation is where the plugin records the smlu
// instance it made for the pod.
const cambriconProfileInstanceAnnotation = "CAMBRICON_DSMLU_PROFILE_INSTANCE"

// dsmluRecord is the plugin's memory of the pod whose first call it
// served (its package globals, keyed by pod name alone).
type dsmluRecord struct {
	pod, instance string
}

// cambriconPlugin is the Allocate of Cambricon's device plugin in
// dynamic-smlu mode (cambricon.PluginVersion). It registers
// cambricon.com/mlu.smlu.vcore, .vmemory and real-mlu-counts (never
// cambricon.com/vmlu), and every one of them runs the same code, which
// ignores what the kubelet asks:
//
//  1. LIST the node's Pending pods; the candidates are those whose regular
//     containers' limits ask a cambricon.com/*.vcore or *.vmemory and whose
//     CAMBRICON_DSMLU_ASSIGHED (sic) is "false". Exactly one must be found
//     ("no dynamic smlu candidate pod found", "number of dynamic smlu
//     candidate pods large than one"), with one such container ("number of
//     containers of dynamic smlu candidate pod large than one");
//  2. the first call for the pod reads CAMBRICON_DSMLU_PROFILE
//     (<slot>_<vcore>_<vmemory>), makes the smlu instance and remembers the
//     pod; no API write;
//  3. the second call PATCHes CAMBRICON_DSMLU_ASSIGHED=true and
//     CAMBRICON_DSMLU_PROFILE_INSTANCE, then GETs the node and removes
//     cambricon.com/dsmlu.lock (JSON patch, no precondition).
//
// It never reads HAMi's hami.io/cambricon-mlu-devices-* keys nor sets
// bind-phase. A container asking only one of vcore and vmemory gets one
// call: the hand-over never completes and the node stays locked.
type cambriconPlugin struct{}

func (*cambriconPlugin) allocate(ctx context.Context, dp *devicePlugin, call allocateCall) error {
	pod, err := cambriconCandidate(ctx, dp)
	if err != nil {
		dp.dsmlu = dsmluRecord{}
		return fmt.Errorf("failed to get dynamic smlu candidate pods, err %w", err)
	}
	if err := dp.check(pod, call); err != nil {
		return err
	}
	if dp.dsmlu.pod == pod.Name {
		return cambriconComplete(ctx, dp, pod)
	}
	if dp.simulatedFailure(pod) {
		return errors.New("simulated device failure")
	}
	slot, err := cambriconProfileSlot(pod.Annotations[cambricon.ProfileAnnotation], pod.Annotations)
	if err != nil {
		return fmt.Errorf("get profile from annotation %w", err)
	}
	dp.dsmlu = dsmluRecord{pod: pod.Name, instance: fmt.Sprintf("1_%d_%d_1", 1<<8|slot, slot)}
	return nil
}

// cambriconCandidate is step 1.
func cambriconCandidate(ctx context.Context, dp *devicePlugin) (*corev1.Pod, error) {
	list, err := dp.client.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + dp.node + ",status.phase=Pending"})
	if err != nil {
		return nil, fmt.Errorf("failed to get pending pods assigned to node %s", dp.node)
	}
	var found *corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if cambriconContainers(p) == 0 || p.Annotations[cambricon.PluginAssignedAnnotation] != "false" {
			continue
		}
		if found != nil {
			return nil, errors.New("number of dynamic smlu candidate pods large than one")
		}
		found = p
	}
	switch {
	case found == nil:
		return nil, errors.New("no dynamic smlu candidate pod found")
	case cambriconContainers(found) > 1:
		return nil, errors.New("number of containers of dynamic smlu candidate pod large than one")
	}
	return found, nil
}

// cambriconContainers counts the pod's regular containers whose limits ask
// a positive cambricon.com/*.vcore or *.vmemory.
func cambriconContainers(pod *corev1.Pod) int {
	n := 0
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Limits {
			s := string(name)
			if strings.HasPrefix(s, "cambricon.com/") && (strings.HasSuffix(s, ".vcore") || strings.HasSuffix(s, ".vmemory")) && q.Sign() > 0 {
				n++
				break
			}
		}
	}
	return n
}

// cambriconProfileSlot reads the card slot of CAMBRICON_DSMLU_PROFILE.
func cambriconProfileSlot(profile string, annotations map[string]string) (int, error) {
	if _, ok := annotations[cambricon.ProfileAnnotation]; !ok {
		return 0, fmt.Errorf("pod annotation %s not found", cambricon.ProfileAnnotation)
	}
	parts := strings.Split(profile, "_")
	if len(parts) != 3 {
		return 0, fmt.Errorf("invalid pod annotation %s", profile)
	}
	var values [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return 0, fmt.Errorf("strconv value %s, %v", p, err)
		}
		values[i] = v
	}
	return values[0], nil
}

// cambriconComplete is step 3.
func cambriconComplete(ctx context.Context, dp *devicePlugin, pod *corev1.Pod) error {
	instance := dp.dsmlu.instance
	dp.dsmlu = dsmluRecord{}
	if err := dp.patchAnnotations(ctx, pod, map[string]string{
		cambricon.PluginAssignedAnnotation: "true", cambriconProfileInstanceAnnotation: instance,
	}); err != nil {
		return fmt.Errorf("patchPodAnnotation %w", err)
	}
	if err := cambriconRemoveLock(ctx, dp); err != nil {
		klog.FromContext(ctx).Error(err, "Simulated Cambricon plugin cannot release its node lock", "node", dp.node)
	}
	return nil
}

// cambriconRemoveLock is the plugin's releaseNodeLock: GET the node and,
// when the lock is there, remove it with a JSON patch.
func cambriconRemoveLock(ctx context.Context, dp *devicePlugin) error {
	n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, ok := n.Annotations[cambricon.LockAnnotation]; !ok {
		return nil
	}
	patch := `[{"op":"remove","path":"/metadata/annotations/` + strings.ReplaceAll(cambricon.LockAnnotation, "/", "~1") + `"}]`
	_, err = dp.client.Nodes().Patch(ctx, dp.node, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// cambriconPodDeleted is the plugin's fixNodeLock, run on a pod's deletion:
// a pod that holds a profile but was never served (the flag still
// "false") and was Pending or Failed gives the node lock back (GET the
// node, UPDATE it without the lock).
func cambriconPodDeleted(ctx context.Context, dp *devicePlugin, pod *corev1.Pod) error {
	if _, ok := pod.Annotations[cambricon.ProfileAnnotation]; !ok || pod.Annotations[cambricon.PluginAssignedAnnotation] != "false" {
		return nil
	}
	if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != corev1.PodFailed {
		return nil
	}
	n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, ok := n.Annotations[cambricon.LockAnnotation]; !ok {
		return nil
	}
	delete(n.Annotations, cambricon.LockAnnotation)
	_, err = dp.client.Nodes().Update(ctx, n, metav1.UpdateOptions{})
	return err
}
