package switchover

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Labels HAMi's chart puts on its scheduler Deployment (and the selector
// labels on everything of the release).
const (
	componentLabel = "app.kubernetes.io/component"
	instanceLabel  = "app.kubernetes.io/instance"
	hamiComponent  = "hami-scheduler"
)

// hamiRelease is what the switch reads of HAMi's Helm release. Its object
// names follow HAMi's chart (templates/_helpers.tpl): the scheduler
// Deployment is <fullname>-scheduler, the webhook configuration
// <fullname>-webhook, the device plugin DaemonSet <fullname>-device-plugin,
// where fullname is the release name when it contains "hami", else
// <release>-hami (or fullnameOverride). The Deployment is found by its
// labels, so any fullname works; the others are named after it.
type hamiRelease struct {
	namespace string
	release   string
	fullname  string
	scheduler *appsv1.Deployment
	// schedulerName is the extender's --scheduler-name, the name HAMi's
	// webhook gives device pods and its kube-scheduler's profile answers.
	schedulerName string
	// leaderElect is the extender's --leader-elect: HAMi's chart honours
	// scheduler.replicas only when it is on.
	leaderElect bool
	// webhookName is <fullname>-webhook; webhook is nil when there is none.
	webhookName string
	webhook     *admissionv1.MutatingWebhookConfiguration
	// deviceConfigMap and devicePlugin are what the switch keeps; empty
	// when the release has none.
	deviceConfigMap string
	devicePlugin    string
}

// findHAMi reads HAMi's release of that name in the namespace.
func findHAMi(ctx context.Context, client kubernetes.Interface, namespace, release string) (*hamiRelease, error) {
	d, err := hamiScheduler(ctx, client, namespace, release)
	if err != nil {
		return nil, err
	}
	h := &hamiRelease{namespace: namespace, release: release, fullname: strings.TrimSuffix(d.Name, "-scheduler"), scheduler: d, leaderElect: true}
	if h.schedulerName = flagValue(d, "--scheduler-name"); h.schedulerName == "" {
		return nil, fmt.Errorf("Deployment %s/%s: no container has --scheduler-name, so HAMi's scheduler name is unknown", namespace, d.Name)
	}
	if v := flagValue(d, "--leader-elect"); v == "false" {
		h.leaderElect = false
	}
	h.webhookName = h.fullname + "-webhook"
	if h.webhook, err = optional(client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, h.webhookName, metav1.GetOptions{})); err != nil {
		return nil, fmt.Errorf("MutatingWebhookConfiguration %s: %w", h.webhookName, err)
	}
	h.deviceConfigMap = configMapVolume(d, "device-config")
	ds, err := optional(client.AppsV1().DaemonSets(namespace).Get(ctx, h.fullname+"-device-plugin", metav1.GetOptions{}))
	if err != nil {
		return nil, fmt.Errorf("DaemonSet %s/%s-device-plugin: %w", namespace, h.fullname, err)
	}
	if ds != nil {
		h.devicePlugin = ds.Name
	}
	return h, nil
}

// hamiScheduler is the one Deployment of the namespace that HAMi's chart
// labels as the release's scheduler.
func hamiScheduler(ctx context.Context, client kubernetes.Interface, namespace, release string) (*appsv1.Deployment, error) {
	selector := labels.SelectorFromSet(labels.Set{componentLabel: hamiComponent, instanceLabel: release}).String()
	list, err := client.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list Deployments of HAMi's release %s in %s: %w", release, namespace, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("no Deployment in namespace %s is labelled %s: is HAMi's release %s installed there (--hami-namespace, --hami-release)?", namespace, selector, release)
	case 1:
		return &list.Items[0], nil
	default:
		var names []string
		for _, d := range list.Items {
			names = append(names, d.Name)
		}
		return nil, fmt.Errorf("Deployments %s in namespace %s are all labelled %s: cannot tell which is HAMi's scheduler", strings.Join(names, ", "), namespace, selector)
	}
}

// flagValue is the value of a --name=value or --name value argument in
// any container's command or args; "" if none has it.
func flagValue(d *appsv1.Deployment, name string) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		args := append(append([]string{}, c.Command...), c.Args...)
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v
			}
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}

// configMapVolume is the ConfigMap behind the pod template's volume of
// that name; "" if there is none.
func configMapVolume(d *appsv1.Deployment, volume string) string {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == volume && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

// optional turns NotFound into a nil object.
func optional[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// replicas is spec.replicas with the API's default of 1.
func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}
