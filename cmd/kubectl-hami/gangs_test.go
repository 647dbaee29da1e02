package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// podGroup is a PodGroup with the annotations.
func podGroup(ns, name string, annotations map[string]string) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 4},
	}
}

// reservations is the value of devices.GangReservationsAnnotation listing
// the members.
func reservations(members ...devices.GangReservation) string {
	data, err := json.Marshal(devices.GangReservations{Members: members})
	if err != nil {
		panic(err)
	}
	return string(data)
}

// reserved is a member of a gang waiting at Permit on node, holding the
// NVIDIA assignment.
func reserved(pod, uid, node, allocated string) devices.GangReservation {
	return devices.GangReservation{Pod: pod, UID: uid, Node: node, Allocated: map[string]string{nvidia.AllocatedAnnotation: allocated}}
}

// gangMember is the pod of a member of PodGroup group, as it waits at
// Permit: unbound and without any annotation of the scheduler's.
func gangMember(ns, name, uid, group string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Labels: map[string]string{v1alpha1.PodGroupLabel: group}},
		Spec:       corev1.PodSpec{SchedulerName: "hami-scheduler", Containers: []corev1.Container{{Name: "worker"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// gangCluster is cluster() and the gang ml/trainers, whose members wait at
// Permit: trainers-0 and trainers-1 hold cards of gpu-a (counted, marked),
// trainers-2 one of gpu-legacy; trainers-3 was let through and is bound
// (counted once, from its annotation), trainers-4 was deleted and
// trainers-5 recreated (both stale). default/idle has no member waiting;
// batch/garbled's reservations cannot be read (a warning).
func gangCluster() []runtime.Object {
	objects := cluster()
	value := reservations(
		reserved("trainers-0", "uid-t0", "gpu-a", t4b+",NVIDIA,4000,30:;"),
		reserved("trainers-1", "uid-t1", "gpu-a", t4a+",NVIDIA,2000,10:;"),
		reserved("trainers-2", "uid-t2", "gpu-legacy", p4b+",NVIDIA,1000,0:;"),
		reserved("trainers-3", "uid-t3", "gpu-a", t4b+",NVIDIA,1000,0:;"),
		reserved("trainers-4", "uid-t4", "gpu-a", t4b+",NVIDIA,5000,50:;"),
		reserved("trainers-5", "uid-t5-old", "gpu-a", t4b+",NVIDIA,5000,50:;"),
	)
	bound := pod("ml", "trainers-3", "gpu-a", corev1.PodRunning, t4b+",NVIDIA,1000,0:;", "worker")
	bound.UID = "uid-t3"
	bound.Labels = map[string]string{v1alpha1.PodGroupLabel: "trainers"}
	bound.Annotations[devices.BindPhase] = devices.BindPhaseSuccess
	return append(objects,
		podGroup("ml", "trainers", map[string]string{devices.GangReservationsAnnotation: value}),
		podGroup("default", "idle", nil),
		podGroup("batch", "garbled", map[string]string{devices.GangReservationsAnnotation: "{not json"}),
		gangMember("ml", "trainers-0", "uid-t0", "trainers"),
		gangMember("ml", "trainers-1", "uid-t1", "trainers"),
		gangMember("ml", "trainers-2", "uid-t2", "trainers"),
		bound,
		gangMember("ml", "trainers-5", "uid-t5", "trainers"),
	)
}

// TestTopGang checks the figures of a waiting gang behind the rendering,
// independently of the golden files.
func TestTopGang(t *testing.T) {
	out, err := run(t, gangCluster(), "top", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc Top
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]TopNode{}
	for _, n := range doc.Nodes {
		nodes[n.Name] = n
	}
	a := nodes["gpu-a"]
	if len(a.Cards) != 2 {
		t.Fatalf("gpu-a cards = %+v", a.Cards)
	}
	// cluster()'s use, and the gang's.
	c0, c1 := a.Cards[0], a.Cards[1]
	if c0.MemoryMiB != (Amount{9000 + 2000, 15360}) || c0.Cores != (Amount{60 + 10, 100}) || c0.Sharers != (Amount{3 + 1, 10}) {
		t.Errorf("gpu-a card 0 = %+v, want trainers-1's reservation counted", c0)
	}
	if c1.MemoryMiB != (Amount{4024 + 4000 + 1000, 15360}) || c1.Cores != (Amount{20 + 30, 100}) || c1.Sharers != (Amount{2 + 2, 10}) {
		t.Errorf("gpu-a card 1 = %+v, want trainers-0's reservation and trainers-3's annotation, once", c1)
	}
	var holders []string
	for _, c := range a.Cards {
		for _, g := range c.Pods {
			if strings.HasPrefix(g.Name, "trainers-") {
				holders = append(holders, g.Name+"["+g.Container+"]="+g.ReservedFor)
			}
		}
	}
	want := []string{"trainers-1[worker]=ml/trainers", "trainers-3[worker]=", "trainers-0[worker]=ml/trainers"}
	if diff := cmp.Diff(want, holders); diff != "" {
		t.Errorf("gang holders on gpu-a (-want +got):\n%s", diff)
	}
	if legacy := nodes["gpu-legacy"]; legacy.Cards[1].Sharers.Used != 1 || legacy.Cards[1].Pods[0].ReservedFor != "ml/trainers" {
		t.Errorf("gpu-legacy card 1 = %+v, want trainers-2's reservation", legacy.Cards[1])
	}
	if len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], "PodGroup batch/garbled: hami.io/gang-reservations") {
		t.Errorf("warnings = %q, want one for batch/garbled", doc.Warnings)
	}

	// -n: another namespace's waiting member counts, and is not listed.
	out, err = run(t, gangCluster(), "top", "gpu-a", "-n", "default")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "11000/15360") || !strings.Contains(out, "default/web (+3 in other namespaces)") || strings.Contains(out, "trainers") {
		t.Errorf("top gpu-a -n default:\n%s\nwant the gang's reservations counted, not listed", out)
	}
}

