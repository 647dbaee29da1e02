package simnode

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// reportRunning writes the status the kubelet posts once every container
// has started: init containers completed, the others running and ready.
func (a *Agent) reportRunning(ctx context.Context, node *simNode, pod *corev1.Pod) error {
	now := metav1.Now()
	return a.reportStatus(ctx, node, pod, corev1.PodRunning, []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}, func(c *corev1.ContainerStatus) {
		c.Ready, c.Started = true, ptrTo(true)
		c.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
	}, func(c *corev1.ContainerStatus) {
		c.Ready, c.Started = true, ptrTo(false)
		c.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now}
	})
}

// reportStatus writes the pod's phase, conditions and start time, and the
// containers' and init containers' statuses as set makes them.
func (a *Agent) reportStatus(ctx context.Context, node *simNode, pod *corev1.Pod, phase corev1.PodPhase, conditions []corev1.PodCondition,
	set, setInit func(*corev1.ContainerStatus)) error {
	status := map[string]any{
		"phase":             phase,
		"startTime":         metav1.Now(),
		"hostIP":            a.hostIP(pod.Spec.NodeName),
		"conditions":        conditions,
		"containerStatuses": containerStatuses(pod, pod.Spec.Containers, set),
	}
	if len(pod.Spec.InitContainers) > 0 {
		status["initContainerStatuses"] = containerStatuses(pod, pod.Spec.InitContainers, setInit)
	}
	return patchStatus(ctx, node.kubelet, pod, status)
}

// reportFailed writes the status the kubelet posts when the device
// manager's Allocate fails during admission.
func (a *Agent) reportFailed(ctx context.Context, node *simNode, pod *corev1.Pod, cause error) error {
	return patchStatus(ctx, node.kubelet, pod, map[string]any{
		"phase":   corev1.PodFailed,
		"reason":  "UnexpectedAdmissionError",
		"message": fmt.Sprintf("Allocate failed due to %v, which is unexpected", cause),
		"hostIP":  a.hostIP(pod.Spec.NodeName),
	})
}

func containerStatuses(pod *corev1.Pod, containers []corev1.Container, set func(*corev1.ContainerStatus)) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(containers))
	for _, c := range containers {
		s := corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "sim://" + c.Image,
			ContainerID: "sim://" + string(pod.UID) + "/" + c.Name,
		}
		set(&s)
		out = append(out, s)
	}
	return out
}

func (a *Agent) hostIP(node string) string {
	n, err := a.nodes.Get(node)
	if err != nil {
		return ""
	}
	for _, addr := range n.Status.Addresses {
		if addr.Type == corev1.NodeInternalIP {
			return addr.Address
		}
	}
	return ""
}

func patchStatus(ctx context.Context, client corev1client.CoreV1Interface, pod *corev1.Pod, status map[string]any) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   status,
	})
	if err != nil {
		return err
	}
	_, err = client.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func ptrTo[T any](v T) *T { return &v }

// reportCreating writes the status the kubelet posts for a pod whose
// sandbox it cannot create yet (its claims failed to prepare): Pending,
// not ready, init containers (or else the containers) waiting
// PodInitializing or ContainerCreating.
func (a *Agent) reportCreating(ctx context.Context, node *simNode, pod *corev1.Pod) error {
	now := metav1.Now()
	waiting := func(reason string) func(*corev1.ContainerStatus) {
		return func(c *corev1.ContainerStatus) {
			c.Started, c.ContainerID, c.ImageID = ptrTo(false), "", ""
			c.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
		}
	}
	initialized, reason := corev1.ConditionTrue, "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		initialized, reason = corev1.ConditionFalse, "PodInitializing"
	}
	return a.reportStatus(ctx, node, pod, corev1.PodPending, []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: initialized, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: now},
	}, waiting(reason), waiting("PodInitializing"))
}
