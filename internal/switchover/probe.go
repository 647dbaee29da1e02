package switchover

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// WebhookLabel is the label whose value "ignore" HAMi's webhook
// configuration leaves out in its objectSelector (and namespaceSelector).
// hami-scheduler's configuration has no objectSelector (only namespaces opt
// out), so a pod so labelled is mutated by hami-scheduler's webhook alone:
// that is how the probe tells the two apart.
const WebhookLabel = "hami.io/webhook"

// probeLimit bounds the wait for hami-scheduler's webhook to answer: a
// configuration registered moments ago takes the API server a moment.
const probeLimit = 30 * time.Second

// probePod is a pod asking one device, labelled so that only
// hami-scheduler's webhook sees it.
func probePod(o Options) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "kubectl-hami-switch-probe-",
			Namespace:    o.ProbeNamespace,
			Labels:       map[string]string{WebhookLabel: "ignore"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "probe",
			Image: "probe",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				o.ProbeResource: *resource.NewQuantity(1, resource.DecimalSI),
			}},
		}}},
	}
}

// probeWebhook sends the probe pod as a server-side dry run (nothing is
// stored) until it comes back with schedulerName, within probeLimit (or
// Timeout when shorter). It fails when hami-scheduler's webhook does not
// give device pods HAMi's scheduler name: not registered, not serving the
// probe's namespace, or configured with another scheduler name.
func probeWebhook(ctx context.Context, client kubernetes.Interface, o Options, schedulerName string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, o.Interval, min(probeLimit, o.Timeout), true, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().Pods(o.ProbeNamespace).Create(ctx, probePod(o), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("schedulerName %q", got.Spec.SchedulerName)
		return got.Spec.SchedulerName == schedulerName, nil
	})
	if err != nil {
		return fmt.Errorf("hami-scheduler's webhook does not admit device pods: a dry-run pod in namespace %s asking %s, labelled %s=ignore (which HAMi's webhook skips), did not come back with schedulerName %q within %s (last: %s). "+
			"Install hami-scheduler's webhook first, with a MutatingWebhookConfiguration named other than HAMi's, serving namespace %s (--probe-namespace), and the same scheduler name as HAMi's",
			o.ProbeNamespace, o.ProbeResource, WebhookLabel, schedulerName, min(probeLimit, o.Timeout), last, o.ProbeNamespace)
	}
	return nil
}
