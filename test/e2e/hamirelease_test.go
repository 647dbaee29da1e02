package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// hamiValues are the values of HAMi's chart (Project-HAMi/HAMi v2.10,
// charts/hami) that differ from its defaults in the release a test
// installs; everything else is the chart's default.
type hamiValues struct {
	// scheduler.nodeSelector: the test's nodes, where the simulated
	// kubelets run HAMi's scheduler pods.
	nodeSelector map[string]string
	// scheduler.admissionWebhook.customURL (enabled, host, port, path):
	// the API server of the tests reaches no Service, so HAMi's webhook
	// configuration calls a URL, as that value makes it.
	webhookURL string
	// The webhook's caBundle, which HAMi's admission-patch Job writes.
	webhookCA []byte
	// scheduler.admissionWebhook.namespaceSelector.matchLabels: the
	// webhook serves only the test's namespace.
	namespaceLabels map[string]string
}

// hamiRelease is HAMi's Helm release "hami" as HAMi v2.10's chart renders
// it with those values: the objects of its templates that the switch
// reads or must keep, written here from the chart's templates (the
// cluster-wide RBAC, the Role and the certificate Jobs are left out; the
// switch touches none of them). Helm's ownership annotations are on each.
type hamiRelease struct {
	namespace string

	schedulerAccount, devicePluginAccount *corev1.ServiceAccount
	// schedulerConfig is the kube-scheduler's configuration (hami-scheduler),
	// deviceConfig the device ConfigMap (hami-scheduler-device),
	// devicePluginConfig the device plugin's node configuration.
	schedulerConfig, deviceConfig, devicePluginConfig *corev1.ConfigMap
	schedulerService, monitorService                  *corev1.Service
	scheduler                                         *appsv1.Deployment
	devicePlugin                                      *appsv1.DaemonSet
	webhook                                           *admissionv1.MutatingWebhookConfiguration
}

const hamiChartVersion = "2.10.0"

// hamiLabels are the chart's labels for the component (hami-vgpu.labels).
func hamiLabels(component string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/component":  component,
		"helm.sh/chart":                "hami-" + hamiChartVersion,
		"app.kubernetes.io/name":       "hami",
		"app.kubernetes.io/instance":   "hami",
		"app.kubernetes.io/version":    hamiChartVersion,
		"app.kubernetes.io/managed-by": "Helm",
	}
}

// hamiSelector are the selector labels of the component.
func hamiSelector(component string) map[string]string {
	return map[string]string{"app.kubernetes.io/component": component, "app.kubernetes.io/name": "hami", "app.kubernetes.io/instance": "hami"}
}

// hamiMeta is the metadata Helm gives an object of the release.
func hamiMeta(namespace, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: hamiLabels(component), Annotations: map[string]string{
		"meta.helm.sh/release-name": "hami", "meta.helm.sh/release-namespace": namespace,
	}}
}

func newHAMiRelease(namespace string, v hamiValues) (*hamiRelease, error) {
	webhook, err := hamiWebhookConfiguration(namespace, v)
	if err != nil {
		return nil, err
	}
	return &hamiRelease{
		namespace:           namespace,
		schedulerAccount:    &corev1.ServiceAccount{ObjectMeta: hamiMeta(namespace, "hami-scheduler", "hami-scheduler")},
		devicePluginAccount: &corev1.ServiceAccount{ObjectMeta: hamiMeta(namespace, "hami-device-plugin", "hami-device-plugin")},
		schedulerConfig:     hamiSchedulerConfig(namespace),
		deviceConfig:        hamiDeviceConfig(namespace),
		devicePluginConfig: &corev1.ConfigMap{ObjectMeta: hamiMeta(namespace, "hami-device-plugin", "hami-device-plugin"), Data: map[string]string{
			"config.json": `{"nodeconfig": [{"name": "your-node-name", "operatingmode": "hami-core", "devicememoryscaling": 1, "devicesplitcount": 10, "preconfigureddevicememory": 0, "enablenumatopology": false, "migstrategy": "none", "filterdevices": {"uuid": [], "index": []}, "enablegetpreferredallocation": false}]}`,
		}},
		schedulerService: hamiService(namespace, "hami-scheduler", "hami-scheduler", []corev1.ServicePort{
			{Name: "http", Port: 443, TargetPort: intstr.FromInt32(443), NodePort: 31998, Protocol: corev1.ProtocolTCP},
			{Name: "monitor", Port: 31993, TargetPort: intstr.FromInt32(9395), NodePort: 31993, Protocol: corev1.ProtocolTCP},
		}, map[string]string{"hami.io/scheduler-role": "leader"}),
		monitorService: hamiService(namespace, "hami-device-plugin-monitor", "hami-device-plugin", []corev1.ServicePort{
			{Name: "monitorport", Port: 31992, TargetPort: intstr.FromInt32(9394), NodePort: 31992, Protocol: corev1.ProtocolTCP},
		}, nil),
		scheduler:    hamiSchedulerDeployment(namespace, v),
		devicePlugin: hamiDevicePlugin(namespace),
		webhook:      webhook,
	}, nil
}

