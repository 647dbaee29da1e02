package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/amd"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
	"github.com/hami-scheduler/hami-scheduler/devices/biren"
	"github.com/hami-scheduler/hami-scheduler/devices/cambricon"
	"github.com/hami-scheduler/hami-scheduler/devices/enflame"
)

// shape is a pod built from a vendor example's device container.
type shape struct {
	name  string
	build func(device corev1.Container) (inits, regular []corev1.Container)
}

// shapes are the pods the published device plugins disagree on.
var shapes = []shape{
	{"two", func(d corev1.Container) ([]corev1.Container, []corev1.Container) {
		return nil, []corev1.Container{named(d, "a"), named(d, "b")}
	}},
	{"init-and-regular", func(d corev1.Container) ([]corev1.Container, []corev1.Container) {
		return []corev1.Container{named(d, "init")}, []corev1.Container{named(d, "main")}
	}},
	{"init-only", func(d corev1.Container) ([]corev1.Container, []corev1.Container) {
		return []corev1.Container{named(d, "init")}, []corev1.Container{{Name: "main", Image: d.Image}}
	}},
}

func named(c corev1.Container, name string) corev1.Container {
	c = *c.DeepCopy()
	c.Name = name
	return c
}

// refusedBy names, by example and shape, the device plugin whose rule the
// webhook refuses the pod with; every other shape must run.
var refusedBy = map[string]map[string]string{
	"amd-gpu":           {"two": amd.PluginVersion, "init-and-regular": amd.PluginVersion},
	"ascend-910b4-vnpu": {"two": ascend.PluginVersion, "init-and-regular": ascend.PluginVersion},
	"cambricon-mlu":     {"two": cambricon.PluginVersion, "init-and-regular": cambricon.PluginVersion, "init-only": cambricon.PluginVersion},
	"enflame-drs":       {"two": enflame.PluginVersion, "init-and-regular": enflame.PluginVersion, "init-only": enflame.PluginVersion},
	"biren-gpu":         {},
	"hygon-dcu":         {},
}

// On the every-vendor cluster, with the node side following each vendor's
// published device plugin (simnode): for the examples of the vendors whose
// plugins are public, a two-container pod, an init-and-regular pod and an
// init-only pod either run with their cards or are refused at admission
// with the plugin's reason, never left stuck or failed on the node; a pod
// deleted between its binding and its admission leaves the node to the
// next pod; and after a scheduler restart, with Biren's allocated key
// consumed by its plugin, no card is given twice.
func TestVendorPluginShapes(t *testing.T) {
	e, registry, nodes := startVendorCluster(t, "plugins", nil)
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	for example, refused := range refusedBy {
		device := examplePod(t, filepath.Join(vendorExamples, example+".yaml")).Spec.Containers[0]
		for _, s := range shapes {
			name := example + "-" + s.name
			p := e.pod(name)
			p.Spec.SchedulerName = ""
			p.Spec.InitContainers, p.Spec.Containers = s.build(device)
			_, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
			if plugin, ok := refused[s.name]; ok {
				if err == nil || !strings.Contains(err.Error(), "cannot serve it") || !strings.Contains(err.Error(), plugin) {
					t.Errorf("%s: create = %v, want a refusal naming %s", name, err, plugin)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: create = %v, want it admitted", name, err)
				continue
			}
			pod := e.waitRunning(name)
			checkVendorPod(t, registry, pod, byName[pod.Spec.NodeName])
			e.checkAccounting()
			e.deletePod(name)
			e.waitGone(name)
		}
		deletedBeforeAdmission(e, example, device)
	}
	restartAfterErase(e, registry, filepath.Join(vendorExamples, "biren-gpu.yaml"))
}

// deletedBeforeAdmission deletes a pod of the example's container as soon
// as it is bound, then runs another: the lock the first took (HAMi's, or
// Cambricon's own) does not keep the node from the second.
func deletedBeforeAdmission(e *env, example string, device corev1.Container) {
	e.t.Helper()
	first := e.pod(example + "-deleted")
	first.Spec.SchedulerName = ""
	first.Spec.Containers = []corev1.Container{named(device, "main")}
	e.create(first)
	e.eventually("pod "+first.Name+" bound", func() (bool, string) {
		p := e.get(first.Name)
		return p.Spec.NodeName != "", describe(p)
	})
	e.deletePod(first.Name)
	e.waitGone(first.Name)
	next := first.DeepCopy()
	next.Name = example + "-after-deleted"
	e.create(next)
	e.waitRunning(next.Name)
	e.checkAccounting()
	e.deletePod(next.Name)
	e.waitGone(next.Name)
}

// restartAfterErase fills the Biren node's two cards, restarts the
// scheduler once Biren's plugin has consumed the pods' allocated key, and
// checks that the new scheduler's cache holds both cards (read from the
// scheduler's record of the assignment) and that a third pod is not given
// one. (Here NodeResourcesFit also counts birentech.com/gpu; the chart's
// ignoredResources leave it to the cache alone.)
func restartAfterErase(e *env, registry *devices.Registry, example string) {
	e.t.Helper()
	device := examplePod(e.t, example).Spec.Containers[0]
	for i := range 2 {
		p := e.pod(fmt.Sprintf("biren-%d", i))
		p.Spec.SchedulerName = ""
		p.Spec.Containers = []corev1.Container{named(device, "main")}
		e.create(p)
		if got := e.waitRunning(p.Name).Annotations["hami.io/Biren-devices-allocated"]; strings.Contains(got, ",") {
			e.t.Errorf("pod %s: Biren's plugin left hami.io/Biren-devices-allocated = %q, want it consumed", p.Name, got)
		}
	}
	restartScheduler(e.t, vendorClusterArgs())
	vi := slices.IndexFunc(registry.Vendors(), func(v devices.Vendor) bool { return v.Name() == biren.VendorWord })
	e.eventually("Biren cards held in the restarted scheduler's cache", func() (bool, string) {
		for _, nc := range sched.Plugin().Cache().AllCards() {
			if nc.Vendor != vi {
				continue
			}
			held := 0
			for _, u := range nc.Used {
				held += int(u.Sharers)
			}
			return held == 2, fmt.Sprintf("node %s: %+v", nc.Node, nc.Used)
		}
		return false, "no Biren node in the cache"
	})
	third := e.pod("biren-2")
	third.Spec.SchedulerName = ""
	third.Spec.Containers = []corev1.Container{named(device, "main")}
	e.create(third)
	e.waitUnschedulable(third.Name)
	e.checkAccounting()
}
