package cache

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/metax"
)

// sgpuCache is a cache for MetaX sGPUs alone (vendor 0), whose vendor
// names the class of a pod's grants (devices.GrantClassifier).
func sgpuCache(t *testing.T) (*Cache, *metax.SGPUVendor) {
	t.Helper()
	v, err := metax.NewSGPU(devices.Config{Name: "metax-sgpu"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := devices.NewRegistry(v)
	if err != nil {
		t.Fatal(err)
	}
	return New(reg), v
}

// sgpuNode is a node with n sGPUs of 16 shares, 65536 MiB and 100 cores.
func sgpuNode(name string, n int) *corev1.Node {
	var cards []string
	for i := 0; i < n; i++ {
		cards = append(cards, fmt.Sprintf(`{"uuid":"%s-sgpu%d","model":"C500","totalDevCount":16,"totalCompute":100,"totalVRam":65536,"healthy":true,"qosPolicy":"best-effort"}`, name, i))
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		metax.SGPURegisterAnnotation: "[" + strings.Join(cards, ",") + "]",
	}}}
}

// sgpuPod is a running pod bound to node holding assignment (sGPU's
// allocated key), of app class class ("" for none).
func sgpuPod(uid, node, class, assignment string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "default", UID: types.UID(uid), Annotations: map[string]string{
			metax.SGPUAllocatedAnnotation: assignment,
			devices.AssignedNode:          node,
		}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if class != "" {
		p.Annotations[metax.AppClassAnnotation] = class
	}
	return p
}

func sgpuUsage(t *testing.T, c *Cache, node string) []devices.Usage {
	t.Helper()
	_, used, err := c.Snapshot(node, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return used
}

// TestAppClassCountsFollowPods: the online and offline counters of a
// card's usage count the app-class pods the cache rebuilds from
// annotations (SetPod), whichever arrives first, pod or node; an
// unchanged update counts nothing twice, a changed class is recounted,
// and RemovePod and a preemption's removal (Holding.Apply) take them back.
func TestAppClassCountsFollowPods(t *testing.T) {
	c, _ := sgpuCache(t)
	online := sgpuPod("on", "n1", metax.Online, "n1-sgpu0,Metax-SGPU,4096,0:;")
	online2 := sgpuPod("on2", "n1", metax.Online, "n1-sgpu0,Metax-SGPU,4096,0:;")
	offline := sgpuPod("off", "n1", metax.Offline, "n1-sgpu1,Metax-SGPU,4096,60:;")
	plain := sgpuPod("plain", "n1", "", "n1-sgpu1,Metax-SGPU,1024,10:;")

	// A pod seen before its node counts once the node arrives.
	mustSetPod(t, c, online)
	c.SetNode(sgpuNode("n1", 2))
	mustSetPod(t, c, online2)
	mustSetPod(t, c, offline)
	mustSetPod(t, c, plain)
	want := []devices.Usage{
		{Sharers: 2, MemoryMiB: 8192, Online: 2},
		{Sharers: 2, MemoryMiB: 5120, Cores: 70, Offline: 1},
	}
	check := func(when string, want []devices.Usage) {
		t.Helper()
		got := sgpuUsage(t, c, "n1")
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: card %d usage %+v, want %+v", when, i, got[i], want[i])
			}
		}
	}
	check("after SetPod", want)

	// The informer's resync: nothing counted twice.
	mustSetPod(t, c, online.DeepCopy())
	check("after an unchanged update", want)

	// A node update rebuilds the usage from the pods.
	c.SetNode(sgpuNode("n1", 2))
	check("after the node's update", want)

	// A preemption's removal of the online pod (its Holding) takes its
	// class back; adding it back restores it.
	held, ok := c.Holding(online.UID)
	if !ok {
		t.Fatal("online pod not held")
	}
	cards, used, _ := c.Snapshot("n1", 0, nil)
	held.Apply(cards, used, 0, false)
	if w := (devices.Usage{Sharers: 1, MemoryMiB: 4096, Online: 1}); used[0] != w {
		t.Errorf("victim removed: %+v, want %+v", used[0], w)
	}
	held.Apply(cards, used, 0, true)
	if used[0] != want[0] {
		t.Errorf("victim added back: %+v, want %+v", used[0], want[0])
	}

	// The class changes with the pod's annotation.
	changed := online2.DeepCopy()
	changed.Annotations[metax.AppClassAnnotation] = metax.Offline
	mustSetPod(t, c, changed)
	check("after a class change", []devices.Usage{{Sharers: 2, MemoryMiB: 8192, Online: 1, Offline: 1}, want[1]})

	if !c.RemovePod(online) || !c.RemovePod(changed) || !c.RemovePod(offline) {
		t.Fatal("RemovePod: a pod held nothing")
	}
	check("after RemovePod", []devices.Usage{{}, {Sharers: 1, MemoryMiB: 1024, Cores: 10}})

	// A terminated pod holds nothing.
	done := offline.DeepCopy()
	mustSetPod(t, c, done)
	done.Status.Phase = corev1.PodSucceeded
	mustSetPod(t, c, done)
	check("after the offline pod succeeded", []devices.Usage{{}, {Sharers: 1, MemoryMiB: 1024, Cores: 10}})
}

// TestAppClassAssumedThenConfirmed: an assignment the vendor's Fit made
// carries the pod's class, so the assumed pod counts, its confirmation by
// the informer (annotations, class stamped by the cache) counts the same
// once, and Forget of an assumed pod takes the class back.
func TestAppClassAssumedThenConfirmed(t *testing.T) {
	c, v := sgpuCache(t)
	node := sgpuNode("n1", 1)
	c.SetNode(node)
	cards, used, err := c.Snapshot("n1", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := sgpuPod("on", "", metax.Online, "")
	delete(pod.Annotations, metax.SGPUAllocatedAnnotation)
	delete(pod.Annotations, devices.AssignedNode)
	pod.Spec.Containers = []corev1.Container{{Name: "m", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
		"metax-tech.com/sgpu": resource.MustParse("1"), "metax-tech.com/vmemory": resource.MustParse("4"),
	}}}}
	req, err := v.ParsePod(pod)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, used, &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if err := c.Assume(pod, "n1", []devices.Assignment{a}); err != nil {
		t.Fatal(err)
	}
	want := devices.Usage{Sharers: 1, MemoryMiB: 4096, Online: 1}
	if got := sgpuUsage(t, c, "n1")[0]; got != want {
		t.Fatalf("assumed: %+v, want %+v", got, want)
	}

	bound := pod.DeepCopy()
	bound.Spec.NodeName = "n1"
	bound.Annotations[metax.SGPUAllocatedAnnotation] = devices.EncodeAssignment(a)
	bound.Annotations[devices.AssignedNode] = "n1"
	mustSetPod(t, c, bound)
	if got := sgpuUsage(t, c, "n1")[0]; got != want {
		t.Errorf("confirmed: %+v, want %+v", got, want)
	}
	if held, _ := c.Holding(pod.UID); held.Assumed {
		t.Error("confirmed pod still assumed: the decoded grants differ from Fit's")
	}

	other := pod.DeepCopy()
	other.UID, other.Name = "on2", "pod-on2"
	if err := c.Assume(other, "n1", []devices.Assignment{a}); err != nil {
		t.Fatal(err)
	}
	if got := sgpuUsage(t, c, "n1")[0]; got.Online != 2 {
		t.Errorf("two online pods, one assumed: %+v", got)
	}
	c.Forget(other)
	if got := sgpuUsage(t, c, "n1")[0]; got != want {
		t.Errorf("after Forget: %+v, want %+v", got, want)
	}
}
