package simnode

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices/enflame"
)

// gcusharePluginVersion is the Enflame device plugin the model follows.
const gcusharePluginVersion = "EnflameTechnology/gcushare ee04a65 (v3.6.5-16, DRS)"

// gcusharePlugin is the Allocate of Enflame's gcushare plugin for DRS
// partitions (resource enflame.com/drs-gcu; gcu-memory and gcu-core get no
// call):
//
//  1. LIST the node's Pending pods; the candidates have
//     enflame.com/gcu-assigned-time and ask drs-gcu in a regular container,
//     oldest assigned-time first;
//  2. in each, the first regular container, in spec order, whose drs-gcu
//     limit equals the kubelet's device count and whose record in
//     assigned-containers is not allocated; none in any pod: "invalid
//     allocation request: unable to find pod request enflame.com/drs-gcu:
//     N". Init containers are never served: an init container's call takes
//     a regular container's record;
//  3. PATCH assigned-containers with the record allocated, and
//     enflame.com/gcu-assigned "true" once no regular drs-gcu container is
//     left;
//  4. every container gets the pod's gcu-assigned-minor (HAMi writes the
//     first container's card): missing, "pod(...) has not been assigned
//     device", after the patch.
//
// It takes no lock, never sets bind-phase and never reads
// hami.io/enflame-vgpu-devices-allocated.
type gcusharePlugin struct{}

func (*gcusharePlugin) allocate(ctx context.Context, dp *devicePlugin, call allocateCall) error {
	list, err := dp.client.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + dp.node + ",status.phase=Pending"})
	if err != nil {
		return err
	}
	candidates := gcushareCandidates(list.Items)
	for _, pod := range candidates {
		records, err := gcushareRecords(pod)
		if err != nil {
			return err
		}
		name, ok := gcushareNextContainer(pod, records, call.devices)
		if !ok {
			continue
		}
		if err := dp.check(pod, call); err != nil {
			return err
		}
		if dp.simulatedFailure(pod) {
			return fmt.Errorf("simulated device failure")
		}
		return gcushareServe(ctx, dp, pod, records, name)
	}
	return fmt.Errorf("invalid allocation request: unable to find pod request %s: %d", enflame.DefaultDRSName, call.devices)
}

// gcushareCandidates is step 1.
func gcushareCandidates(pods []corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if _, ok := p.Annotations[enflame.AssignedTimeAnnotation]; !ok {
			continue
		}
		asks := false
		for _, c := range p.Spec.Containers {
			asks = asks || positive(&c, enflame.DefaultDRSName)
		}
		if asks {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Compare(gcushareTime(a), gcushareTime(b))
	})
	return out
}

func gcushareTime(p *corev1.Pod) uint64 {
	t, err := strconv.ParseUint(p.Annotations[enflame.AssignedTimeAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return t
}

// gcushareRecords decodes assigned-containers (absent: none).
func gcushareRecords(pod *corev1.Pod) (map[string]map[string]any, error) {
	records := map[string]map[string]any{}
	raw, ok := pod.Annotations[enflame.AssignedContainersAnnotion]
	if !ok {
		return records, nil
	}
	if err := json.Unmarshal([]byte(raw), &records); err != nil {
		return nil, fmt.Errorf("pod %s/%s: annotation %s: %w", pod.Namespace, pod.Name, enflame.AssignedContainersAnnotion, err)
	}
	return records, nil
}

// gcushareNextContainer is step 2 within one pod.
func gcushareNextContainer(pod *corev1.Pod, records map[string]map[string]any, want int) (string, bool) {
	for _, c := range pod.Spec.Containers {
		if quantity(&c, enflame.DefaultDRSName) != want || want == 0 {
			continue
		}
		if done, _ := records[c.Name]["allocated"].(bool); done {
			continue
		}
		return c.Name, true
	}
	return "", false
}

// gcushareServe is steps 3 and 4.
func gcushareServe(ctx context.Context, dp *devicePlugin, pod *corev1.Pod, records map[string]map[string]any, name string) error {
	if records[name] == nil {
		records[name] = map[string]any{}
	}
	records[name]["allocated"] = true
	left := false
	for _, c := range pod.Spec.Containers {
		if !positive(&c, enflame.DefaultDRSName) {
			continue
		}
		if done, _ := records[c.Name]["allocated"].(bool); !done {
			left = true
		}
	}
	assigned := pod.Annotations[enflame.AssignedAnnotation]
	if !left {
		assigned = "true"
	}
	data, err := json.Marshal(records)
	if err != nil {
		return err
	}
	if err := dp.patchAnnotations(ctx, pod, map[string]string{
		enflame.AssignedContainersAnnotion: string(data), enflame.AssignedAnnotation: assigned,
	}); err != nil {
		return err
	}
	if pod.Annotations[enflame.AssignedMinorAnnotation] == "" {
		return fmt.Errorf("pod(name: %s, uuid: %s) has not been assigned device", pod.Name, pod.UID)
	}
	return nil
}
