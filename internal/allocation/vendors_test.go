package allocation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// cardRef names a card by node, vendor and index.
type cardRef struct {
	node, vendor string
	index        int
}

// vendorCluster is a node with NVIDIA cards and Ascend 910B4 NPUs and a
// node with Hygon DCUs, the vendors of HAMi's chart, and each card's UUID.
func vendorCluster(t *testing.T) ([]devices.Vendor, []corev1.Node, map[cardRef]string) {
	t.Helper()
	vendors, err := clustervendors.Chart()
	if err != nil {
		t.Fatal(err)
	}
	spec := func(s string) simnode.Spec {
		parsed, err := simnode.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		return parsed
	}
	mixed := spec("1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB").Build("mixed", 0)[0]
	spec("1 node x 2 cards of Ascend910B4 32 GiB").AddTo(mixed)
	dcu := spec("1 node x 2 cards of Hygon DCU Z100 32 GiB").Build("dcu", 0)[0]
	nodes := []corev1.Node{*mixed, *dcu}
	uuids := map[cardRef]string{}
	for _, c := range Read(vendors, nodes, nil).Cards {
		uuids[cardRef{c.Node, c.Vendor, c.Index}] = c.UUID
	}
	if len(uuids) != 6 {
		t.Fatalf("cards %v, want 2 NVIDIA, 2 Ascend and 2 Hygon", uuids)
	}
	return vendors, nodes, uuids
}

// allocated encodes one pod's grants, one container each (none for a zero
// grant), as a vendor's allocated annotation.
func allocated(vendors []devices.Vendor, name string, grants ...devices.Grant) (string, string) {
	for _, v := range vendors {
		if v.Name() == name {
			_, key := v.AssignmentAnnotations()
			a := devices.Assignment{}
			for _, g := range grants {
				g.Vendor = name
				if g.UUID == "" {
					a = append(a, nil)
					continue
				}
				a = append(a, []devices.Grant{g})
			}
			return key, devices.EncodeAssignment(a)
		}
	}
	panic("no vendor " + name)
}

