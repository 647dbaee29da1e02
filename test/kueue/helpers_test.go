package kueue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/cardfit"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

const (
	groupLabel = "kueue.e2e.hami.io/group"
	queueLabel = "kueue.x-k8s.io/queue-name"
	waitLimit  = time.Minute
	// checkName is the AdmissionCheck of the card-fit controller.
	checkName = "hami-card-fit"
)

func kueueGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: cardfit.Group, Version: "v1beta2", Resource: resource}
}

// env is one test's namespace, node group, ClusterQueue and LocalQueue,
// all named after the test.
type env struct {
	t   testing.TB
	ctx context.Context
	ns  string
	dyn dynamic.Interface
}

func newEnv(t testing.TB, name string) *env {
	t.Helper()
	if skipped != "" {
		t.Skip(skipped)
	}
	dyn, err := dynamic.NewForConfig(controlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: t.Context(), ns: name, dyn: dyn}
	if _, err := controlPlane.Client.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// addNodes creates the test's nodes from a simnode spec.
func (e *env) addNodes(spec string) {
	e.t.Helper()
	specs, err := simnode.ParseSpecs(spec)
	if err != nil {
		e.t.Fatal(err)
	}
	var nodes []*corev1.Node
	for _, s := range specs {
		nodes = append(nodes, s.Build(e.ns, len(nodes))...)
	}
	for _, n := range nodes {
		n.Labels[groupLabel] = e.ns
	}
	if err := simnode.Create(e.ctx, controlPlane.Client, nodes); err != nil {
		e.t.Fatal(err)
	}
}

// create creates a Kueue object from its fields.
func (e *env) create(resource string, namespaced bool, obj map[string]any) {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(cardfit.Group + "/v1beta2")
	var err error
	if namespaced {
		_, err = e.dyn.Resource(kueueGVR(resource)).Namespace(e.ns).Create(e.ctx, u, metav1.CreateOptions{FieldValidation: "Strict"})
	} else {
		_, err = e.dyn.Resource(kueueGVR(resource)).Create(e.ctx, u, metav1.CreateOptions{FieldValidation: "Strict"})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("create %s %s: %v", resource, u.GetName(), err)
	}
}

// queue creates the ResourceFlavor and the card-fit AdmissionCheck (shared),
// the test's ClusterQueue with quota for cards x 40 GiB cards (HAMi's
// resource transformations: nvidia.com/gpu shares, total MiB and total
// cores) using the admission checks named, and its LocalQueue.
func (e *env) queue(cards int, checks ...string) {
	e.t.Helper()
	e.create("resourceflavors", false, map[string]any{"kind": "ResourceFlavor", "metadata": map[string]any{"name": "hami-cards"}})
	e.create("admissionchecks", false, map[string]any{"kind": "AdmissionCheck", "metadata": map[string]any{"name": checkName},
		"spec": map[string]any{"controllerName": cardfit.ControllerName}})
	spec := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: e.ns}},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"nvidia.com/gpu", "nvidia.com/total-gpumem", "nvidia.com/total-gpucores"},
			"flavors": []any{map[string]any{"name": "hami-cards", "resources": []any{
				map[string]any{"name": "nvidia.com/gpu", "nominalQuota": fmt.Sprint(cards * 10)},
				map[string]any{"name": "nvidia.com/total-gpumem", "nominalQuota": fmt.Sprint(cards * 40960)},
				map[string]any{"name": "nvidia.com/total-gpucores", "nominalQuota": fmt.Sprint(cards * 100)},
			}}},
		}},
	}
	if len(checks) > 0 {
		var rules []any
		for _, c := range checks {
			rules = append(rules, map[string]any{"name": c})
		}
		spec["admissionChecksStrategy"] = map[string]any{"admissionChecks": rules}
	}
	e.create("clusterqueues", false, map[string]any{"kind": "ClusterQueue", "metadata": map[string]any{"name": e.ns}, "spec": spec})
	e.create("localqueues", true, map[string]any{"kind": "LocalQueue", "metadata": map[string]any{"name": "gpus", "namespace": e.ns},
		"spec": map[string]any{"clusterQueue": e.ns}})
	e.t.Cleanup(func() {
		_ = e.dyn.Resource(kueueGVR("clusterqueues")).Delete(context.Background(), e.ns, metav1.DeleteOptions{})
	})
	e.waitQueueActive()
}

