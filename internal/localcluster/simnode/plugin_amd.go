package simnode

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/amd"
)

// amdPluginVersion is the AMD device plugin the model follows.
const amdPluginVersion = "Project-HAMi/amd-device-plugin 808784f (v0.0.1-1)"

// amdCUAnnotation is the pod annotation in which AMD's plugin records the
// compute units it gave each card ({"<uuid>":"0-75"}); HAMi never reads it.
const amdCUAnnotation = "hami.io/amd-cu-allocated"

// amdPlugin is the Allocate of AMD's device plugin (resource amd.com/gpu;
// gpumem and gpucores get no call):
//
//  1. GetPendingPod: the lock's holder, whatever it is, else the first
//     Pending pod of the node with bind-phase allocating; none: the error,
//     no write;
//  2. it remembers the pod's whole hami.io/amd-devices-allocated value,
//     reads the pod's own hami.io/amd-cu-allocated ("parse existing ..."),
//     and rebuilds the node's compute-unit map from every live pod's
//     hami.io/amd-cu-allocated (LIST the node's pods);
//  3. the first entry of the to-allocate key listing cards (empty entries
//     dropped): none, "device request not found"; a card count other than
//     the kubelet's, "device number not matched"; a card not the node's,
//     "no local GPU topology entry ..."; PATCH the key without it;
//  4. the first free compute units of each card, as many as the entry's
//     cores ("insufficient free CUs" when short), merged into the pod's
//     own record;
//  5. GET the node: hami.io/mutex.lock must be there ("lock is missing
//     before CU allocation commit") and held by this pod ("lock is owned
//     by ..."); PATCH the pod's hami.io/amd-cu-allocated;
//  6. GET the pod: once the to-allocate value no longer contains the whole
//     allocated value, which holds after the first erase, PATCH
//     bind-phase=success and release the lock. So the pod is done after its
//     first AMD container, and a second one finds no pod ("no binding pod
//     found") or the next lock holder.
//
// Any failure after step 1 PATCHes bind-phase=failed and releases the lock;
// an erased entry stays erased. Either bind-phase patch, when it fails,
// keeps the lock; the release is releaseSuffixLock (owner-checked; a legacy
// bare-time lock stays).
type amdPlugin struct{}

func (*amdPlugin) allocate(ctx context.Context, dp *devicePlugin, call allocateCall) error {
	pod, err := dp.pendingPod(ctx, devices.BindPhaseAllocating)
	if err != nil {
		return err
	}
	if err := dp.check(pod, call); err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		amdFinish(ctx, dp, pod, devices.BindPhaseFailed)
		return fmt.Errorf(format, args...)
	}
	if dp.simulatedFailure(pod) {
		return fail("simulated device failure")
	}
	whole := pod.Annotations[amd.AllocatedAnnotation]
	record := map[string]string{}
	if raw := strings.TrimSpace(pod.Annotations[amdCUAnnotation]); raw != "" {
		if err := json.Unmarshal([]byte(raw), &record); err != nil {
			return fail("parse existing %s: %w", amdCUAnnotation, err)
		}
	}
	used, err := amdUsedCUs(ctx, dp)
	if err != nil {
		return fail("rebuild CU allocation for node %s: %v", dp.node, err)
	}
	rest, served, err := eraseFirstListed(pod.Annotations[amd.ToAllocateAnnotation])
	switch {
	case err != nil || served == nil:
		return fail("device request not found")
	case len(served) != call.devices:
		return fail("device number not matched")
	}
	cards := make([]devices.Card, len(served))
	for i, d := range served {
		card, ok := dp.card(amd.RegisterAnnotation, d.UUID)
		if !ok {
			return fail("no local GPU topology entry for AMD SMI UUID %q", d.UUID)
		}
		cards[i] = card
	}
	if err := dp.patchAnnotations(ctx, pod, map[string]string{amd.ToAllocateAnnotation: rest}); err != nil {
		return fail("%v", err)
	}
	for i, d := range served {
		if cards[i].Cores <= 0 {
			return fail("invalid cu count for device %s: %d", d.UUID, cards[i].Cores)
		}
		ids, err := firstFreeCUs(used[d.UUID], int(cards[i].Cores), int(d.Cores))
		if err != nil {
			return fail("allocate cu for %s: %v", d.UUID, err)
		}
		if err := amdMergeCUs(record, d.UUID, ids, int(cards[i].Cores)); err != nil {
			return fail("%v", err)
		}
	}
	if err := amdCheckLockOwner(ctx, dp, pod); err != nil {
		return fail("%v", err)
	}
	data, err := json.Marshal(record)
	if err != nil {
		return fail("marshal %s: %v", amdCUAnnotation, err)
	}
	if err := dp.patchAnnotations(ctx, pod, map[string]string{amdCUAnnotation: string(data)}); err != nil {
		return fail("patch pod %s annotation: %v", amdCUAnnotation, err)
	}
	fresh, err := dp.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || strings.Contains(fresh.Annotations[amd.ToAllocateAnnotation], whole) {
		return nil
	}
	amdFinish(ctx, dp, pod, devices.BindPhaseSuccess)
	return nil
}