func TestReadVendors(t *testing.T) {
	vendors, nodes, uuid := vendorCluster(t)
	nv0, npu0, npu1, dcu1 := cardRef{"mixed-0", nvidia.VendorWord, 0}, cardRef{"mixed-0", "Ascend910B4", 0},
		cardRef{"mixed-0", "Ascend910B4", 1}, cardRef{"dcu-0", hygon.VendorWord, 1}
	grant := func(c cardRef, mem, cores int32) devices.Grant {
		return devices.Grant{UUID: uuid[c], MemoryMiB: mem, Cores: cores}
	}
	pod := func(name, node string, containers int, annotations ...[2]string) corev1.Pod {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: map[string]string{devices.AssignedNode: node}},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
		for i := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+i))})
		}
		for _, kv := range annotations {
			p.Annotations[kv[0]] = kv[1]
		}
		return p
	}
	with := func(key, value string) [2]string { return [2]string{key, value} }
	tests := []struct {
		name string
		pods []corev1.Pod
		// wantUsed are sharers, memory and cores of the cards named;
		// the others hold nothing.
		wantUsed     map[cardRef][3]int64
		wantGrants   map[string]int
		wantProblems []string
		wantOver     int
	}{
		{name: "a Hygon pod",
			pods:       []corev1.Pod{pod("dcu", "dcu-0", 1, with(allocated(vendors, hygon.VendorWord, grant(dcu1, 4000, 30))))},
			wantUsed:   map[cardRef][3]int64{dcu1: {1, 4000, 30}},
			wantGrants: map[string]int{"ns/dcu": 1}},
		{name: "an Ascend pod and an NVIDIA pod on one node",
			pods: []corev1.Pod{
				pod("npu", "mixed-0", 1, with(allocated(vendors, "Ascend910B4", grant(npu0, 8192, 10)))),
				pod("gpu", "mixed-0", 1, with(allocated(vendors, nvidia.VendorWord, grant(nv0, 2000, 10)))),
			},
			wantUsed:   map[cardRef][3]int64{npu0: {1, 8192, 10}, nv0: {1, 2000, 10}},
			wantGrants: map[string]int{"ns/npu": 1, "ns/gpu": 1}},
		{name: "a pod holding cards of two vendors",
			pods: []corev1.Pod{pod("two", "mixed-0", 2,
				with(allocated(vendors, nvidia.VendorWord, grant(nv0, 2000, 10), devices.Grant{})),
				with(allocated(vendors, "Ascend910B4", devices.Grant{}, grant(npu1, 8192, 0))))},
			wantUsed:   map[cardRef][3]int64{nv0: {1, 2000, 10}, npu1: {1, 8192, 0}},
			wantGrants: map[string]int{"ns/two": 2}},
		{name: "an Ascend card over-committed",
			pods: []corev1.Pod{
				pod("a", "mixed-0", 1, with(allocated(vendors, "Ascend910B4", grant(npu0, 30000, 0)))),
				pod("b", "mixed-0", 1, with(allocated(vendors, "Ascend910B4", grant(npu0, 30000, 0)))),
			},
			wantUsed:   map[cardRef][3]int64{npu0: {2, 60000, 0}},
			wantGrants: map[string]int{"ns/a": 1, "ns/b": 1}, wantOver: 1},
		{name: "an undecodable Ascend assignment is reported, the pod's NVIDIA grant counted",
			pods: []corev1.Pod{pod("half", "mixed-0", 1,
				with(allocated(vendors, nvidia.VendorWord, grant(nv0, 1000, 0))),
				with(mustKey(vendors, "Ascend910B4"), "x,Ascend910B4,lots,0:;"))},
			wantUsed:     map[cardRef][3]int64{nv0: {1, 1000, 0}},
			wantGrants:   map[string]int{"ns/half": 1},
			wantProblems: []string{"hami.io/Ascend910B4-devices-allocated"}},
		{name: "an NVIDIA card in the Hygon annotation is not a Hygon card",
			pods:         []corev1.Pod{pod("wrong", "mixed-0", 1, with(allocated(vendors, hygon.VendorWord, grant(nv0, 1000, 0))))},
			wantGrants:   map[string]int{"ns/wrong": 1},
			wantProblems: []string{"holds card " + uuid[nv0] + " that node mixed-0 does not list"}},
		{name: "a pod moved off its hami.io/vgpu-node is reported once",
			pods: func() []corev1.Pod {
				p := pod("moved", "mixed-0", 2,
					with(allocated(vendors, nvidia.VendorWord, grant(nv0, 1000, 0), devices.Grant{})),
					with(allocated(vendors, "Ascend910B4", devices.Grant{}, grant(npu0, 1000, 0))))
				p.Annotations[devices.AssignedNode] = "dcu-0"
				return []corev1.Pod{p}
			}(),
			wantProblems: []string{`hami.io/vgpu-node is "dcu-0"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Read(vendors, nodes, tt.pods)
			if len(r.UnreadableNodes) != 0 || len(r.Cards) != 6 {
				t.Fatalf("cards %d, unreadable %v; want 6 and none", len(r.Cards), r.UnreadableNodes)
			}
			for _, c := range r.Cards {
				ref := cardRef{c.Node, c.Vendor, c.Index}
				if got := [3]int64{int64(c.Used.Sharers), c.Used.MemoryMiB, c.Used.Cores}; got != tt.wantUsed[ref] {
					t.Errorf("card %v used %v, want %v", ref, got, tt.wantUsed[ref])
				}
			}
			for pod, n := range tt.wantGrants {
				if len(r.Grants[pod]) != n {
					t.Errorf("grants of %s = %v, want %d", pod, r.Grants[pod], n)
				}
			}
			if len(r.PodProblems) != len(tt.wantProblems) {
				t.Fatalf("problems %v, want %q", r.PodProblems, tt.wantProblems)
			}
			for i, want := range tt.wantProblems {
				if !strings.Contains(r.PodProblems[i], want) {
					t.Errorf("problem %q, want one containing %q", r.PodProblems[i], want)
				}
			}
			if over := Overcommitments(r.Cards); len(over) != tt.wantOver {
				t.Errorf("Overcommitments = %v, want %d", over, tt.wantOver)
			}
		})
	}
}

// mustKey is the vendor's allocated annotation key.
func mustKey(vendors []devices.Vendor, name string) string {
	key, _ := allocated(vendors, name)
	return key
}

// Cards come by node, then vendor in the order given, then index; a
// vendor's unreadable cards are reported with the vendor named and the
// node's other vendors still read.
func TestReadVendorOrderAndErrors(t *testing.T) {
	vendors, nodes, _ := vendorCluster(t)
	broken := nodes[0].DeepCopy()
	broken.Annotations["hami.io/node-register-Ascend910B4"] = "{not json"
	r := Read(vendors, []corev1.Node{nodes[1], *broken}, nil)
	var got []string
	for _, c := range r.Cards {
		got = append(got, c.Node+"/"+c.Vendor+"/"+string(rune('0'+c.Index)))
	}
	if want := "dcu-0/DCU/0 dcu-0/DCU/1 mixed-0/NVIDIA/0 mixed-0/NVIDIA/1"; strings.Join(got, " ") != want {
		t.Errorf("cards %v, want %s", got, want)
	}
	if len(r.UnreadableNodes) != 1 || !strings.HasPrefix(r.UnreadableNodes[0], "node mixed-0: Ascend910B4: ") {
		t.Errorf("unreadable %v, want mixed-0's Ascend910B4 cards", r.UnreadableNodes)
	}
	if !strings.HasPrefix(r.NodeErrors["mixed-0"], "Ascend910B4: ") {
		t.Errorf("NodeErrors %v, want mixed-0's reason naming Ascend910B4", r.NodeErrors)
	}
}

// An Ascend NPU whose node runs the hami-core soft split has 100 cores
// (percent), as the scheduler checks them; other NPUs their registered
// ones.
func TestReadAscendHAMiCoreCores(t *testing.T) {
	vendors, nodes, uuid := vendorCluster(t)
	npu0 := cardRef{"mixed-0", "Ascend910B4", 0}
	soft := nodes[0].DeepCopy()
	soft.Annotations[ascend.NodeHAMiCoreAnnotation] = "true"
	tests := []struct {
		name     string
		node     corev1.Node
		cores    []int32 // one pod per entry, on npu0
		wantOver int
	}{
		{name: "hami-core: 25 and 60 of 100", node: *soft, cores: []int32{25, 60}},
		{name: "hami-core: 60 and 60 of 100", node: *soft, cores: []int32{60, 60}, wantOver: 1},
		{name: "template: 25 of the registered 20", node: nodes[0], cores: []int32{25}, wantOver: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []corev1.Pod
			for i, cores := range tt.cores {
				key, value := allocated(vendors, "Ascend910B4", devices.Grant{UUID: uuid[npu0], MemoryMiB: 1000, Cores: cores})
				pods = append(pods, corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string(rune('a' + i)), Annotations: map[string]string{key: value, devices.AssignedNode: "mixed-0"}},
					Spec:       corev1.PodSpec{NodeName: "mixed-0", Containers: []corev1.Container{{Name: "npu"}}},
					Status:     corev1.PodStatus{Phase: corev1.PodRunning},
				})
			}
			r := Read(vendors, []corev1.Node{tt.node}, pods)
			if over := Overcommitments(r.Cards); len(over) != tt.wantOver {
				t.Errorf("Overcommitments = %v, want %d", over, tt.wantOver)
			}
		})
	}
}
