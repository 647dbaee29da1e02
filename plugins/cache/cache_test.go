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
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
)

// gpuNode is a node with n healthy cards of 10 shares and 10000 MiB each.
func gpuNode(name string, n int) *corev1.Node {
	var cards []string
	for i := 0; i < n; i++ {
		cards = append(cards, fmt.Sprintf(`{"id":"%s-gpu%d","index":%d,"count":10,"devmem":10000,"devcore":100,"type":"NVIDIA-A100","health":true}`, name, i, i))
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			nvidia.RegisterAnnotation: "[" + strings.Join(cards, ",") + "]",
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			"nvidia.com/gpu": *resource.NewQuantity(int64(n*10), resource.DecimalSI),
		}},
	}
}

// boundPod is a pod bound to node whose allocated annotation is assignment.
func boundPod(uid, node, assignment string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "default", UID: types.UID(uid), Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if assignment != "" {
		p.Annotations[nvidia.AllocatedAnnotation] = assignment
		p.Annotations[devices.AssignedNode] = node
	}
	return p
}

func newCache(t testing.TB) *Cache {
	t.Helper()
	reg, err := vendors.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(reg)
}

// usage returns the NVIDIA usage of node's cards.
func usage(t *testing.T, c *Cache, node string) []devices.Usage {
	t.Helper()
	_, used, err := c.Snapshot(node, 0, nil)
	if err != nil {
		t.Fatalf("snapshot %s: %v", node, err)
	}
	return used
}

func u(sharers, mem, cores int32) devices.Usage {
	return devices.Usage{Sharers: sharers, MemoryMiB: int64(mem), Cores: int64(cores)}
}

func assignment(grants ...devices.Grant) []devices.Assignment {
	return []devices.Assignment{{grants}}
}

func grant(uuid string, mem, cores int32) devices.Grant {
	return devices.Grant{UUID: uuid, Vendor: nvidia.VendorWord, MemoryMiB: mem, Cores: cores}
}

func TestCacheAccounting(t *testing.T) {
	tests := []struct {
		name string
		// steps act on the cache in order.
		steps []func(t *testing.T, c *Cache)
		want  []devices.Usage
		stats Stats
	}{
		{
			name: "bound pod with assignment is accounted",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 2)),
				setPod(boundPod("a", "n1", "n1-gpu1,NVIDIA,3000,20:;")),
			},
			want:  []devices.Usage{u(0, 0, 0), u(1, 3000, 20)},
			stats: Stats{Nodes: 1, Cards: 2, Pods: 1},
		},
		{
			name: "pods seen before their node are applied when the node arrives (restart rebuild)",
			steps: []func(*testing.T, *Cache){
				setPod(boundPod("a", "n1", ";n1-gpu0,NVIDIA,1000,10:n1-gpu1,NVIDIA,1000,10:;")),
				setPod(boundPod("b", "n1", "n1-gpu0,NVIDIA,2000,0:;")),
				setNode(gpuNode("n1", 2)),
			},
			want:  []devices.Usage{u(2, 3000, 10), u(1, 1000, 10)},
			stats: Stats{Nodes: 1, Cards: 2, Pods: 2},
		},
		{
			name: "deleted pod releases its cards",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				setPod(boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;")),
				func(t *testing.T, c *Cache) { c.RemovePod(boundPod("a", "n1", "")) },
			},
			want:  []devices.Usage{u(0, 0, 0)},
			stats: Stats{Nodes: 1, Cards: 1},
		},
		{
			name: "terminated pod releases its cards",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				setPod(boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;")),
				func(t *testing.T, c *Cache) {
					p := boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;")
					p.Status.Phase = corev1.PodSucceeded
					mustSetPod(t, c, p)
				},
			},
			want:  []devices.Usage{u(0, 0, 0)},
			stats: Stats{Nodes: 1, Cards: 1},
		},
		{
			name: "update of an accounted pod is not counted twice",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				setPod(boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;")),
				setPod(boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;")),
			},
			want:  []devices.Usage{u(1, 3000, 20)},
			stats: Stats{Nodes: 1, Cards: 1, Pods: 1},
		},
		{
			name: "assumed then confirmed by the informer counts once",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				assume(boundPod("a", "", ""), "n1", assignment(grant("n1-gpu0", 3000, 20))),
				// PreBind's patch: annotations, not bound yet.
				setPod(func() *corev1.Pod {
					p := boundPod("a", "", "n1-gpu0,NVIDIA,3000,20:;")
					p.Annotations[devices.AssignedNode] = "n1"
					return p
				}()),
				setPod(boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;")),
				// Unreserve after confirmation must not release.
				func(t *testing.T, c *Cache) { c.Forget(boundPod("a", "n1", "")) },
			},
			want:  []devices.Usage{u(1, 3000, 20)},
			stats: Stats{Nodes: 1, Cards: 1, Pods: 1},
		},
		{
			name: "unreserve forgets an assumed assignment",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				assume(boundPod("a", "", ""), "n1", assignment(grant("n1-gpu0", 3000, 20))),
				func(t *testing.T, c *Cache) { c.Forget(boundPod("a", "", "")) },
			},
			want:  []devices.Usage{u(0, 0, 0)},
			stats: Stats{Nodes: 1, Cards: 1},
		},
		{
			name: "assumed pod is kept while the informer still shows it unbound",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				assume(boundPod("a", "", ""), "n1", assignment(grant("n1-gpu0", 3000, 20))),
				setPod(boundPod("a", "", "")),
			},
			want:  []devices.Usage{u(1, 3000, 20)},
			stats: Stats{Nodes: 1, Cards: 1, Pods: 1, AssumedPods: 1},
		},
		{
			name: "unbound pod with stale annotations holds nothing",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				setPod(func() *corev1.Pod {
					p := boundPod("a", "", "n1-gpu0,NVIDIA,3000,20:;")
					p.Annotations[devices.AssignedNode] = "n1"
					return p
				}()),
			},
			want:  []devices.Usage{u(0, 0, 0)},
			stats: Stats{Nodes: 1, Cards: 1},
		},
		{
			name: "pod bound to another node than its annotation holds nothing",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				setPod(func() *corev1.Pod {
					p := boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;")
					p.Annotations[devices.AssignedNode] = "n2"
					return p
				}()),
			},
			want:  []devices.Usage{u(0, 0, 0)},
			stats: Stats{Nodes: 1, Cards: 1},
		},
		{
			name: "node inventory update keeps usage of cards still present",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				setPod(boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;")),
				setNode(gpuNode("n1", 2)),
			},
			want:  []devices.Usage{u(1, 3000, 20), u(0, 0, 0)},
			stats: Stats{Nodes: 1, Cards: 2, Pods: 1},
		},
		{
			name: "node removed and re-added gets its pods' usage back",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				setPod(boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;")),
				func(t *testing.T, c *Cache) { c.RemoveNode("n1") },
				setNode(gpuNode("n1", 1)),
			},
			want:  []devices.Usage{u(1, 3000, 20)},
			stats: Stats{Nodes: 1, Cards: 1, Pods: 1},
		},
		{
			name: "grant naming an unknown card is ignored",
			steps: []func(*testing.T, *Cache){
				setNode(gpuNode("n1", 1)),
				setPod(boundPod("a", "n1", "GPU-elsewhere,NVIDIA,3000,20:;")),
			},
			want:  []devices.Usage{u(0, 0, 0)},
			stats: Stats{Nodes: 1, Cards: 1, Pods: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t)
			for _, step := range tt.steps {
				step(t, c)
			}
			got := usage(t, c, "n1")
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("usage = %v, want %v", got, tt.want)
			}
			if s := c.Stats(); s != tt.stats {
				t.Errorf("stats = %+v, want %+v", s, tt.stats)
			}
		})
	}
}