// TestTopPodGroupsUnavailable checks that PodGroups that cannot be listed
// never fail the command: an API server that does not serve them shows
// what it would without gangs, any other error is a warning.
func TestTopPodGroupsUnavailable(t *testing.T) {
	podGroups := schema.GroupResource{Group: v1alpha1.GroupName, Resource: "podgroups"}
	tests := []struct {
		name        string
		err         error
		wantWarning string
	}{
		{name: "not served", err: apierrors.NewNotFound(podGroups, "")},
		{name: "no such resource", err: &meta.NoResourceMatchError{PartialResource: v1alpha1.Resource}},
		{name: "forbidden", err: apierrors.NewForbidden(podGroups, "", nil),
			wantWarning: "Warning: PodGroups (podgroups.scheduling.x-k8s.io) cannot be listed: the cards that members of gangs waiting at Permit hold are not shown: "},
		{name: "server error", err: apierrors.NewInternalError(errors.New("etcd is down")),
			wantWarning: "Warning: PodGroups (podgroups.scheduling.x-k8s.io) cannot be listed"},
	}
	// The cluster as an API server without PodGroups shows it.
	var withoutGroups []runtime.Object
	for _, o := range gangCluster() {
		if _, ok := o.(*v1alpha1.PodGroup); !ok {
			withoutGroups = append(withoutGroups, o)
		}
	}
	plain, err := run(t, withoutGroups, "top")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, dynamicClient := fakeClients(t, gangCluster())
			dynamicClient.PrependReactor("list", "podgroups", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err
			})
			got, err := runWith(t, client, dynamicClient, "top")
			if err != nil {
				t.Fatalf("kubectl-hami top: %v", err)
			}
			body := got
			if tt.wantWarning != "" {
				first, rest, _ := strings.Cut(got, "\n")
				if !strings.HasPrefix(first, tt.wantWarning) {
					t.Errorf("first line %q, want a warning starting %q", first, tt.wantWarning)
				}
				body = strings.TrimPrefix(rest, "\n")
			}
			// Without their gangs, the waiting members hold nothing.
			if diff := cmp.Diff(plain, body); diff != "" {
				t.Errorf("output differs from cluster()'s (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHolderName(t *testing.T) {
	tests := []struct {
		grant Grant
		want  string
	}{
		{Grant{Namespace: "ml", Name: "train"}, "ml/train"},
		{Grant{Namespace: "ml", Name: "trainers-0", ReservedFor: "ml/trainers"}, "ml/trainers-0 (gang ml/trainers, waiting)"},
	}
	for _, tt := range tests {
		if got := holderName(tt.grant); got != tt.want {
			t.Errorf("holderName(%+v) = %q, want %q", tt.grant, got, tt.want)
		}
	}
}
