package dra

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// waitLimit bounds every wait for the cluster to converge.
const waitLimit = 30 * time.Second

// cluster is one test's namespace and nodes, named after it.
type cluster struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	nodes []*corev1.Node
}

// newCluster creates the test's namespace (with labels) and the nodes of
// the spec, installs the DeviceClasses of its DRA drivers (as the drivers'
// charts do) and waits for the DRA nodes' slices.
func newCluster(t *testing.T, name, spec string, nsLabels map[string]string) *cluster {
	t.Helper()
	c := &cluster{t: t, ctx: t.Context()}
	// A test run again in the same process (-count) gets a suffix.
	for run := 1; ; run++ {
		c.ns = name
		if run > 1 {
			c.ns = fmt.Sprintf("%s-%d", name, run)
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns, Labels: nsLabels}}
		_, err := controlPlane.Client.CoreV1().Namespaces().Create(c.ctx, ns, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsAlreadyExists(err) || run >= 100 {
			t.Fatal(err)
		}
	}
	name = c.ns
	specs, err := simnode.ParseSpecs(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		c.nodes = append(c.nodes, s.Build(name, len(c.nodes))...)
	}
	if err := simnode.Create(c.ctx, controlPlane.Client, c.nodes); err != nil {
		t.Fatal(err)
	}
	if err := localcluster.InstallDeviceClasses(c.ctx, controlPlane.Config, simnode.DeviceClasses(specs)); err != nil {
		t.Fatal(err)
	}
	if err := simnode.WaitForSlices(c.ctx, controlPlane.Client, c.nodes, waitLimit); err != nil {
		t.Fatal(err)
	}
	return c
}

// node is the test's i-th node's name.
func (c *cluster) node(i int) string { return c.nodes[i].Name }

// capacityClaim is a claim of one device of the class asking the
// capacities ("memory=10Gi").
func (c *cluster) capacityClaim(name, class string, capacity ...string) *resourceapi.ResourceClaim {
	c.t.Helper()
	requests := map[resourceapi.QualifiedName]resource.Quantity{}
	for _, kv := range capacity {
		k, v, _ := strings.Cut(kv, "=")
		requests[resourceapi.QualifiedName(k)] = resource.MustParse(v)
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
				Capacity: &resourceapi.CapacityRequirements{Requests: requests},
			},
		}}}},
	}
	created, err := controlPlane.Client.ResourceV1().ResourceClaims(c.ns).Create(c.ctx, claim, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("create claim %s: %v", name, err)
	}
	return created
}

// claimPod creates a pod whose container c uses the claim, scheduled by
// scheduler on node (or bound to it when scheduler is "").
func (c *cluster) claimPod(name, claim, node, scheduler string) *corev1.Pod {
	c.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
		Spec: corev1.PodSpec{
			SchedulerName:  scheduler,
			NodeSelector:   map[string]string{corev1.LabelHostname: node},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claim)}},
			Containers: []corev1.Container{{Name: "c", Image: "cuda:sim",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
		},
	}
	if scheduler == "" {
		p.Spec.SchedulerName, p.Spec.NodeSelector, p.Spec.NodeName = "", nil, node
	}
	return c.create(p)
}

// devicePod creates a pod whose container c has the limits, scheduled by
// scheduler on node.
func (c *cluster) devicePod(name, node, scheduler string, limits corev1.ResourceList) *corev1.Pod {
	c.t.Helper()
	return c.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
		Spec: corev1.PodSpec{
			SchedulerName: scheduler,
			NodeSelector:  map[string]string{corev1.LabelHostname: node},
			Containers:    []corev1.Container{{Name: "c", Image: "cuda:sim", Resources: corev1.ResourceRequirements{Limits: limits}}},
		},
	})
}

func (c *cluster) create(p *corev1.Pod) *corev1.Pod {
	c.t.Helper()
	created, err := controlPlane.Client.CoreV1().Pods(c.ns).Create(c.ctx, p, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return created
}

// quantities builds a resource list from name, value pairs.
func quantities(kv ...any) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i].(string))] = *resource.NewQuantity(int64(kv[i+1].(int)), resource.DecimalSI)
	}
	return out
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

func (c *cluster) pod(name string) (*corev1.Pod, error) {
	return controlPlane.Client.CoreV1().Pods(c.ns).Get(c.ctx, name, metav1.GetOptions{})
}

func (c *cluster) claim(name string) (*resourceapi.ResourceClaim, error) {
	return controlPlane.Client.ResourceV1().ResourceClaims(c.ns).Get(c.ctx, name, metav1.GetOptions{})
}

// waitRunning waits until the pod runs and returns it.
func (c *cluster) waitRunning(name string) *corev1.Pod {
	c.t.Helper()
	var p *corev1.Pod
	c.eventually("pod "+name+" running", func() (bool, string) {
		var err error
		if p, err = c.pod(name); err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %s on %q; %s", p.Status.Phase, p.Spec.NodeName, c.lastEvents(name))
	})
	return p
}

// lastEvents describes the object's latest events, for a failure message.
func (c *cluster) lastEvents(object string) string {
	list, err := controlPlane.Client.CoreV1().Events(c.ns).List(c.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + object})
	if err != nil || len(list.Items) == 0 {
		return "no event"
	}
	e := list.Items[len(list.Items)-1]
	return e.Reason + ": " + e.Message
}

// waitEvent waits for an event of the reason on the object and returns
// its message.
func (c *cluster) waitEvent(object, reason string) string {
	c.t.Helper()
	var message string
	c.eventually(reason+" event for "+object, func() (bool, string) {
		list, err := controlPlane.Client.CoreV1().Events(c.ns).List(c.ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + object + ",reason=" + reason,
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
	return message
}

// deletePod deletes the pod and waits until it is gone.
func (c *cluster) deletePod(name string) {
	c.t.Helper()
	if err := controlPlane.Client.CoreV1().Pods(c.ns).Delete(c.ctx, name, metav1.DeleteOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.eventually("pod "+name+" gone", func() (bool, string) {
		_, err := c.pod(name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// checkReserved fails unless the claim is allocated on node and reserved
// for the pod; it returns the claim.
func (c *cluster) checkReserved(name string, pod *corev1.Pod) *resourceapi.ResourceClaim {
	c.t.Helper()
	claim, err := c.claim(name)
	if err != nil {
		c.t.Fatal(err)
	}
	if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) == 0 || claim.Status.Allocation.Devices.Results[0].Pool != pod.Spec.NodeName {
		c.t.Errorf("claim %s allocation %+v: want a device of node %s's pool", name, claim.Status.Allocation, pod.Spec.NodeName)
	}
	if !slices.ContainsFunc(claim.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == pod.UID }) {
		c.t.Errorf("claim %s reserved for %+v, not pod %s (%s)", name, claim.Status.ReservedFor, pod.Name, pod.UID)
	}
	return claim
}

// nudge changes an annotation of the pod, which makes the kubelet sync it
// again at once.
func (c *cluster) nudge(name string) {
	c.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.hami.io/nudge":%q}}}`, time.Now().Format(time.RFC3339Nano))
	if _, err := controlPlane.Client.CoreV1().Pods(c.ns).Patch(c.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		c.t.Fatal(err)
	}
}
