package workload

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// nodeLabel ties a test's pods to its nodes.
const nodeLabel = "workload.hami.io/test"

// waitLimit bounds every wait for the cluster to converge.
const waitLimit = 30 * time.Second

// cluster is one test's namespace and nodes, both named after it.
type cluster struct {
	t   *testing.T
	ctx context.Context
	ns  string
}

func newCluster(t *testing.T, name, nodes string) *cluster {
	t.Helper()
	c := &cluster{t: t, ctx: t.Context(), ns: name}
	if _, err := controlPlane.Client.CoreV1().Namespaces().Create(c.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
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
		n.Labels[nodeLabel] = name
	}
	if err := simnode.Create(c.ctx, controlPlane.Client, built); err != nil {
		t.Fatal(err)
	}
	return c
}

// podGroup creates an in-tree gang of minCount, of the priority class
// when one is named.
func (c *cluster) podGroup(name string, minCount int32, priorityClass string) {
	c.t.Helper()
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy:  schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}},
			PriorityClassName: priorityClass,
		},
	}
	if _, err := controlPlane.Client.SchedulingV1beta1().PodGroups(c.ns).Create(c.ctx, pg, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("create PodGroup %s: %v", name, err)
	}
}

// priorityClass creates a cluster-wide priority class once.
func priorityClass(t *testing.T, name string, value int32) {
	t.Helper()
	_, err := controlPlane.Client.SchedulingV1().PriorityClasses().Create(t.Context(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// pod creates a hami-scheduler pod on the test's nodes asking one card
// with memMiB of memory, in the pod group group when not empty.
func (c *cluster) pod(name, group, priorityClass string, memMiB int64) {
	c.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
		Spec: corev1.PodSpec{
			SchedulerName:     profile.SchedulerName,
			NodeSelector:      map[string]string{nodeLabel: c.ns},
			PriorityClassName: priorityClass,
			Containers: []corev1.Container{{Name: "c", Image: "cuda:sim", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				nvidia.DefaultCountName:  *resource.NewQuantity(1, resource.DecimalSI),
				nvidia.DefaultMemoryName: *resource.NewQuantity(memMiB, resource.DecimalSI),
			}}}},
		},
	}
	if group != "" {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	}
	if _, err := controlPlane.Client.CoreV1().Pods(c.ns).Create(c.ctx, p, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("create pod %s: %v", name, err)
	}
}

// gang creates n pods of group named <group>-<i>.
func (c *cluster) gang(group, priorityClass string, n int, memMiB int64) []string {
	c.t.Helper()
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d", group, i)
		c.pod(names[i], group, priorityClass, memMiB)
	}
	return names
}

// eventually polls cond until it holds, failing after waitLimit with what
// cond last said.
func (c *cluster) eventually(what string, cond func() (bool, string)) {
	c.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		c.t.Fatalf("%s: not within %s; last: %s", what, waitLimit, last)
	}
}

// pods returns the named pods that exist, by name.
func (c *cluster) pods(names []string) map[string]*corev1.Pod {
	c.t.Helper()
	list, err := controlPlane.Client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		for _, n := range names {
			if list.Items[i].Name == n {
				out[n] = &list.Items[i]
			}
		}
	}
	return out
}

func describe(pods map[string]*corev1.Pod) string {
	var parts []string
	for _, p := range pods {
		parts = append(parts, fmt.Sprintf("%s phase=%s node=%q bind-phase=%q", p.Name, p.Status.Phase, p.Spec.NodeName, p.Annotations[devices.BindPhase]))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// waitRunning waits until every named pod runs.
func (c *cluster) waitRunning(names ...string) {
	c.t.Helper()
	c.eventually(fmt.Sprintf("%v running", names), func() (bool, string) {
		pods := c.pods(names)
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == len(names), describe(pods)
	})
}

// waitGone waits until none of the named pods exists.
func (c *cluster) waitGone(names ...string) {
	c.t.Helper()
	c.eventually(fmt.Sprintf("%v gone", names), func() (bool, string) {
		pods := c.pods(names)
		return len(pods) == 0, describe(pods)
	})
}

// checkUnplaced fails the test if a named pod is bound, carries a device
// assignment, or holds cards in the scheduler's device cache.
func (c *cluster) checkUnplaced(names []string) {
	c.t.Helper()
	pods := c.pods(names)
	for _, p := range pods {
		if p.Spec.NodeName != "" || p.Annotations[devices.BindPhase] != "" {
			c.t.Errorf("pod %s is placed: %s", p.Name, describe(map[string]*corev1.Pod{p.Name: p}))
		}
	}
	for _, h := range sched.Plugin().Cache().AllHoldings() {
		if h.Namespace != c.ns {
			continue
		}
		if _, ok := pods[h.Name]; ok {
			c.t.Errorf("the device cache counts cards held by %s/%s", h.Namespace, h.Name)
		}
	}
}

// checkAccounting fails the test if a card of the test's nodes holds more
// than it has, as the pods' allocated annotations tell.
func (c *cluster) checkAccounting() {
	c.t.Helper()
	nodes, err := controlPlane.Client.CoreV1().Nodes().List(c.ctx, metav1.ListOptions{LabelSelector: nodeLabel + "=" + c.ns})
	if err != nil {
		c.t.Fatal(err)
	}
	pods, err := controlPlane.Client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	vendors, err := clustervendors.FromConfigs(nil)
	if err != nil {
		c.t.Fatal(err)
	}
	r := allocation.Read(vendors, nodes.Items, pods.Items)
	for _, p := range r.PodProblems {
		c.t.Errorf("accounting: %s", p)
	}
	for _, o := range allocation.Overcommitments(r.Cards) {
		c.t.Errorf("over-committed: %s", o)
	}
}