// hamiService is templates/scheduler/service.yaml or
// device-plugin/monitorservice.yaml: a NodePort Service.
func hamiService(namespace, name, component string, ports []corev1.ServicePort, selector map[string]string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: hamiMeta(namespace, name, component), Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Ports: ports, Selector: hamiSelector(component),
	}}
	for k, v := range selector {
		s.Spec.Selector[k] = v
	}
	return s
}

// hamiSchedulerConfig is templates/scheduler/configmap.yaml for Kubernetes
// 1.26 and later: kube-scheduler with HAMi's extender on the pod's
// loopback (the webhook on, so HTTPS on 443).
func hamiSchedulerConfig(namespace string) *corev1.ConfigMap {
	resources := ""
	for _, r := range []string{"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage", "nvidia.com/priority",
		"cambricon.com/vmlu", "hygon.com/dcunum", "hygon.com/dcumem", "hygon.com/dcucores",
		"metax-tech.com/gpu", "metax-tech.com/sgpu", "metax-tech.com/vcore", "metax-tech.com/vmemory"} {
		resources += fmt.Sprintf("      - name: %s\n        ignoredByScheduler: true\n", r)
	}
	return &corev1.ConfigMap{ObjectMeta: hamiMeta(namespace, "hami-scheduler", "hami-scheduler"), Data: map[string]string{"config.yaml": `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceName: "hami-scheduler"
  resourceNamespace: "` + namespace + `"
profiles:
- schedulerName: hami-scheduler
extenders:
- urlPrefix: "https://127.0.0.1:443"
  enableHTTPS: true
  tlsConfig:
    insecure: true
  filterVerb: filter
  bindVerb: bind
  nodeCacheCapable: true
  weight: 1
  httpTimeout: 30s
  managedResources:
` + resources}}
}

// hamiDeviceConfig is templates/scheduler/device-configmap.yaml with the
// default values, its NVIDIA section (the other vendors' sections are
// left out: nothing here reads them).
func hamiDeviceConfig(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: hamiMeta(namespace, "hami-scheduler-device", "hami-scheduler"), Data: map[string]string{"device-config.yaml": `nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceMemoryPercentageName: nvidia.com/gpumem-percentage
  resourceCoreName: nvidia.com/gpucores
  resourcePriorityName: nvidia.com/priority
  overwriteEnv: false
  defaultMemory: 0
  defaultCores: 0
  defaultGPUNum: 1
  preConfiguredDeviceMemory: 0
  memoryFactor: 1
  deviceSplitCount: 10
  deviceMemoryScaling: 1
  deviceCoreScaling: 1
  enableNumaTopology: false
  gpuCorePolicy: default
  libCudaLogLevel: 1
  runtimeClassName: ""
`}}
}

