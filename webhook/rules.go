package webhook

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// IgnoreValue is the value of devices.WebhookIgnoreLabel that keeps the
// webhook away from a pod (and, through the MutatingWebhookConfiguration's
// namespaceSelector, from a namespace).
const IgnoreValue = "ignore"

// ignored reports whether the pod opted out of the webhook.
func ignored(pod *corev1.Pod) bool {
	return pod.Labels[devices.WebhookIgnoreLabel] == IgnoreValue
}

// schedulerOwned reports whether the pod may be handed to c.SchedulerName:
// it names that scheduler already, or it names default-scheduler (or none)
// and the webhook is configured to take those over. Pods that name any
// other scheduler belong to that scheduler and are left alone.
func (c Config) schedulerOwned(pod *corev1.Pod) bool {
	switch pod.Spec.SchedulerName {
	case c.SchedulerName:
		return true
	case "", corev1.DefaultSchedulerName:
		return c.TakeOverDefaultScheduler
	}
	return false
}

// mutation is the result of applying the rules to one pod.
type mutation struct {
	// asks is true when a container asks for a managed device.
	asks bool
	// requests are the pod's parsed requests, index-aligned with the
	// registry's vendors; set when asks is true.
	requests []devices.PodRequest
	// refusal, when not empty, is why the pod must be refused: one
	// sentence that tells the user what to change.
	refusal string
	// rule names the rule that refused, a label value of the admissions
	// metric.
	rule string
}

// mutatePod applies every vendor's container defaulting and the pod-level
// rules to pod, in place:
//   - a container value a vendor rejects (a fractional card count, a
//     memory percentage above 100, ...) refuses the pod;
//   - a privileged container that asks for a device refuses the pod: it
//     sees every device of the node and escapes the sharing limits;
//   - a pod that asks for a device and already names a node refuses: it
//     would skip the scheduler that assigns its cards;
//   - otherwise a pod that asks for a device gets c.SchedulerName.
//
// The pod is then parsed as the scheduler will parse it, so that a request
// the scheduler cannot read is refused now rather than left Pending.
func (c Config) mutatePod(pod *corev1.Pod) mutation {
	var m mutation
	for _, ctr := range devices.Containers(pod) {
		var asked []string
		for _, v := range c.Registry.Vendors() {
			asks, err := v.Default(ctr)
			if err != nil {
				return mutation{rule: resultInvalid, refusal: fmt.Sprintf("container %q: %v; fix the value in the container's resources", ctr.Name, err)}
			}
			if asks {
				asked = append(asked, v.Name())
			}
		}
		if len(asked) == 0 {
			continue
		}
		m.asks = true
		if privileged(ctr) {
			return mutation{rule: resultPrivileged, refusal: fmt.Sprintf("container %q is privileged and asks for shared %s devices, but a privileged container sees every device on the node and escapes the sharing limits; remove securityContext.privileged or the device request",
				ctr.Name, strings.Join(asked, "/"))}
		}
	}
	if !m.asks {
		return m
	}
	if pod.Spec.NodeName != "" {
		return mutation{rule: resultNodeName, refusal: fmt.Sprintf("pod sets spec.nodeName %q and so skips %s, which must assign its devices; remove spec.nodeName and pick the node with a nodeSelector or node affinity instead",
			pod.Spec.NodeName, c.SchedulerName)}
	}
	pod.Spec.SchedulerName = c.SchedulerName
	reqs, _, err := c.Registry.ParsePod(pod)
	if err != nil {
		return mutation{rule: resultInvalid, refusal: fmt.Sprintf("the pod's device request cannot be read (%v); fix the named resource or annotation", err)}
	}
	m.requests = reqs
	return m
}

func privileged(ctr *corev1.Container) bool {
	sc := ctr.SecurityContext
	return sc != nil && sc.Privileged != nil && *sc.Privileged
}
