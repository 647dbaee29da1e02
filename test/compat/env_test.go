package compat

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// groupLabel ties a test's pods to its nodes.
const groupLabel = "compat.hami.io/group"

// waitLimit bounds every wait; an old API server on 2 loaded cores is
// slower than the in-process one of the e2e suite.
const waitLimit = time.Minute

// env is one test's namespace and node group, both named after it.
type env struct {
	t  *testing.T
	ns string
}

func newEnv(t *testing.T, name, nodes string) *env {
	t.Helper()
	needsCluster(t)
	e := &env{t: t, ns: name}
	if _, err := controlPlane.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	specs, err := simnode.ParseSpecs(nodes)
	if err != nil {
		t.Fatal(err)
	}
	var built []*corev1.Node
	for _, s := range specs {
		built = append(built, s.Build(name, len(built))...)
	}
	for _, n := range built {
		n.Labels[groupLabel] = name
	}
	if err := simnode.Create(t.Context(), controlPlane.Client, built); err != nil {
		t.Fatal(err)
	}
	return e
}

// gpu is one container's NVIDIA request; zero cards: no device.
type gpu struct {
	cards, memory, cores int64
}

// pod is a pod on the test's nodes that names no scheduler: the webhook
// routes it.
func (e *env) pod(name string, containers ...gpu) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec:       corev1.PodSpec{NodeSelector: map[string]string{groupLabel: e.ns}},
	}
	for i, g := range containers {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "cuda:sim"}
		if g.cards > 0 {
			c.Resources.Limits = corev1.ResourceList{nvidia.DefaultCountName: *resource.NewQuantity(g.cards, resource.DecimalSI)}
			if g.memory > 0 {
				c.Resources.Limits[nvidia.DefaultMemoryName] = *resource.NewQuantity(g.memory, resource.DecimalSI)
			}
			if g.cores > 0 {
				c.Resources.Limits[nvidia.DefaultCoresName] = *resource.NewQuantity(g.cores, resource.DecimalSI)
			}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	return p
}

func (e *env) create(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	created, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return created
}

// eventually polls cond until it holds, failing the test after waitLimit
// with what cond last said.
func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.t.Context(), 200*time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("%s: not within %s; last: %s", what, waitLimit, last)
	}
}

func (e *env) waitRunning(name string) *corev1.Pod {
	e.t.Helper()
	var p *corev1.Pod
	e.eventually("pod "+name+" running", func() (bool, string) {
		var err error
		if p, err = controlPlane.Client.CoreV1().Pods(e.ns).Get(e.t.Context(), name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %s on %q, conditions %v", p.Status.Phase, p.Spec.NodeName, p.Status.Conditions)
	})
	return p
}

// waitUnschedulable waits for a FailedScheduling event of the pod and
// returns its message; the pod must still be unbound.
func (e *env) waitUnschedulable(name string) string {
	e.t.Helper()
	var message string
	e.eventually("FailedScheduling event for "+name, func() (bool, string) {
		list, err := controlPlane.Client.CoreV1().Events(e.ns).List(e.t.Context(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + name + ",reason=FailedScheduling",
		})
		if err != nil || len(list.Items) == 0 {
			return false, fmt.Sprint("no event ", err)
		}
		message = list.Items[len(list.Items)-1].Message
		return true, message
	})
	p, err := controlPlane.Client.CoreV1().Pods(e.ns).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		e.t.Fatalf("pod %s was reported unschedulable but is bound to %s", name, p.Spec.NodeName)
	}
	return message
}

// checkAccounting fails the test if a card of the test's nodes holds more
// than it has, by the pods' allocated annotations, and returns the cards.
func (e *env) checkAccounting() []allocation.CardUse {
	e.t.Helper()
	nodes, err := controlPlane.Client.CoreV1().Nodes().List(e.t.Context(), metav1.ListOptions{LabelSelector: groupLabel + "=" + e.ns})
	if err != nil {
		e.t.Fatal(err)
	}
	pods, err := controlPlane.Client.CoreV1().Pods(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	vendors, err := clustervendors.FromConfigs(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	r := allocation.Read(vendors, nodes.Items, pods.Items)
	for _, p := range r.PodProblems {
		e.t.Errorf("accounting: %s", p)
	}
	for _, o := range allocation.Overcommitments(r.Cards) {
		e.t.Errorf("over-committed: %s", o)
	}
	return r.Cards
}

func execOutput(binary string, args ...string) (string, error) {
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