// amdFinish is the plugin's updatePodAnnotationsAndReleaseLock: PATCH
// bind-phase, and only when that worked release the lock the pod holds
// (the plugin's DefaultStrategy is HAMi's releaseBackoff).
func amdFinish(ctx context.Context, dp *devicePlugin, pod *corev1.Pod, phase string) {
	if err := dp.patchAnnotations(ctx, pod, map[string]string{devices.BindPhase: phase}); err != nil {
		klog.FromContext(ctx).Error(err, "Simulated AMD plugin cannot annotate the pod", "pod", klog.KObj(pod), "phase", phase)
		return
	}
	releaseSuffixLockLogged(ctx, dp, pod, releaseBackoff)
}

// amdCheckLockOwner is the plugin's validateNodeLockOwner.
func amdCheckLockOwner(ctx context.Context, dp *devicePlugin, pod *corev1.Pod) error {
	n, err := dp.client.Nodes().Get(ctx, dp.node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s before CU allocation commit: %w", dp.node, err)
	}
	value, ok := n.Annotations[devices.NodeLock]
	if !ok {
		return fmt.Errorf("node %s lock is missing before CU allocation commit", dp.node)
	}
	_, namespace, name, err := parseLock(value)
	if err != nil {
		return fmt.Errorf("parse node %s lock: %w", dp.node, err)
	}
	if namespace != pod.Namespace || name != pod.Name {
		return fmt.Errorf("node %s lock is owned by %s/%s, not %s/%s", dp.node, namespace, name, pod.Namespace, pod.Name)
	}
	return nil
}

// amdUsedCUs is the node's compute units in use by card, from the
// hami.io/amd-cu-allocated of every pod of the node that has not ended
// (LIST), the pod being admitted included.
func amdUsedCUs(ctx context.Context, dp *devicePlugin) (map[string]map[int]bool, error) {
	list, err := dp.client.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + dp.node})
	if err != nil {
		return nil, fmt.Errorf("list Pods: %w", err)
	}
	used := map[string]map[int]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		raw := p.Annotations[amdCUAnnotation]
		if raw == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var byCard map[string]string
		if err := json.Unmarshal([]byte(raw), &byCard); err != nil {
			return nil, fmt.Errorf("Pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		for uuid, ids := range byCard {
			set, err := parseIDList(ids)
			if err != nil {
				return nil, fmt.Errorf("Pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			if used[uuid] == nil {
				used[uuid] = map[int]bool{}
			}
			for id := range set {
				if used[uuid][id] {
					return nil, fmt.Errorf("CU allocation overlap on device %s CU %d", uuid, id)
				}
				used[uuid][id] = true
			}
		}
	}
	return used, nil
}

// firstFreeCUs takes the first n compute units of a card of total that are
// not in used, as an ID list ("0-3,8-11").
func firstFreeCUs(used map[int]bool, total, n int) (string, error) {
	if n <= 0 {
		return "", fmt.Errorf("n must be > 0")
	}
	var ids []int
	for id := 0; id < total && len(ids) < n; id++ {
		if !used[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) < n {
		return "", fmt.Errorf("insufficient free CUs: need=%d free=%d", n, len(ids))
	}
	return formatIDList(ids), nil
}

// amdMergeCUs adds the compute units given now on a card of total to the
// pod's earlier record of it, as the plugin ORs their bitmaps.
func amdMergeCUs(record map[string]string, uuid, given string, total int) error {
	old := strings.TrimSpace(record[uuid])
	if old == "" {
		record[uuid] = given
		return nil
	}
	earlier, err := parseIDList(old)
	if err != nil {
		return fmt.Errorf("decode existing pod cu allocation for %s: %w", uuid, err)
	}
	added, err := parseIDList(given)
	if err != nil {
		return fmt.Errorf("merge pod cu allocation for %s: %w", uuid, err)
	}
	for id := range earlier {
		if id >= total {
			return fmt.Errorf("decode existing pod cu allocation for %s: range out of bounds %q for totalCUs=%d", uuid, old, total)
		}
	}
	var ids []int
	for id := range total {
		switch {
		case earlier[id] && added[id]:
			return fmt.Errorf("merge pod cu allocation for %s: add delta contains allocated bits", uuid)
		case earlier[id] || added[id]:
			ids = append(ids, id)
		}
	}
	record[uuid] = formatIDList(ids)
	return nil
}

// parseIDList reads "0-3,8,10-11".
func parseIDList(s string) (map[int]bool, error) {
	out := map[int]bool{}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("bad CU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CU list %q", s)
			}
		}
		for id := a; id <= b; id++ {
			out[id] = true
		}
	}
	return out, nil
}

// formatIDList writes ascending ids as ranges.
func formatIDList(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(ids[i]))
		} else {
			parts = append(parts, strconv.Itoa(ids[i])+"-"+strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
