package cardfit

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ControllerName is the AdmissionCheck spec.controllerName this controller
// answers for.
const ControllerName = "hami.io/card-fit"

// The pod annotations the check adds to every pod set it passes (through
// the check's podSetUpdates, which Kueue merges into the pods it starts),
// so that the promise of a workload is released as its pods are placed.
const (
	WorkloadAnnotation = "hami.io/kueue-workload"
	PodSetAnnotation   = "hami.io/kueue-podset"
)

// Group is Kueue's API group.
const Group = "kueue.x-k8s.io"

// Versions are Kueue's API versions the controller speaks, preferred
// first: v1beta2 (Kueue 0.15 and later), then v1beta1 (0.9 to 0.17). The
// fields the controller reads and writes have the same paths in both.
var Versions = []string{"v1beta2", "v1beta1"}

// Resources of Kueue's group.
const (
	workloadsResource       = "workloads"
	admissionChecksResource = "admissionchecks"
	clusterQueuesResource   = "clusterqueues"
)

// The states of an admission check (Kueue's CheckState).
const (
	statePending  = "Pending"
	stateReady    = "Ready"
	stateRetry    = "Retry"
	stateRejected = "Rejected"
)

// Kueue's workload condition types.
const (
	condQuotaReserved = "QuotaReserved"
	condAdmitted      = "Admitted"
	condFinished      = "Finished"
	condEvicted       = "Evicted"
)

// workload is the part of Kueue's Workload the controller reads; the
// fields have the same names in v1beta1 and v1beta2.
type workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		PodSets []podSet `json:"podSets,omitempty"`
		Active  *bool    `json:"active,omitempty"`
	} `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
		Admission  *struct {
			ClusterQueue      string `json:"clusterQueue,omitempty"`
			PodSetAssignments []struct {
				Name  string `json:"name"`
				Count *int32 `json:"count,omitempty"`
			} `json:"podSetAssignments,omitempty"`
		} `json:"admission,omitempty"`
		AdmissionChecks []checkState `json:"admissionChecks,omitempty"`
	} `json:"status"`
}

// podSet is one of a workload's pod sets: count pods of one template.
type podSet struct {
	Name     string                 `json:"name"`
	Count    int32                  `json:"count"`
	MinCount *int32                 `json:"minCount,omitempty"`
	Template corev1.PodTemplateSpec `json:"template"`
}

// checkState is a workload's state of one admission check.
type checkState struct {
	Name                string         `json:"name"`
	State               string         `json:"state"`
	Message             string         `json:"message"`
	LastTransitionTime  metav1.Time    `json:"lastTransitionTime"`
	PodSetUpdates       []podSetUpdate `json:"podSetUpdates,omitempty"`
	RequeueAfterSeconds *int32         `json:"requeueAfterSeconds,omitempty"`
	RetryCount          *int32         `json:"retryCount,omitempty"`
}

// podSetUpdate is what an admission check adds to a pod set's pods.
type podSetUpdate struct {
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// admissionCheck is the part of Kueue's AdmissionCheck the controller
// reads.
type admissionCheck struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		ControllerName string `json:"controllerName"`
	} `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status"`
}

// decode converts an unstructured Kueue object into one of the local
// types, ignoring the fields they lack.
func decode(obj any, into any) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("not an unstructured object: %T", obj)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// checkNamed returns the workload's state of the first of the named
// checks it carries.
func (w *workload) checkNamed(names map[string]bool) *checkState {
	for i := range w.Status.AdmissionChecks {
		if names[w.Status.AdmissionChecks[i].Name] {
			return &w.Status.AdmissionChecks[i]
		}
	}
	return nil
}

func (w *workload) condition(t string) bool {
	return meta.IsStatusConditionTrue(w.Status.Conditions, t)
}

// active reports whether the workload may run (spec.active unset or true).
func (w *workload) active() bool { return w.Spec.Active == nil || *w.Spec.Active }

// since is when the condition last changed (zero when absent).
func (w *workload) since(t string) time.Time {
	if c := meta.FindStatusCondition(w.Status.Conditions, t); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// counts returns how many pods each pod set runs: the count Kueue's quota
// reservation assigned (partial admission may lower it), else the spec's.
func (w *workload) counts() []int32 {
	out := make([]int32, len(w.Spec.PodSets))
	for i, ps := range w.Spec.PodSets {
		out[i] = ps.Count
		if w.Status.Admission == nil {
			continue
		}
		for _, a := range w.Status.Admission.PodSetAssignments {
			if a.Name == ps.Name && a.Count != nil {
				out[i] = *a.Count
			}
		}
	}
	return out
}

// pod builds one pod of the pod set as the API server would admit it
// from the template, in the workload's namespace.
func (w *workload) pod(ps *podSet, i int) *corev1.Pod {
	t := ps.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	pod.Namespace = w.Namespace
	pod.Name = fmt.Sprintf("%s-%s-%d", w.Name, ps.Name, i)
	return pod
}

// gvr is a Kueue resource at version.
func gvr(version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: version, Resource: resource}
}
