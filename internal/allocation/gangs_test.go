package allocation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

func TestReadWithGangs(t *testing.T) {
	spec := simnode.Spec{Nodes: 1, Cards: 2, Model: "Tesla T4", MemoryMiB: 15360, Split: 4, Cores: 100}
	node := *spec.Build("n", 0)[0]
	vendors := nvidiaOnly(t)
	a, b := simnode.CardUUID("n-0", 0), simnode.CardUUID("n-0", 1)
	// waiting is a gang member's pod as it waits at Permit: unbound, no
	// annotation of the scheduler's.
	waiting := func(name, uid string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), Annotations: map[string]string{}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodPending},
		}
	}
	// handedOver is the pod once PreBind wrote its assignment for node,
	// in the bind phase given; bound when nodeName is set.
	handedOver := func(name, uid, node, nodeName, phase, allocated string) corev1.Pod {
		p := waiting(name, uid)
		p.Spec.NodeName = nodeName
		p.Annotations[nvidia.AllocatedAnnotation] = allocated
		p.Annotations[devices.AssignedNode] = node
		p.Annotations[devices.BindPhase] = phase
		if nodeName != "" {
			p.Status.Phase = corev1.PodRunning
		}
		return p
	}
	member := func(pod, uid, node, allocated string) devices.GangReservation {
		return devices.GangReservation{Pod: pod, UID: uid, Node: node, Allocated: map[string]string{nvidia.AllocatedAnnotation: allocated}}
	}
	gang := func(name string, members ...devices.GangReservation) WaitingGang {
		return WaitingGang{Namespace: "ns", Name: name, Members: members}
	}
	terminated := waiting("w1", "u1")
	terminated.Status.Phase = corev1.PodFailed

	tests := []struct {
		name  string
		pods  []corev1.Pod
		gangs []WaitingGang
		// wantUsedA is card a's sharers, memory and cores.
		wantUsedA [3]int32
		// wantHolders are card a's holders, as pod=reservedFor.
		wantHolders []string
		wantProblem string
	}{
		{name: "a waiting member's cards count, marked with its gang",
			pods:        []corev1.Pod{waiting("w1", "u1")},
			gangs:       []WaitingGang{gang("pg", member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;"))},
			wantUsedA:   [3]int32{1, 4000, 30},
			wantHolders: []string{"w1=ns/pg"}},
		{name: "beside a bound pod's grant",
			pods: []corev1.Pod{
				handedOver("bound", "u0", "n-0", "n-0", devices.BindPhaseSuccess, a+",NVIDIA,2000,10:;"),
				waiting("w1", "u1"), waiting("w2", "u2"),
			},
			gangs: []WaitingGang{gang("pg",
				member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;"),
				member("w2", "u2", "n-0", b+",NVIDIA,4000,30:;"))},
			wantUsedA:   [3]int32{2, 6000, 40},
			wantHolders: []string{"bound=", "w1=ns/pg"}},
		{name: "a member whose pod is gone is stale",
			gangs: []WaitingGang{gang("pg", member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;"))}},
		{name: "a member whose pod was recreated (another UID) is stale",
			pods:  []corev1.Pod{waiting("w1", "u2")},
			gangs: []WaitingGang{gang("pg", member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;"))}},
		{name: "a member whose pod terminated is stale",
			pods:  []corev1.Pod{terminated},
			gangs: []WaitingGang{gang("pg", member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;"))}},
		{name: "a member on a node not read is stale",
			pods:  []corev1.Pod{waiting("w1", "u1")},
			gangs: []WaitingGang{gang("pg", member("w1", "u1", "n-9", a+",NVIDIA,4000,30:;"))}},
		{name: "a member of another namespace's gang is not this pod",
			pods:  []corev1.Pod{waiting("w1", "u1")},
			gangs: []WaitingGang{{Namespace: "other", Name: "pg", Members: []devices.GangReservation{member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;")}}}},
		{name: "a bound member counts once, from its annotation",
			pods:        []corev1.Pod{handedOver("w1", "u1", "n-0", "n-0", devices.BindPhaseSuccess, a+",NVIDIA,4000,30:;")},
			gangs:       []WaitingGang{gang("pg", member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;"))},
			wantUsedA:   [3]int32{1, 4000, 30},
			wantHolders: []string{"w1="}},
		{name: "a member being bound counts once, from its annotation",
			pods:        []corev1.Pod{handedOver("w1", "u1", "n-0", "", devices.BindPhaseAllocating, a+",NVIDIA,4000,30:;")},
			gangs:       []WaitingGang{gang("pg", member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;"))},
			wantUsedA:   [3]int32{1, 4000, 30},
			wantHolders: []string{"w1="}},
		{name: "a failed former hand-over's annotation does not replace the reservation",
			pods:        []corev1.Pod{handedOver("w1", "u1", "n-0", "", devices.BindPhaseFailed, a+",NVIDIA,9000,90:;")},
			gangs:       []WaitingGang{gang("pg", member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;"))},
			wantUsedA:   [3]int32{1, 4000, 30},
			wantHolders: []string{"w1=ns/pg"}},
		{name: "a pod listed twice counts once",
			pods: []corev1.Pod{waiting("w1", "u1")},
			gangs: []WaitingGang{
				gang("pg", member("w1", "u1", "n-0", a+",NVIDIA,4000,30:;")),
				gang("pg-old", member("w1", "", "n-0", a+",NVIDIA,4000,30:;")),
			},
			wantUsedA:   [3]int32{1, 4000, 30},
			wantHolders: []string{"w1=ns/pg"}},
		{name: "an undecodable reservation is reported on its node",
			pods:        []corev1.Pod{waiting("w1", "u1")},
			gangs:       []WaitingGang{gang("pg", member("w1", "u1", "n-0", a+",NVIDIA,lots,30:;"))},
			wantProblem: "reserved for waiting gang ns/pg: hami.io/vgpu-devices-allocated"},
		{name: "a reserved card the node does not list is reported",
			pods:        []corev1.Pod{waiting("w1", "u1")},
			gangs:       []WaitingGang{gang("pg", member("w1", "u1", "n-0", "GPU-elsewhere,NVIDIA,1,0:;"))},
			wantProblem: "reserved for waiting gang ns/pg: holds card GPU-elsewhere that node n-0 does not list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ReadWithGangs(vendors, []corev1.Node{node}, tt.pods, tt.gangs)
			if len(r.Cards) != 2 || r.Cards[0].UUID != a {
				t.Fatalf("cards = %+v, want the node's two cards in index order", r.Cards)
			}
			u := r.Cards[0].Used
			if got := [3]int32{u.Sharers, int32(u.MemoryMiB), int32(u.Cores)}; got != tt.wantUsedA {
				t.Errorf("card a used = %v, want %v", got, tt.wantUsedA)
			}
			var holders []string
			for _, h := range r.Cards[0].Holders {
				holders = append(holders, h.Pod+"="+h.ReservedFor)
			}
			if diff := cmp.Diff(tt.wantHolders, holders); diff != "" {
				t.Errorf("card a holders (-want +got):\n%s", diff)
			}
			for _, c := range r.Cards {
				if len(c.Holders) != len(c.Pods) || int32(len(c.Holders)) != c.Used.Sharers {
					t.Errorf("card %d: holders %v, pods %v, sharers %d; want them aligned", c.Index, c.Holders, c.Pods, c.Used.Sharers)
				}
			}
			for _, h := range r.Cards[0].Holders {
				for _, g := range r.Grants[h.Namespace+"/"+h.Pod] {
					if g.ReservedFor != h.ReservedFor {
						t.Errorf("grant %+v of %s: reserved for %q, want %q as its holder", g, h.Pod, g.ReservedFor, h.ReservedFor)
					}
				}
			}
			if tt.wantProblem == "" {
				if len(r.PodProblems) != 0 {
					t.Errorf("problems = %v, want none", r.PodProblems)
				}
				return
			}
			if len(r.PodIssues) != 1 || !strings.Contains(r.PodIssues[0].Problem, tt.wantProblem) || r.PodIssues[0].Node != "n-0" || r.PodIssues[0].Pod != "w1" {
				t.Errorf("pod issues = %+v, want one of ns/w1 on n-0 mentioning %q", r.PodIssues, tt.wantProblem)
			}
		})
	}
}

func TestWaitingGangOf(t *testing.T) {
	value := `{"updated":"2025-01-02T03:04:05Z","members":[{"pod":"w1","uid":"u1","node":"n-0","allocated":{"hami.io/vgpu-devices-allocated":"GPU-a,NVIDIA,4000,30:;"}}]}`
	tests := []struct {
		name        string
		annotations map[string]string
		want        WaitingGang
		wantOK      bool
		wantErr     string
	}{
		{name: "none waits", annotations: map[string]string{"other": "x"}},
		{name: "one member",
			annotations: map[string]string{devices.GangReservationsAnnotation: value},
			want: WaitingGang{Namespace: "ns", Name: "pg", Members: []devices.GangReservation{{
				Pod: "w1", UID: "u1", Node: "n-0", Allocated: map[string]string{nvidia.AllocatedAnnotation: "GPU-a,NVIDIA,4000,30:;"}}}},
			wantOK: true},
		{name: "garbage",
			annotations: map[string]string{devices.GangReservationsAnnotation: "{"},
			wantErr:     "PodGroup ns/pg: hami.io/gang-reservations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := WaitingGangOf("ns", "pg", tt.annotations)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || ok != tt.wantOK {
				t.Fatalf("ok %v, error %v; want %v and none", ok, err, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
