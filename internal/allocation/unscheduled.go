package allocation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Unscheduled names the pods that ask for cards of the vendors but were
// left to default-scheduler, which cannot assign them: they were created
// before the webhook that routes them was registered, or in a namespace
// it does not see. Pending, they wait forever for the share resources no
// node advertises; bound, they hold no card while using one. A pod that
// names another scheduler (Volcano, a second profile) is its choice and is
// not listed; terminated pods are not either.
func Unscheduled(vendors []devices.Vendor, pods []corev1.Pod) []string {
	var out []string
	for i := range pods {
		p := &pods[i]
		if p.Spec.SchedulerName != corev1.DefaultSchedulerName || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if _, handed := p.Annotations[devices.BindPhase]; handed || !asksForCards(vendors, p) {
			continue
		}
		state := "is pending"
		if p.Spec.NodeName != "" {
			state = "runs on " + p.Spec.NodeName + " with no card assigned"
		}
		out = append(out, fmt.Sprintf("%s/%s asks for devices but names %s, which does not assign them, and %s: it was created before the webhook was ready, or in a namespace the webhook does not see; recreate it",
			p.Namespace, p.Name, corev1.DefaultSchedulerName, state))
	}
	slices.Sort(out)
	return out
}