func setNode(n *corev1.Node) func(*testing.T, *Cache) {
	return func(t *testing.T, c *Cache) { c.SetNode(n) }
}

func setPod(p *corev1.Pod) func(*testing.T, *Cache) {
	return func(t *testing.T, c *Cache) { mustSetPod(t, c, p) }
}

func mustSetPod(t *testing.T, c *Cache, p *corev1.Pod) {
	t.Helper()
	if err := c.SetPod(p); err != nil {
		t.Fatalf("SetPod: %v", err)
	}
}

func assume(p *corev1.Pod, node string, a []devices.Assignment) func(*testing.T, *Cache) {
	return func(t *testing.T, c *Cache) {
		if err := c.Assume(p, node, a); err != nil {
			t.Fatalf("Assume: %v", err)
		}
	}
}

func TestSetPodRejectsMalformedAssignment(t *testing.T) {
	c := newCache(t)
	c.SetNode(gpuNode("n1", 1))
	mustSetPod(t, c, boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;"))
	err := c.SetPod(boundPod("a", "n1", "n1-gpu0,NVIDIA,lots,20:;"))
	if err == nil || !strings.Contains(err.Error(), nvidia.AllocatedAnnotation) {
		t.Fatalf("SetPod error = %v, want one naming %s", err, nvidia.AllocatedAnnotation)
	}
	// A bound pod whose assignment cannot be read may hold any card of
	// its node: the node's cards take nothing new (fail closed), and other
	// nodes are unaffected.
	c.SetNode(gpuNode("n2", 1))
	if _, _, err := c.Snapshot("n1", 0, nil); err == nil || !strings.Contains(err.Error(), "unreadable device assignment") {
		t.Errorf("Snapshot(n1) error = %v, want the node blocked by the unreadable pod", err)
	}
	if _, _, err := c.Snapshot("n2", 0, nil); err != nil {
		t.Errorf("Snapshot(n2): %v, want other nodes unaffected", err)
	}
	// Readable again: accounted as usual and the block lifted.
	mustSetPod(t, c, boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;"))
	if got := usage(t, c, "n1"); got[0] != u(1, 3000, 20) {
		t.Errorf("usage = %v after the assignment became readable", got)
	}
	// Gone: the block is lifted.
	if err := c.SetPod(boundPod("b", "n1", "garbage")); err == nil {
		t.Fatal("SetPod accepted garbage")
	}
	c.RemovePod(boundPod("b", "n1", ""))
	if _, _, err := c.Snapshot("n1", 0, nil); err != nil {
		t.Errorf("Snapshot(n1) after the unreadable pod left: %v", err)
	}
}

func TestSnapshotErrors(t *testing.T) {
	c := newCache(t)
	if _, _, err := c.Snapshot("nowhere", 0, nil); err != ErrUnknownNode {
		t.Errorf("unknown node: err = %v, want ErrUnknownNode", err)
	}
	bad := gpuNode("bad", 1)
	bad.Annotations[nvidia.RegisterAnnotation] = "garbage"
	c.SetNode(bad)
	if _, _, err := c.Snapshot("bad", 0, nil); err == nil || !strings.Contains(err.Error(), nvidia.RegisterAnnotation) {
		t.Errorf("garbage inventory: err = %v, want one naming the annotation", err)
	}
	plain := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}}
	c.SetNode(plain)
	cards, _, err := c.Snapshot("cpu", 0, nil)
	if err != nil || cards != nil {
		t.Errorf("node without cards: cards=%v err=%v, want nil, nil", cards, err)
	}
}

