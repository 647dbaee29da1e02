package allocation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// nvidiaOnly are the scheduler's built-in vendors: NVIDIA alone.
func nvidiaOnly(t *testing.T) []devices.Vendor {
	t.Helper()
	vendors, err := clustervendors.FromConfigs(nil)
	if err != nil {
		t.Fatal(err)
	}
	return vendors
}

func TestRead(t *testing.T) {
	spec := simnode.Spec{Nodes: 1, Cards: 2, Model: "Tesla T4", MemoryMiB: 15360, Split: 2, Cores: 100}
	node := *spec.Build("n", 0)[0]
	vendors := nvidiaOnly(t)
	a, b := simnode.CardUUID("n-0", 0), simnode.CardUUID("n-0", 1)
	pod := func(name, node string, phase corev1.PodPhase, allocated string) corev1.Pod {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: map[string]string{}},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main"}}},
			Status:     corev1.PodStatus{Phase: phase},
		}
		if allocated != "" {
			p.Annotations[nvidia.AllocatedAnnotation] = allocated
			p.Annotations[devices.AssignedNode] = node
		}
		return p
	}
	tests := []struct {
		name            string
		pods            []corev1.Pod
		wantUsedA       [3]int32 // sharers, memory, cores
		wantOver        int
		wantProblemText string
	}{
		{name: "two pods share card a",
			pods: []corev1.Pod{
				pod("p1", "n-0", corev1.PodRunning, a+",NVIDIA,4000,30:;"),
				pod("p2", "n-0", corev1.PodPending, a+",NVIDIA,6000,20:;"),
			},
			wantUsedA: [3]int32{2, 10000, 50}},
		{name: "terminated and unbound pods hold nothing",
			pods: []corev1.Pod{
				pod("done", "n-0", corev1.PodSucceeded, a+",NVIDIA,4000,30:;"),
				pod("failed", "n-0", corev1.PodFailed, a+",NVIDIA,4000,30:;"),
				pod("unbound", "", corev1.PodPending, a+",NVIDIA,4000,30:;"),
				pod("plain", "n-0", corev1.PodRunning, ""),
			}},
		{name: "a third sharer over-commits",
			pods: []corev1.Pod{
				pod("p1", "n-0", corev1.PodRunning, a+",NVIDIA,1000,0:;"),
				pod("p2", "n-0", corev1.PodRunning, a+",NVIDIA,1000,0:;"),
				pod("p3", "n-0", corev1.PodRunning, a+",NVIDIA,1000,0:"+b+",NVIDIA,1000,0:;"),
			},
			wantUsedA: [3]int32{3, 3000, 0}, wantOver: 1},
		{name: "memory over-commits",
			pods:      []corev1.Pod{pod("big", "n-0", corev1.PodRunning, a+",NVIDIA,16000,0:;")},
			wantUsedA: [3]int32{1, 16000, 0}, wantOver: 1},
		{name: "garbage annotation is reported, not counted",
			pods:            []corev1.Pod{pod("bad", "n-0", corev1.PodRunning, "GPU-x,NVIDIA,many,0:;")},
			wantProblemText: "pod ns/bad"},
		{name: "a pod whose hami.io/vgpu-node is not its node is reported, not counted",
			pods: []corev1.Pod{func() corev1.Pod {
				p := pod("moved", "n-0", corev1.PodRunning, a+",NVIDIA,1000,0:;")
				p.Annotations[devices.AssignedNode] = "n-9"
				return p
			}()},
			wantProblemText: `hami.io/vgpu-node is "n-9"`},
		{name: "an empty assignment holds nothing",
			pods: []corev1.Pod{pod("sidecar-only", "n-0", corev1.PodRunning, ";;")}},
		{name: "card of another node is reported",
			pods:            []corev1.Pod{pod("lost", "n-0", corev1.PodRunning, "GPU-elsewhere,NVIDIA,1,0:;")},
			wantProblemText: "does not list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Read(vendors, []corev1.Node{node}, tt.pods)
			cards, grants, problems := r.Cards, r.Grants, r.PodProblems
			if len(r.UnreadableNodes) != 0 {
				t.Errorf("unreadable nodes %v, want none", r.UnreadableNodes)
			}
			if len(cards) != 2 || cards[0].UUID != a {
				t.Fatalf("cards = %+v, want the node's two cards in index order", cards)
			}
			u := cards[0].Used
			if got := [3]int32{u.Sharers, int32(u.MemoryMiB), int32(u.Cores)}; got != tt.wantUsedA {
				t.Errorf("card a used = %v, want %v", got, tt.wantUsedA)
			}
			if over := Overcommitments(cards); len(over) != tt.wantOver {
				t.Errorf("Overcommitments = %v, want %d", over, tt.wantOver)
			}
			if tt.wantProblemText != "" {
				if len(problems) != 1 || !strings.Contains(problems[0], tt.wantProblemText) {
					t.Errorf("problems = %v, want one mentioning %q", problems, tt.wantProblemText)
				}
			} else if len(problems) != 0 {
				t.Errorf("problems = %v, want none", problems)
			}
			if tt.wantUsedA[0] > 0 && len(grants["ns/p1"])+len(grants["ns/big"]) == 0 {
				t.Errorf("grants = %v, want the holders' grants", grants)
			}
			if len(r.PodIssues) != len(problems) {
				t.Errorf("PodIssues = %v, want one per problem %v", r.PodIssues, problems)
			}
			for _, c := range cards {
				if len(c.Holders) != len(c.Pods) || int32(len(c.Holders)) != c.Used.Sharers {
					t.Errorf("card %d: holders %v, pods %v, sharers %d; want them aligned", c.Index, c.Holders, c.Pods, c.Used.Sharers)
				}
			}
		})
	}

	// A node whose register annotation is garbage is skipped and reported.
	bad := node.DeepCopy()
	bad.Name = "bad"
	bad.Annotations[nvidia.RegisterAnnotation] = "{not json"
	// Its pods' cards cannot be matched: that is the node's problem, not
	// theirs.
	onBad := pod("on-bad", "bad", corev1.PodRunning, a+",NVIDIA,1000,0:;")
	r := Read(vendors, []corev1.Node{*bad}, []corev1.Pod{onBad})
	if len(r.Cards) != 0 || len(r.UnreadableNodes) != 1 || !strings.Contains(r.UnreadableNodes[0], "node bad") {
		t.Errorf("garbage node: cards %v, unreadable %v; want none and one", r.Cards, r.UnreadableNodes)
	}
	if r.NodeErrors["bad"] == "" || len(r.PodProblems) != 0 {
		t.Errorf("garbage node: NodeErrors %v, pod problems %v; want the node's reason and no pod problem", r.NodeErrors, r.PodProblems)
	}

	// Cordoned cards are marked.
	cordoned := node.DeepCopy()
	cordoned.Annotations[devices.DeviceCordon] = " " + b + " "
	r = Read(vendors, []corev1.Node{*cordoned}, nil)
	if len(r.Cards) != 2 || r.Cards[0].Cordoned || !r.Cards[1].Cordoned {
		t.Errorf("cordon %q: cards %+v, want the second cordoned", b, r.Cards)
	}
}