// hamiSchedulerDeployment is templates/scheduler/deployment.yaml: the
// kube-scheduler and HAMi's extender (which also serves the webhook) in
// one pod, leader election on.
func hamiSchedulerDeployment(namespace string, v hamiValues) *appsv1.Deployment {
	selector := hamiSelector("hami-scheduler")
	podLabels := hamiSelector("hami-scheduler")
	podLabels["hami.io/webhook"] = "ignore"
	extender := corev1.Container{
		Name: "vgpu-scheduler-extender", Image: "docker.io/projecthami/hami:v" + hamiChartVersion, ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "HAMI_NODELOCK_EXPIRE", Value: "5m"},
		},
		Command: []string{"scheduler", "--http_bind=0.0.0.0:443", "--cert_file=/tls/tls.crt", "--key_file=/tls/tls.key",
			"--scheduler-name=hami-scheduler", "--metrics-bind-address=:9395", "--node-scheduler-policy=binpack", "--gpu-scheduler-policy=spread",
			"--force-overwrite-default-scheduler=true", "--device-config-file=/device-config.yaml", "--leader-elect=true",
			"--leader-elect-resource-name=hami-scheduler", "--leader-elect-resource-namespace=" + namespace, "--debug", "-v=4"},
		Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: 443, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9395, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "device-config", MountPath: "/device-config.yaml", SubPath: "device-config.yaml"},
			{Name: "tls-config", MountPath: "/tls"},
		},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS}},
			InitialDelaySeconds: 10, PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 5},
	}
	return &appsv1.Deployment{
		ObjectMeta: hamiMeta(namespace, "hami-scheduler", "hami-scheduler"),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: map[string]string{
					"checksum/hami-scheduler-config": "test", "checksum/hami-scheduler-device-config": "test",
				}},
				Spec: corev1.PodSpec{
					ServiceAccountName: "hami-scheduler",
					PriorityClassName:  "system-node-critical",
					Containers: []corev1.Container{{
						Name: "kube-scheduler", Image: "registry.cn-hangzhou.aliyuncs.com/google_containers/kube-scheduler:v1.37.2", ImagePullPolicy: corev1.PullIfNotPresent,
						Command:      []string{"kube-scheduler", "--config=/config/config.yaml", "-v=4"},
						VolumeMounts: []corev1.VolumeMount{{Name: "scheduler-config", MountPath: "/config"}},
					}, extender},
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
						Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{
							MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app.kubernetes.io/component", Operator: metav1.LabelSelectorOpIn, Values: []string{"hami-scheduler"}}},
						}},
					}}}},
					Volumes: []corev1.Volume{
						{Name: "tls-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "hami-scheduler-tls"}}},
						{Name: "scheduler-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hami-scheduler"}}}},
						{Name: "device-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hami-scheduler-device"}}}},
					},
					NodeSelector: v.nodeSelector,
				},
			},
		},
	}
}

// hamiDevicePlugin is templates/device-plugin/daemonsetnvidia.yaml, its
// two containers (the device plugin and the vGPU monitor) with their
// commands and the volumes naming HAMi's ConfigMaps; the host paths and
// the security contexts are left out (the tests' API server allows no
// privileged container).
func hamiDevicePlugin(namespace string) *appsv1.DaemonSet {
	podLabels := hamiSelector("hami-device-plugin")
	podLabels["hami.io/webhook"] = "ignore"
	return &appsv1.DaemonSet{
		ObjectMeta: hamiMeta(namespace, "hami-device-plugin", "hami-device-plugin"),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: hamiSelector("hami-device-plugin")},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "hami-device-plugin",
					PriorityClassName:  "system-node-critical",
					HostPID:            true,
					Containers: []corev1.Container{{
						Name: "device-plugin", Image: "docker.io/projecthami/hami:v" + hamiChartVersion,
						Command: []string{"nvidia-device-plugin", "--config-file=/device-config.yaml", "--mig-strategy=none", "--disable-core-limit=false", "-v=4"},
						Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
							{Name: "NVIDIA_MIG_MONITOR_DEVICES", Value: "all"}, {Name: "DEVICE_LIST_STRATEGY", Value: "envvar"}, {Name: "HOOK_PATH", Value: "/usr/local"}},
						VolumeMounts: []corev1.VolumeMount{{Name: "deviceconfig", MountPath: "/config"},
							{Name: "device-config", MountPath: "/device-config.yaml", SubPath: "device-config.yaml"}},
					}, {
						Name: "vgpu-monitor", Image: "docker.io/projecthami/hami:v" + hamiChartVersion, Command: []string{"vGPUmonitor", "-v=4"},
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9394, Protocol: corev1.ProtocolTCP}},
					}},
					Volumes: []corev1.Volume{
						{Name: "deviceconfig", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hami-device-plugin"}}}},
						{Name: "device-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "hami-scheduler-device"}}}},
					},
					NodeSelector: map[string]string{"gpu": "on"},
				},
			},
		},
	}
}