func TestAssumeRefusesAConfirmedPod(t *testing.T) {
	c := newCache(t)
	c.SetNode(gpuNode("n1", 1))
	mustSetPod(t, c, boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;"))
	if err := c.Assume(boundPod("a", "n1", ""), "n1", assignment(grant("n1-gpu0", 1, 1))); err == nil {
		t.Fatal("Assume of a pod that already holds cards succeeded")
	}
	if got := usage(t, c, "n1"); got[0] != u(1, 3000, 20) {
		t.Errorf("usage = %v, want unchanged", got)
	}
}

func TestSnapshotCopiesUsage(t *testing.T) {
	c := newCache(t)
	c.SetNode(gpuNode("n1", 1))
	mustSetPod(t, c, boundPod("a", "n1", "n1-gpu0,NVIDIA,3000,20:;"))
	_, used, _ := c.Snapshot("n1", 0, nil)
	used[0].MemoryMiB = 0
	if got := usage(t, c, "n1"); got[0].MemoryMiB != 3000 {
		t.Errorf("changing a snapshot changed the cache: %v", got)
	}
}

// An informer event carrying an older node object than the cache holds
// (by resourceVersion) never replaces the newer inventory.
func TestSetNodeKeepsTheNewerInventory(t *testing.T) {
	registry, err := vendors.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := New(registry)
	newer := gpuNode("n1", 4)
	newer.ResourceVersion = "20"
	older := gpuNode("n1", 2)
	older.ResourceVersion = "19"
	tests := []struct {
		name      string
		set       *corev1.Node
		wantApply bool
		wantCards int
	}{
		{"first object", newer, true, 4},
		{"older object ignored", older, false, 4},
		{"same version reapplied", newer, true, 4},
	}
	for _, tt := range tests {
		if got := c.SetNode(tt.set); got != tt.wantApply {
			t.Errorf("%s: SetNode applied = %v, want %v", tt.name, got, tt.wantApply)
		}
		if cards, _, _ := c.Snapshot("n1", 0, nil); len(cards) != tt.wantCards {
			t.Errorf("%s: %d cards, want %d", tt.name, len(cards), tt.wantCards)
		}
	}
	unversioned := gpuNode("n1", 2)
	if !c.SetNode(unversioned) {
		t.Error("an object without a numeric resourceVersion must be applied")
	}
}

// HAMi accounts a pod's init containers apart: on a card, the pod holds
// the larger of its biggest init grant and the sum of its regular grants,
// and once every init container has succeeded, its regular grants alone.
func TestInitContainersAreAccountedApart(t *testing.T) {
	withInit := func(initState *corev1.ContainerState) *corev1.Pod {
		p := boundPod("p", "n1", "n1-gpu0,NVIDIA,6000,50:;n1-gpu0,NVIDIA,3000,20:;n1-gpu0,NVIDIA,2000,10:;")
		p.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
		p.Spec.Containers = []corev1.Container{{Name: "a"}, {Name: "b"}}
		if initState != nil {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "setup", State: *initState}}
		}
		return p
	}
	succeeded := &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	failed := &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	running := &corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want devices.Usage
	}{
		// max(6000, 3000+2000) MiB, max(50, 20+10) cores, 2 regular sharers.
		{"init not started", withInit(nil), u(2, 6000, 50)},
		{"init running", withInit(running), u(2, 6000, 50)},
		{"init failed", withInit(failed), u(2, 6000, 50)},
		{"init succeeded: regular grants alone", withInit(succeeded), u(2, 5000, 30)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t)
			c.SetNode(gpuNode("n1", 1))
			if err := c.SetPod(tt.pod); err != nil {
				t.Fatal(err)
			}
			if got := usage(t, c, "n1")[0]; got != tt.want {
				t.Errorf("usage %+v, want %+v", got, tt.want)
			}
			c.RemovePod(tt.pod)
			if got := usage(t, c, "n1")[0]; got != (devices.Usage{}) {
				t.Errorf("usage after removal %+v, want none", got)
			}
		})
	}
}
