package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// webhookLabel marks the one namespace the e2e webhook is registered for,
// so that the other tests' pods are not mutated.
const webhookLabel = "e2e.hami.io/webhook"

// TestWebhookRoutesDevicePods registers the admission webhook with the real
// apiserver (URL webhook on 127.0.0.1, CA bundle generated here) and
// creates pods through the API: a pod that asks only for GPU memory and
// names no scheduler is given a card count and hami-scheduler, then runs on
// a simulated card; pods the rules refuse are refused with their reason.
func TestWebhookRoutesDevicePods(t *testing.T) {
	e := newEnv(t, "webhook")
	patch := []byte(`{"metadata":{"labels":{"` + webhookLabel + `":"on"}}}`)
	if _, err := controlPlane.Client.CoreV1().Namespaces().Patch(e.ctx, e.ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := localcluster.StartWebhook(e.ctx, controlPlane.Config, localcluster.WebhookOptions{
		ConfigurationName: "hami-webhook-e2e",
		NamespaceLabels:   map[string]string{webhookLabel: "on"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// What the apiserver calls is manifests/webhook.yaml's configuration.
	registered, err := controlPlane.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(e.ctx, "hami-webhook-e2e", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The shipped selector excludes only namespaces labelled
	// hami.io/webhook=ignore (webhook.excludedNamespaces is empty).
	if wh := registered.Webhooks[0]; len(wh.MatchConditions) == 0 || len(wh.NamespaceSelector.MatchExpressions) < 1 {
		t.Errorf("registered webhook lacks the shipped matchConditions or selectors: %+v", wh)
	}
	e.addNodes("1 node x 2 cards of NVIDIA A100 40 GiB, split 10", nil)

	memOnly := func(name string) *corev1.Pod {
		p := e.pod(name)
		p.Spec.SchedulerName = ""
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "cuda:sim", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{nvidia.DefaultMemoryName: *resource.NewQuantity(3000, resource.DecimalSI)},
		}}}
		return p
	}

	t.Run("memory-only pod is routed and runs", func(t *testing.T) {
		e.t = t
		created := e.create(memOnly("mem-only"))
		if created.Spec.SchedulerName != profile.SchedulerName {
			t.Errorf("schedulerName = %q, want %q", created.Spec.SchedulerName, profile.SchedulerName)
		}
		count := created.Spec.Containers[0].Resources.Limits[nvidia.DefaultCountName]
		if count.Value() != 1 {
			t.Errorf("%s = %s, want 1 added by the webhook", nvidia.DefaultCountName, count.String())
		}
		running := e.waitRunning("mem-only")
		if got := running.Annotations[nvidia.AllocatedAnnotation]; !strings.Contains(got, ",NVIDIA,3000,0:") {
			t.Errorf("%s = %q, want one card with 3000 MiB", nvidia.AllocatedAnnotation, got)
		}
		if running.Annotations[devices.AssignedNode] != running.Spec.NodeName {
			t.Errorf("%s = %q, pod runs on %q", devices.AssignedNode, running.Annotations[devices.AssignedNode], running.Spec.NodeName)
		}
	})

	refusals := []struct {
		name    string
		mutate  func(*corev1.Pod)
		wantMsg string
	}{
		{"privileged", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}, "privileged"},
		{"node-name", func(p *corev1.Pod) { p.Spec.NodeName = "anywhere" }, "nodeName"},
		{"bad-percentage", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[nvidia.DefaultMemoryPercentageName] = *resource.NewQuantity(150, resource.DecimalSI)
		}, nvidia.DefaultMemoryPercentageName},
	}
	for _, tt := range refusals {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			p := memOnly(tt.name)
			tt.mutate(p)
			_, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("create error = %v, want a refusal mentioning %q", err, tt.wantMsg)
			}
		})
	}

	t.Run("a pod's own ignore label does not opt it out", func(t *testing.T) {
		e.t = t
		p := memOnly("ignored")
		p.Labels = map[string]string{devices.WebhookIgnoreLabel: "ignore"}
		created := e.create(p)
		if created.Spec.SchedulerName != profile.SchedulerName {
			t.Errorf("schedulerName = %q, want %q: only namespaces opt out", created.Spec.SchedulerName, profile.SchedulerName)
		}
	})
}