// waitQueueActive waits until Kueue says the ClusterQueue is active (its
// checks' controllers answer).
func (e *env) waitQueueActive() {
	e.t.Helper()
	e.eventually("ClusterQueue "+e.ns+" active", func() (bool, string) {
		u, err := e.dyn.Resource(kueueGVR("clusterqueues")).Get(e.ctx, e.ns, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var cq struct {
			Status struct {
				Conditions []metav1.Condition `json:"conditions"`
			} `json:"status"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cq); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(cq.Status.Conditions, "Active")
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", cq.Status.Conditions)
	})
}

// card is one container's NVIDIA request.
type card struct{ count, memory, cores int64 }

func (c card) resources() corev1.ResourceRequirements {
	l := corev1.ResourceList{nvidia.DefaultCountName: *resource.NewQuantity(c.count, resource.DecimalSI)}
	if c.memory > 0 {
		l[nvidia.DefaultMemoryName] = *resource.NewQuantity(c.memory, resource.DecimalSI)
	}
	if c.cores > 0 {
		l[nvidia.DefaultCoresName] = *resource.NewQuantity(c.cores, resource.DecimalSI)
	}
	return corev1.ResourceRequirements{Limits: l, Requests: l.DeepCopy()}
}

// podSpec asks c on the test's nodes.
func (e *env) podSpec(c card) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		NodeSelector:  map[string]string{groupLabel: e.ns},
		Containers:    []corev1.Container{{Name: "main", Image: "cuda:sim", Resources: c.resources()}},
	}
}

// job creates a Job of n pods asking c, in the test's LocalQueue.
func (e *env) job(name string, n int32, c card) *batchv1.Job {
	e.t.Helper()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{queueLabel: "gpus"}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(n), Completions: ptr.To(n),
			Template: corev1.PodTemplateSpec{Spec: e.podSpec(c)},
		},
	}
	j, err := controlPlane.Client.BatchV1().Jobs(e.ns).Create(e.ctx, j, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create job %s: %v", name, err)
	}
	return j
}

// pod creates a plain pod asking c; queued, it goes through Kueue's pod
// integration.
func (e *env) pod(name string, c card, queued bool) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{}}, Spec: e.podSpec(c)}
	if queued {
		p.Labels[queueLabel] = "gpus"
	}
	p, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", name, err)
	}
	return p
}

func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
		ok, detail := cond()
		last = detail
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("%s: not within %s (last: %s)", what, waitLimit, last)
	}
}

// waitRunning waits until n pods matching selector run, and returns them.
func (e *env) waitRunning(selector string, n int) []corev1.Pod {
	e.t.Helper()
	var pods []corev1.Pod
	e.eventually(fmt.Sprintf("%d pods %s running", n, selector), func() (bool, string) {
		list, err := controlPlane.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		pods = list.Items
		running := 0
		var states []string
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			states = append(states, p.Name+":"+string(p.Status.Phase))
		}
		return running == n, strings.Join(states, " ")
	})
	return pods
}

// workloadState is one workload as a watch event shows it.
type workloadState struct {
	name     string
	owner    string
	admitted bool
	check    map[string]any // the card-fit check's state entry
}

// sentBack reports whether the check's state shows a Retry: the state
// itself, or the retries Kueue counts once it has requeued the workload.
func (s workloadState) sentBack() bool {
	if s.check == nil {
		return false
	}
	retries, _, _ := unstructured.NestedInt64(s.check, "retryCount")
	return s.check["state"] == "Retry" || retries > 0
}

func stateOf(u *unstructured.Unstructured) workloadState {
	s := workloadState{name: u.GetName()}
	for _, o := range u.GetOwnerReferences() {
		s.owner = o.Name
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Admitted" && m["status"] == "True" {
			s.admitted = true
		}
	}
	checks, _, _ := unstructured.NestedSlice(u.Object, "status", "admissionChecks")
	for _, c := range checks {
		if m, _ := c.(map[string]any); m["name"] == checkName {
			s.check = m
		}
	}
	return s
}

// watchWorkloads watches the namespace's workloads from now on.
func (e *env) watchWorkloads() watch.Interface {
	e.t.Helper()
	w, err := e.dyn.Resource(kueueGVR("workloads")).Namespace(e.ns).Watch(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
	return w
}

// until reads watch events of the workload owned by owner until cond
// holds for one, and returns that state; fail, when it holds for a state
// first, fails the test.
func (e *env) until(w watch.Interface, owner, what string, cond, fail func(workloadState) bool) workloadState {
	e.t.Helper()
	timeout := time.After(waitLimit)
	var last workloadState
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				e.t.Fatalf("%s: watch closed (last %+v)", what, last)
			}
			u, isU := ev.Object.(*unstructured.Unstructured)
			if !isU {
				continue
			}
			s := stateOf(u)
			if s.owner != owner {
				continue
			}
			last = s
			if fail != nil && fail(s) {
				e.t.Fatalf("%s: workload %s went %+v first", what, s.name, s)
			}
			if cond(s) {
				return s
			}
		case <-timeout:
			e.t.Fatalf("%s: not within %s (last %+v)", what, waitLimit, last)
		}
	}
}

func checkIs(state string) func(workloadState) bool {
	return func(s workloadState) bool { return s.check != nil && s.check["state"] == state }
}

func admitted(s workloadState) bool { return s.admitted }