// hamiWebhookConfiguration is templates/scheduler/webhook.yaml with
// customURL enabled (host, port and path from v.webhookURL), the
// chart's failure policy (Ignore) and reinvocation policy (Never).
func hamiWebhookConfiguration(namespace string, v hamiValues) (*admissionv1.MutatingWebhookConfiguration, error) {
	u, err := url.Parse(v.webhookURL)
	if err != nil {
		return nil, err
	}
	if _, err := strconv.Atoi(u.Port()); err != nil {
		return nil, fmt.Errorf("webhook URL %s: port: %w", v.webhookURL, err)
	}
	meta := hamiMeta("", "hami-webhook", "")
	meta.Labels = nil
	meta.Annotations["meta.helm.sh/release-namespace"] = namespace
	return &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: meta,
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "vgpu.hami.io",
			AdmissionReviewVersions: []string{"v1beta1"},
			ClientConfig:            admissionv1.WebhookClientConfig{URL: ptr.To("https://" + u.Host + u.Path), CABundle: v.webhookCA},
			FailurePolicy:           ptr.To(admissionv1.Ignore),
			MatchPolicy:             ptr.To(admissionv1.Equivalent),
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: v.namespaceLabels, MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "hami.io/webhook", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ignore"}},
			}},
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "hami.io/webhook", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ignore"}},
			}},
			ReinvocationPolicy: ptr.To(admissionv1.NeverReinvocationPolicy),
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptr.To(admissionv1.AllScopes)},
			}},
			SideEffects:    ptr.To(admissionv1.SideEffectClassNone),
			TimeoutSeconds: ptr.To[int32](10),
		}},
	}, nil
}

// install creates the release's objects, the webhook configuration last,
// and replaces each with what the API server stored.
func (r *hamiRelease) install(ctx context.Context, t *testing.T) {
	t.Helper()
	c := controlPlane.Client
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("install HAMi's %s: %v", what, err)
		}
	}
	var err error
	r.schedulerAccount, err = c.CoreV1().ServiceAccounts(r.namespace).Create(ctx, r.schedulerAccount, metav1.CreateOptions{})
	must("scheduler ServiceAccount", err)
	r.devicePluginAccount, err = c.CoreV1().ServiceAccounts(r.namespace).Create(ctx, r.devicePluginAccount, metav1.CreateOptions{})
	must("device plugin ServiceAccount", err)
	for _, cm := range []**corev1.ConfigMap{&r.schedulerConfig, &r.deviceConfig, &r.devicePluginConfig} {
		*cm, err = c.CoreV1().ConfigMaps(r.namespace).Create(ctx, *cm, metav1.CreateOptions{})
		must("ConfigMap", err)
	}
	for _, s := range []**corev1.Service{&r.schedulerService, &r.monitorService} {
		*s, err = c.CoreV1().Services(r.namespace).Create(ctx, *s, metav1.CreateOptions{})
		must("Service", err)
	}
	r.devicePlugin, err = c.AppsV1().DaemonSets(r.namespace).Create(ctx, r.devicePlugin, metav1.CreateOptions{})
	must("device plugin DaemonSet", err)
	r.scheduler, err = c.AppsV1().Deployments(r.namespace).Create(ctx, r.scheduler, metav1.CreateOptions{})
	must("scheduler Deployment", err)
	r.webhook, err = c.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, r.webhook, metav1.CreateOptions{})
	must("MutatingWebhookConfiguration", err)
}

// uninstall deletes the cluster-wide webhook configuration and the
// NodePort Services (their ports are the cluster's), so that a later run
// can install again.
func (r *hamiRelease) uninstall() {
	ctx := context.Background()
	c := controlPlane.Client
	for _, err := range []error{
		c.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, r.webhook.Name, metav1.DeleteOptions{}),
		c.CoreV1().Services(r.namespace).Delete(ctx, r.schedulerService.Name, metav1.DeleteOptions{}),
		c.CoreV1().Services(r.namespace).Delete(ctx, r.monitorService.Name, metav1.DeleteOptions{}),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Println("uninstall HAMi's release:", err)
		}
	}
}
