package switchover

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const (
	hamiNS = "kube-system"
	oursNS = "hami-system"
)

// hamiScheduler is HAMi's scheduler Deployment as HAMi v2.10's chart
// shapes it for the release (fullname as its helpers make it), cut to what
// the switch reads: labels, selector, the extender's flags and the device
// config volume.
func hamiDeployment(release, fullname string, n int32, schedulerName string) *appsv1.Deployment {
	selector := map[string]string{"app.kubernetes.io/component": "hami-scheduler", "app.kubernetes.io/name": "hami", "app.kubernetes.io/instance": release}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fullname + "-scheduler", Namespace: hamiNS, UID: "hami-uid", Labels: selector},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{
						{Name: "kube-scheduler", Command: []string{"kube-scheduler", "--config=/config/config.yaml", "-v=4"}},
						{Name: "vgpu-scheduler-extender", Command: []string{"scheduler", "--http_bind=0.0.0.0:443",
							"--scheduler-name=" + schedulerName, "--leader-elect=true", "--device-config-file=/device-config.yaml"}},
					},
					Volumes: []corev1.Volume{{Name: "device-config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: fullname + "-scheduler-device"}},
					}}},
				},
			},
		},
	}
}

// hamiWebhook is HAMi's MutatingWebhookConfiguration for the fullname.
func hamiWebhook(fullname string) *admissionv1.MutatingWebhookConfiguration {
	return &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: fullname + "-webhook", UID: "webhook-uid",
			Annotations: map[string]string{"meta.helm.sh/release-name": "hami"}},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "vgpu.hami.io",
			AdmissionReviewVersions: []string{"v1beta1"},
			FailurePolicy:           ptr.To(admissionv1.Ignore),
			ClientConfig: admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{
				Namespace: hamiNS, Name: fullname + "-scheduler", Path: ptr.To("/webhook"), Port: ptr.To[int32](443),
			}, CABundle: []byte("ca")},
		}},
	}
}

func hamiDevicePlugin(fullname string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: fullname + "-device-plugin", Namespace: hamiNS}}
}

// ourDeployment is hami-scheduler's scheduler Deployment, as the chart
// names it beside HAMi's release (values-beside-hami.yaml).
func ourDeployment(n int32) *appsv1.Deployment {
	selector := map[string]string{"app.kubernetes.io/name": DefaultDeployment}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultDeployment, Namespace: oursNS, UID: "ours-uid", Labels: selector},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector}},
		},
	}
}

// withPods is the Deployment followed by as many running pods as it has
// replicas, and its status saying they are ready.
func withPods(d *appsv1.Deployment) []runtime.Object {
	d.Status = appsv1.DeploymentStatus{Replicas: replicas(d), ReadyReplicas: replicas(d)}
	objs := []runtime.Object{d}
	for i := range replicas(d) {
		objs = append(objs, podOf(d, i))
	}
	return objs
}

func podOf(d *appsv1.Deployment, i int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", d.Name, i), Namespace: d.Namespace, Labels: d.Spec.Template.Labels},
		Spec:       corev1.PodSpec{NodeName: "node-0"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// hamiRelease is HAMi's release "hami": its scheduler with n replicas and
// their pods, its webhook configuration and its device plugin.
func hamiObjects(n int32) []runtime.Object {
	objs := withPods(hamiDeployment("hami", "hami", n, "hami-scheduler"))
	return append(objs, hamiWebhook("hami"), hamiDevicePlugin("hami"))
}

// newClient is a fake clientset holding objs, with two controllers of a
// real cluster played by reactors: hami-scheduler's webhook, which gives
// a dry-run device pod labelled hami.io/webhook=ignore the scheduler name
// gives ("" plays a cluster without it), and the Deployment controller
// with the kubelet, which after each Deployment update makes its pods as
// many as its replicas and reports them ready.
func newClient(t *testing.T, gives string, objs ...runtime.Object) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create := action.(k8stesting.CreateActionImpl)
		if len(create.CreateOptions.DryRun) == 0 {
			return false, nil, nil
		}
		pod := create.GetObject().(*corev1.Pod).DeepCopy()
		if gives != "" && pod.Labels[WebhookLabel] == "ignore" {
			pod.Spec.SchedulerName = gives
		}
		return true, pod, nil
	})
	client.PrependReactor("update", "deployments", func(action k8stesting.Action) (bool, runtime.Object, error) {
		d := action.(k8stesting.UpdateAction).GetObject().(*appsv1.Deployment).DeepCopy()
		d.Status.ReadyReplicas = replicas(d)
		if err := client.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), d, d.Namespace, metav1.UpdateOptions{}); err != nil {
			return true, nil, err
		}
		return true, d, reconcilePods(client, d)
	})
	return client
}

// reconcilePods makes the Deployment's pods as many as its replicas.
func reconcilePods(client *fake.Clientset, d *appsv1.Deployment) error {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	list, err := client.Tracker().List(pods, corev1.SchemeGroupVersion.WithKind("Pod"), d.Namespace)
	if err != nil {
		return err
	}
	var have []*corev1.Pod
	for _, p := range list.(*corev1.PodList).Items {
		if labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(p.Labels)) {
			have = append(have, &p)
		}
	}
	for i := int32(len(have)); i < replicas(d); i++ {
		if err := client.Tracker().Create(pods, podOf(d, i), d.Namespace); err != nil {
			return err
		}
	}
	for _, p := range have[min(len(have), int(replicas(d))):] {
		if err := client.Tracker().Delete(pods, p.Namespace, p.Name); err != nil {
			return err
		}
	}
	return nil
}

// testOptions are quick options for HAMi's release in hamiNS.
func testOptions() Options {
	return Options{HAMiNamespace: hamiNS, Timeout: 2 * time.Second, Interval: time.Millisecond}
}

// observed is the state a test checks after a run.
type observed struct {
	hamiReplicas, hamiPods int32
	webhook                bool
	ourReplicas, ourPods   int32
	record                 bool
}

func observeTest(t *testing.T, client *fake.Clientset) observed {
	t.Helper()
	ctx := context.Background()
	s, err := observe(ctx, client, testOptions().withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	return observed{
		hamiReplicas: replicas(s.hami.scheduler), hamiPods: int32(s.hamiPods),
		webhook:     s.hami.webhook != nil,
		ourReplicas: replicas(s.ours), ourPods: int32(s.ourPods),
		record: s.record != nil,
	}
}
