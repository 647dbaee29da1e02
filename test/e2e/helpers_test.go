package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

const (
	// groupLabel ties a test's pods to its nodes.
	groupLabel = "e2e.hami.io/group"
	// waitLimit bounds every wait for the cluster to converge; things
	// usually take well under a few seconds.
	waitLimit = 30 * time.Second
)

// env is one test's slice of the shared cluster: a namespace and a node
// group, both named after the test.
type env struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	group string
	// vendors are those the scheduler runs with, whose cards
	// checkAccounting reads; nil is its built-in default, NVIDIA.
	vendors []devices.Vendor
}

// newEnv creates the test's namespace, named after the test (with a
// suffix when the test runs again in the same process, as with -count).
// group names the test's nodes and is the value of groupLabel on them.
func newEnv(t *testing.T, name string) *env {
	t.Helper()
	for run := 1; ; run++ {
		ns := name
		if run > 1 {
			ns = fmt.Sprintf("%s-%d", name, run)
		}
		_, err := controlPlane.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		switch {
		case err == nil:
			return &env{t: t, ctx: t.Context(), ns: ns, group: ns}
		case !apierrors.IsAlreadyExists(err) || run >= 100:
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
}

// addNodes creates the test's nodes from a gpunode spec; mutate, if set,
// changes each node (labels, taints, annotations) before it is created.
// For DRA groups it installs their drivers' DeviceClasses, as the charts
// do, until the test ends (NVIDIA's maps nvidia.com/gpu for every pod),
// and waits for the nodes' slices.
func (e *env) addNodes(spec string, mutate func(i int, n *corev1.Node)) []*corev1.Node {
	e.t.Helper()
	specs, err := simnode.ParseSpecs(spec)
	if err != nil {
		e.t.Fatal(err)
	}
	var nodes []*corev1.Node
	for _, s := range specs {
		nodes = append(nodes, s.Build(e.group, len(nodes))...)
	}
	for i, n := range nodes {
		n.Labels[groupLabel] = e.group
		if mutate != nil {
			mutate(i, n)
		}
	}
	if err := simnode.Create(e.ctx, controlPlane.Client, nodes); err != nil {
		e.t.Fatal(err)
	}
	if classes := simnode.DeviceClasses(specs); len(classes) > 0 {
		for _, c := range classes {
			createDeviceClass(e, c)
		}
		if err := simnode.WaitForSlices(e.ctx, controlPlane.Client, nodes, waitLimit); err != nil {
			e.t.Fatal(err)
		}
	}
	return nodes
}

// gpu is one container's device request.
type gpu struct {
	name    string
	cards   int64
	memory  int64 // MiB; 0: not asked
	percent int64 // gpumem-percentage; 0: not asked
	cores   int64 // 0: not asked
}

// pod builds a hami-scheduler pod on the test's nodes, one container per
// request (a zero request makes a container without devices).
func (e *env) pod(name string, containers ...gpu) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: corev1.PodSpec{
			SchedulerName: profile.SchedulerName,
			NodeSelector:  map[string]string{groupLabel: e.group},
		},
	}
	for i, g := range containers {
		c := corev1.Container{Name: g.name, Image: "cuda:sim"}
		if c.Name == "" {
			c.Name = fmt.Sprintf("c%d", i)
		}
		if g.cards > 0 {
			limits := corev1.ResourceList{nvidia.DefaultCountName: *resource.NewQuantity(g.cards, resource.DecimalSI)}
			for name, v := range map[corev1.ResourceName]int64{
				nvidia.DefaultMemoryName: g.memory, nvidia.DefaultMemoryPercentageName: g.percent, nvidia.DefaultCoresName: g.cores,
			} {
				if v > 0 {
					limits[name] = *resource.NewQuantity(v, resource.DecimalSI)
				}
			}
			c.Resources.Limits = limits
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	return p
}

func (e *env) create(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	created, err := controlPlane.Client.CoreV1().Pods(p.Namespace).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return created
}

func (e *env) get(name string) *corev1.Pod {
	e.t.Helper()
	p, err := controlPlane.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

func (e *env) pods() []corev1.Pod {
	e.t.Helper()
	list, err := controlPlane.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("list pods: %v", err)
	}
	return list.Items
}

// eventually polls cond until it holds, failing the test after waitLimit
// with what cond last said.
func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("%s: not within %s; last: %s", what, waitLimit, last)
	}
}

