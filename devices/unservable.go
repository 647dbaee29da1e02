package devices

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// UnservableError is a request that the scheduler could place but that the
// vendor's device plugin, as it is published, cannot serve on the node: a
// shape it refuses at Allocate (e.g. two MLU containers for Cambricon's
// plugin), or one whose hand-over it never completes. A vendor's ParsePod
// returns it so that the webhook refuses the pod with the reason and the
// scheduler keeps it Pending with the same reason, rather than placing a
// pod that would fail on the node or leave the node locked.
type UnservableError struct {
	// Plugin names the device plugin and the version whose behaviour the
	// rule follows, e.g. "cambricon-k8s-device-plugin v2.0.23".
	Plugin string
	// Reason says what the plugin cannot serve and what to change.
	Reason string
}

func (e *UnservableError) Error() string {
	return fmt.Sprintf("%s (the node's device plugin, %s, cannot serve it)", e.Reason, e.Plugin)
}

// ContainersAsking names the pod's containers whose limits ask a positive
// amount of one of the resources (the kubelet calls device plugins for
// limits only), init containers and regular ones apart.
func ContainersAsking(pod *corev1.Pod, resources ...corev1.ResourceName) (inits, regular []string) {
	asks := func(c *corev1.Container) bool {
		for _, r := range resources {
			if q, ok := c.Resources.Limits[r]; ok && r != "" && q.Sign() > 0 {
				return true
			}
		}
		return false
	}
	for i := range pod.Spec.InitContainers {
		if asks(&pod.Spec.InitContainers[i]) {
			inits = append(inits, pod.Spec.InitContainers[i].Name)
		}
	}
	for i := range pod.Spec.Containers {
		if asks(&pod.Spec.Containers[i]) {
			regular = append(regular, pod.Spec.Containers[i].Name)
		}
	}
	return inits, regular
}

// OneDeviceContainer is the rule of the plugins that serve one container a
// pod (they declare the pod served after its first one): at most one
// container, init containers counted, asks the resource.
func OneDeviceContainer(pod *corev1.Pod, plugin, what string, resource corev1.ResourceName) error {
	inits, regular := ContainersAsking(pod, resource)
	if all := append(inits, regular...); len(all) > 1 {
		return &UnservableError{Plugin: plugin, Reason: fmt.Sprintf(
			"containers %s each ask %s; the plugin serves one %s container a pod (it marks the pod served after the first), so ask in one container only",
			strings.Join(all, ", "), resource, what)}
	}
	return nil
}
