package coscheduling

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// reserve runs the HAMi plugin's PreFilter, Filter and Reserve of pod on
// the node, as a cycle that places it does.
func (h *harness) reserve(pod *corev1.Pod, node *corev1.Node) {
	h.t.Helper()
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	state := cycle()
	if _, st := h.hami.PreFilter(h.ctx, state, pod, nil); !st.IsSuccess() {
		h.t.Fatalf("HAMi PreFilter %s: %v", pod.Name, st)
	}
	if st := h.hami.Filter(h.ctx, state, pod, ni); !st.IsSuccess() {
		h.t.Fatalf("HAMi Filter %s: %v", pod.Name, st)
	}
	if st := h.hami.Reserve(h.ctx, state, pod, node.Name); !st.IsSuccess() {
		h.t.Fatalf("HAMi Reserve %s: %v", pod.Name, st)
	}
}

func (h *harness) reservationsAnnotation() (string, bool) {
	u, err := h.dynamic.Resource(v1alpha1.Resource).Namespace("ns").Get(h.ctx, "g", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	v, ok := u.GetAnnotations()[devices.GangReservationsAnnotation]
	return v, ok
}

// The cards of members waiting at Permit are published on their PodGroup,
// and taken off once none waits.
func TestReservationsPublished(t *testing.T) {
	pods := []*corev1.Pod{memberPod("g-0", "g", 30000), memberPod("g-1", "g", 30000), memberPod("g-2", "g", 30000)}
	objs := nodes(t, "2 nodes x 1 card of NVIDIA A100 40 GiB")
	h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{podGroup("g", 3)}, objects(objs, pods...)...)
	node := objs[0].(*corev1.Node)
	h.reserve(pods[0], node)
	if st, _ := h.plugin.Permit(h.ctx, cycle(), pods[0], node.Name); !st.IsWait() {
		t.Fatalf("Permit = %v, want Wait", st)
	}
	h.handle.wait(pods[0])
	h.plugin.reservations.changed("ns/g")
	var value string
	h.waitFor("reservations published", func() bool {
		v, ok := h.reservationsAnnotation()
		value = v
		return ok && strings.Contains(v, "g-0")
	})
	r, err := devices.ParseGangReservations(value)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Members) != 1 || r.Members[0].Node != node.Name || !strings.Contains(r.Members[0].Allocated["hami.io/vgpu-devices-allocated"], ",NVIDIA,30000,") {
		t.Fatalf("reservations %+v", r)
	}
	// The member is released: the annotation goes.
	h.plugin.rejectWaiting("ns/g", "test")
	h.hami.Unreserve(h.ctx, cycle(), pods[0], node.Name)
	h.plugin.Unreserve(h.ctx, cycle(), pods[0], node.Name)
	h.waitFor("reservations removed", func() bool {
		_, ok := h.reservationsAnnotation()
		return !ok
	})
}
