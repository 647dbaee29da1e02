package allocation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// TestUnscheduled: device pods left to default-scheduler are named, pending
// or bound without a card; pods of another scheduler, pods handed to HAMi,
// pods without devices and terminated pods are not.
func TestUnscheduled(t *testing.T) {
	limits := corev1.ResourceList{nvidia.DefaultCountName: resource.MustParse("1"), nvidia.DefaultMemoryName: resource.MustParse("2000")}
	pod := func(name, scheduler, node string, phase corev1.PodPhase, l corev1.ResourceList, annotations map[string]string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: annotations},
			Spec: corev1.PodSpec{SchedulerName: scheduler, NodeName: node,
				Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: l}}}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	pods := []corev1.Pod{
		pod("early", corev1.DefaultSchedulerName, "", corev1.PodPending, limits, nil),
		pod("bound-raw", corev1.DefaultSchedulerName, "gpu-0", corev1.PodRunning, limits, nil),
		pod("routed", "hami-scheduler", "", corev1.PodPending, limits, nil),
		pod("volcano", "volcano", "", corev1.PodPending, limits, nil),
		pod("web", corev1.DefaultSchedulerName, "", corev1.PodPending, nil, nil),
		pod("done", corev1.DefaultSchedulerName, "gpu-0", corev1.PodSucceeded, limits, nil),
		pod("handed", corev1.DefaultSchedulerName, "gpu-0", corev1.PodRunning, limits, map[string]string{devices.BindPhase: devices.BindPhaseSuccess}),
	}
	got := Unscheduled(nvidiaOnly(t), pods)
	if len(got) != 2 || !strings.HasPrefix(got[0], "default/bound-raw asks for devices but names default-scheduler") ||
		!strings.Contains(got[0], "runs on gpu-0 with no card assigned") ||
		!strings.HasPrefix(got[1], "default/early ") || !strings.Contains(got[1], "is pending: it was created before the webhook was ready") {
		t.Fatalf("Unscheduled() = %q", got)
	}
	var out strings.Builder
	WriteTable(&out, nvidiaOnly(t), Read(nvidiaOnly(t), nil, pods), pods)
	if !strings.Contains(out.String(), "WARNING: default/early asks for devices") {
		t.Errorf("table lacks the warning:\n%s", out.String())
	}
}