// waitRunning waits until the simulated kubelet runs the pod.
func (e *env) waitRunning(name string) *corev1.Pod {
	e.t.Helper()
	var p *corev1.Pod
	e.eventually("pod "+name+" running", func() (bool, string) {
		var err error
		p, err = controlPlane.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, describe(p)
	})
	return p
}

// waitUnschedulable waits for the scheduler's FailedScheduling event on the
// pod and returns its message; the pod must still be unbound.
func (e *env) waitUnschedulable(name string) string {
	e.t.Helper()
	var message string
	e.eventually("FailedScheduling event for "+name, func() (bool, string) {
		list, err := controlPlane.Client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + name + ",reason=FailedScheduling",
		})
		if err != nil {
			return false, err.Error()
		}
		if len(list.Items) == 0 {
			return false, "no event"
		}
		message = list.Items[len(list.Items)-1].Message
		return true, message
	})
	if p := e.get(name); p.Spec.NodeName != "" {
		e.t.Fatalf("pod %s was reported unschedulable but is bound to %s", name, p.Spec.NodeName)
	}
	return message
}

// waitTurnedAway waits until the pod's PodScheduled condition is False
// with a message containing want (any message when want is ""), and
// returns the message. Unlike the FailedScheduling event, whose series
// keeps the first attempt's message, the condition tells the last
// attempt, and it is written together with the node a preemption
// nominated.
func (e *env) waitTurnedAway(name, want string) string {
	e.t.Helper()
	var message string
	e.eventually(name+" turned away: "+want, func() (bool, string) {
		p := e.get(name)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, want) {
				message = c.Message
				return true, ""
			}
		}
		return false, describe(p)
	})
	return message
}

// checkAccounting fails the test if any card of the test's nodes holds
// more than its split count, memory or cores, according to the pods'
// allocated annotations of the env's vendors.
func (e *env) checkAccounting() []allocation.CardUse {
	e.t.Helper()
	nodes, err := controlPlane.Client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{LabelSelector: groupLabel + "=" + e.group})
	if err != nil {
		e.t.Fatal(err)
	}
	vendors := e.vendors
	if vendors == nil {
		if vendors, err = clustervendors.FromConfigs(nil); err != nil {
			e.t.Fatal(err)
		}
	}
	r := allocation.Read(vendors, nodes.Items, e.pods())
	for _, p := range r.PodProblems {
		e.t.Errorf("accounting: %s", p)
	}
	for _, o := range allocation.Overcommitments(r.Cards) {
		e.t.Errorf("over-committed: %s", o)
	}
	return r.Cards
}

// checkNodeUnlocked fails the test if the node still carries HAMi's lock.
func (e *env) checkNodeUnlocked(name string) {
	e.t.Helper()
	e.eventually("node "+name+" unlocked", func() (bool, string) {
		n, err := controlPlane.Client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		lock, held := n.Annotations[devices.NodeLock]
		return !held, lock
	})
}

func (e *env) deletePod(name string) {
	e.t.Helper()
	err := controlPlane.Client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatalf("delete pod %s: %v", name, err)
	}
}

// lastEvent is the reason and message of the last event about the
// object, for a failure's message.
func (e *env) lastEvent(object string) string {
	list, err := controlPlane.Client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + object})
	if err != nil || len(list.Items) == 0 {
		return fmt.Sprint("none ", err)
	}
	ev := list.Items[len(list.Items)-1]
	return ev.Reason + ": " + ev.Message
}

// waitGone waits until the pod is deleted.
func (e *env) waitGone(name string) {
	e.t.Helper()
	e.eventually("pod "+name+" gone", func() (bool, string) {
		p, err := controlPlane.Client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, describe(p)
	})
}

// restartScheduler stops the shared scheduler and starts a new one with
// the plugin args (nil: defaults), as a crashed and restarted
// hami-scheduler would be.
func restartScheduler(t *testing.T, args *hamiv1.HAMiArgs) {
	t.Helper()
	sched.Stop()
	var err error
	sched, err = localcluster.StartScheduler(context.Background(), controlPlane.Config, localcluster.SchedulerOptions{Args: args})
	if err != nil {
		t.Fatalf("restart scheduler: %v", err)
	}
}

func describe(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase=%s node=%q", p.Name, p.Status.Phase, p.Spec.NodeName)
	for _, k := range []string{devices.BindPhase, nvidia.AllocatedAnnotation} {
		if v, ok := p.Annotations[k]; ok {
			fmt.Fprintf(&b, " %s=%q", k, v)
		}
	}
	if p.Status.Message != "" {
		fmt.Fprintf(&b, " message=%q", p.Status.Message)
	}
	return b.String()
}
