package webhook

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// IgnoreValue is the value of devices.WebhookIgnoreLabel that keeps the
// webhook away from a namespace (the MutatingWebhookConfiguration's
// namespaceSelector). A pod's own label does not opt it out: a tenant could
// otherwise skip the device quota and defaults.
const IgnoreValue = "ignore"

// schedulerOwned reports whether the pod may be handed to c.SchedulerName:
// it names that scheduler already, or no scheduler, or it names
// default-scheduler and the webhook is configured to take those over (as
// HAMi's webhook decides). Pods that name any other scheduler belong to
// that scheduler and are left alone. (The API server fills in
// default-scheduler before admission, so an empty name is rare.)
func (c Config) schedulerOwned(pod *corev1.Pod) bool {
	switch pod.Spec.SchedulerName {
	case c.SchedulerName, "":
		return true
	case corev1.DefaultSchedulerName:
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
	// err, when set, is a value a vendor's defaulting cannot accept (a
	// memory percentage above 100, a fractional count, ...). HAMi answers
	// it with an admission error (HTTP 500) rather than a denial.
	err error
	// refusal, when not empty, is why the pod must be refused: one
	// sentence that starts with HAMi's words and tells the user what to
	// change.
	refusal string
	// rule names the rule that refused, a label value of the admissions
	// metric.
	rule string
}

// mutatePod applies every vendor's container defaulting and the pod-level
// rules to pod, in place, in the order of HAMi's webhook:
//   - each container, init containers first, goes through every vendor's
//     Default (DefaultInPod for a devices.PodDefaulter); a value a vendor
//     cannot accept stops here (m.err). A vendor
//     with a runtime class gives it to the pod (when the pod names none)
//     as soon as one container asks for the vendor's devices;
//   - a pod that asks for a device anywhere and has a privileged container
//     anywhere is refused, naming the first privileged container (init
//     containers first): a privileged container sees every device of the
//     node and escapes the sharing limits;
//   - a pod that asks for a device and already names a node is refused: it
//     would skip the scheduler that assigns its cards;
//   - otherwise a pod that asks for a device gets c.SchedulerName.
//
// The pod is then parsed as the scheduler will parse it, so that a request
// the scheduler cannot read is refused now rather than left Pending.
//
// A pod that asks for nothing may still have been changed (env a vendor
// adds to every container, e.g. NVIDIA's overwriteEnv and core policy).
func (c Config) mutatePod(pod *corev1.Pod) mutation {
	var m mutation
	var asked []string
	for _, ctr := range devices.Containers(pod) {
		for _, v := range c.Registry.Vendors() {
			asks, err := defaultContainer(v, pod, ctr)
			if err != nil {
				return mutation{rule: resultInvalid, err: fmt.Errorf("container %s: %w; fix the value in the container's resources", ctr.Name, err)}
			}
			if !asks {
				continue
			}
			m.asks = true
			if !slices.Contains(asked, v.Name()) {
				asked = append(asked, v.Name())
			}
			if rc, ok := v.(devices.RuntimeClassVendor); ok && pod.Spec.RuntimeClassName == nil && rc.RuntimeClassName() != "" {
				name := rc.RuntimeClassName()
				pod.Spec.RuntimeClassName = &name
			}
		}
	}
	if !m.asks {
		return m
	}
	if name, ok := firstPrivileged(pod); ok {
		return mutation{rule: resultPrivileged, refusal: fmt.Sprintf("container %s is privileged; a privileged container sees every device on the node and escapes the sharing limits, so a pod that asks for shared %s devices must have none: remove securityContext.privileged or the device request",
			name, strings.Join(asked, "/"))}
	}
	if pod.Spec.NodeName != "" {
		return mutation{rule: resultNodeName, refusal: fmt.Sprintf("pod has node assigned: spec.nodeName %q skips %s, which must assign the pod's devices; remove spec.nodeName and pick the node with a nodeSelector or node affinity instead",
			pod.Spec.NodeName, c.SchedulerName)}
	}
	pod.Spec.SchedulerName = c.SchedulerName
	reqs, _, err := c.Registry.ParsePod(pod)
	if unservable, ok := errors.AsType[*devices.UnservableError](err); ok {
		return mutation{rule: resultUnservable, refusal: unservable.Error()}
	}
	if err != nil {
		return mutation{rule: resultInvalid, refusal: fmt.Sprintf("the pod's device request cannot be read (%v); fix the named resource or annotation", err)}
	}
	m.requests = reqs
	return m
}

// defaultContainer applies the vendor's admission defaults to ctr, a
// container of pod: DefaultInPod for a vendor whose defaults read or change
// the pod (devices.PodDefaulter, e.g. Ascend's vnpu-mode and runtime
// class), Default otherwise.
func defaultContainer(v devices.Vendor, pod *corev1.Pod, ctr *corev1.Container) (bool, error) {
	if pd, ok := v.(devices.PodDefaulter); ok {
		return pd.DefaultInPod(pod, ctr)
	}
	return v.Default(ctr)
}

// firstPrivileged returns the name of the pod's first privileged
// container, init containers first.
func firstPrivileged(pod *corev1.Pod) (string, bool) {
	for _, ctr := range devices.Containers(pod) {
		if privileged(ctr) {
			return ctr.Name, true
		}
	}
	return "", false
}

func privileged(ctr *corev1.Container) bool {
	sc := ctr.SecurityContext
	return sc != nil && sc.Privileged != nil && *sc.Privileged
}
