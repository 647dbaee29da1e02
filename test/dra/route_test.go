package dra

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/hamidra"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// HAMi-DRA's route: its webhook turns a pod's nvidia.com/gpu, gpumem and
// gpucores into a claim, kube-scheduler's DynamicResources allocates it on
// a DRA node, the driver gives the container those limits; deleting the
// pod deletes the claim.
func TestHAMiDRAWebhookRoute(t *testing.T) {
	labels := map[string]string{"dra.hami.io/test": "hami-dra-route"}
	c := newCluster(t, "hami-dra-route", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, dra", labels)
	hook, err := localcluster.StartHAMiDRAWebhook(c.ctx, controlPlane.Config, localcluster.HAMiDRAWebhookOptions{NamespaceLabels: labels})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hook.Stop)
	if err := hook.WaitAdmitting(c.ctx, c.ns, waitLimit); err != nil {
		t.Fatal(err)
	}
	c.devicePod("p", c.node(0), "", quantities(string(nvidia.DefaultCountName), 1, string(nvidia.DefaultMemoryName), 4000, string(nvidia.DefaultCoresName), 30))
	pod := c.waitRunning("p")
	name := hamidra.ClaimName(c.ns, "p", "c")
	if pod.Labels[hamidra.Label] != "true" || len(pod.Spec.ResourceClaims) != 1 || pod.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("pod %+v: want HAMi-DRA's label and claim, default-scheduler", pod.ObjectMeta)
	}
	claim := c.checkReserved(name, pod)
	consumed := claim.Status.Allocation.Devices.Results[0].ConsumedCapacity
	if m, cores := consumed["memory"], consumed["cores"]; m.Value() != 4000<<20 || cores.Value() != 30 {
		t.Errorf("consumed %v: want 4000 MiB and 30 cores", consumed)
	}
	got, ok := agent.PreparedDevices(c.ns, "p")
	if !ok || len(got["c"]) != 1 || got["c"][0].MemoryMiB != 4000 || got["c"][0].Cores != 30 {
		t.Errorf("container c got %+v, %v: want hami-core limits 4000 MiB and 30%%", got, ok)
	}
	c.deletePod("p")
	c.eventually("claim "+name+" deleted", func() (bool, string) {
		_, err := c.claim(name)
		return apierrors.IsNotFound(err), "claim still there"
	})

	// examples/dra/hami-pod.yaml, HAMi's fractional pod, takes the same
	// route.
	c.apply("hami-pod.yaml")
	c.waitRunning("hami-pod")
	got, ok = agent.PreparedDevices(c.ns, "hami-pod")
	if !ok || len(got["cuda"]) != 1 || got["cuda"][0].MemoryMiB != 3000 || got["cuda"][0].Cores != 30 {
		t.Errorf("hami-pod's container got %+v, %v: want hami-core limits 3000 MiB and 30%%", got, ok)
	}
}

// A running node switched from the device plugin to HAMi's DRA driver
// publishes its slices; its device-plugin pod keeps running until it
// ends; a native claim runs beside it. Switched back, its slices go and a
// HAMi pod runs on it again, beside the claim still prepared.
func TestSwitchNodeKind(t *testing.T) {
	c := newCluster(t, "switch-kind", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB", nil)
	node := c.node(0)
	hamiLimits := quantities(string(nvidia.DefaultCountName), 1, string(nvidia.DefaultMemoryName), 10000)
	c.devicePod("old", node, profile.SchedulerName, hamiLimits)
	c.waitRunning("old")

	if err := simnode.SwitchToDRA(c.ctx, controlPlane.Client, node, ""); err != nil {
		t.Fatal(err)
	}
	live, err := controlPlane.Client.CoreV1().Nodes().Get(c.ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := simnode.WaitForSlices(c.ctx, controlPlane.Client, []*corev1.Node{live}, waitLimit); err != nil {
		t.Fatal(err)
	}
	if p, err := c.pod("old"); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("device-plugin pod after the switch: %v, %v", p.Status.Phase, err)
	}
	c.capacityClaim("native", simnode.HAMiDRADriver, "memory=8Gi")
	c.claimPod("native", "native", node, corev1.DefaultSchedulerName)
	c.waitRunning("native")
	c.deletePod("old")

	if err := simnode.SwitchToDevicePlugin(c.ctx, controlPlane.Client, node); err != nil {
		t.Fatal(err)
	}
	c.eventually("the driver's slices wiped", func() (bool, string) {
		list, err := controlPlane.Client.ResourceV1().ResourceSlices().List(c.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, time.Now().String()
	})
	c.devicePod("new", node, profile.SchedulerName, hamiLimits)
	c.waitRunning("new")
	if p, err := c.pod("native"); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("claim pod after switching back: %v, %v", p.Status.Phase, err)
	}
}
