package manifestgen

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
)

// TestHAMiDeviceConfigFile: the chart's copy of HAMi's chart-default
// device-config.yaml is the one the binaries embed.
func TestHAMiDeviceConfigFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(), "files", "hami-device-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, deviceconfig.ChartDefault) {
		t.Error("files/hami-device-config.yaml differs from apis/deviceconfig/chart-default.yaml")
	}
}

// chartDefault is HAMi's chart-default device config, parsed.
func chartDefault(t *testing.T) *deviceconfig.Config {
	t.Helper()
	cfg, _, err := deviceconfig.Parse(deviceconfig.ChartDefault)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestHAMiDeviceKeys: each of HAMi's resource-name keys sets its field of
// the rendered device-config.yaml (the default config otherwise
// unchanged), is ignored by NodeResourcesFit (but NVIDIA's count, which
// nodes advertise) and is routed to the webhook (its domain added to the
// resource prefixes).
func TestHAMiDeviceKeys(t *testing.T) {
	field := func(get func(c *deviceconfig.Config) *string) func(c *deviceconfig.Config) *string { return get }
	tests := []struct {
		key   string
		field func(c *deviceconfig.Config) *string
	}{
		{"resourceName", field(func(c *deviceconfig.Config) *string { return &c.NVIDIA.ResourceCountName })},
		{"resourceMem", field(func(c *deviceconfig.Config) *string { return &c.NVIDIA.ResourceMemoryName })},
		{"resourceMemPercentage", field(func(c *deviceconfig.Config) *string { return &c.NVIDIA.ResourceMemoryPercentageName })},
		{"resourceCores", field(func(c *deviceconfig.Config) *string { return &c.NVIDIA.ResourceCoreName })},
		{"resourcePriority", field(func(c *deviceconfig.Config) *string { return &c.NVIDIA.ResourcePriorityName })},
		{"mluResourceName", field(func(c *deviceconfig.Config) *string { return &c.Cambricon.ResourceCountName })},
		{"mluResourceMem", field(func(c *deviceconfig.Config) *string { return &c.Cambricon.ResourceMemoryName })},
		{"mluResourceCores", field(func(c *deviceconfig.Config) *string { return &c.Cambricon.ResourceCoreName })},
		{"dcuResourceName", field(func(c *deviceconfig.Config) *string { return &c.Hygon.ResourceCountName })},
		{"dcuResourceMem", field(func(c *deviceconfig.Config) *string { return &c.Hygon.ResourceMemoryName })},
		{"dcuResourceCores", field(func(c *deviceconfig.Config) *string { return &c.Hygon.ResourceCoreName })},
		{"metaxResourceName", field(func(c *deviceconfig.Config) *string { return &c.MetaX.ResourceVCountName })},
		{"metaxResourceCore", field(func(c *deviceconfig.Config) *string { return &c.MetaX.ResourceVCoreName })},
		{"metaxResourceMem", field(func(c *deviceconfig.Config) *string { return &c.MetaX.ResourceVMemoryName })},
		{"enflameResourceNameDRSGCU", field(func(c *deviceconfig.Config) *string { return &c.Enflame.ResourceNameDRSGCU })},
		{"enflameResourceNameGCUMemory", field(func(c *deviceconfig.Config) *string { return &c.Enflame.ResourceNameGCUMemory })},
		{"enflameResourceNameGCUCore", field(func(c *deviceconfig.Config) *string { return &c.Enflame.ResourceNameGCUCore })},
		{"kunlunResourceName", field(func(c *deviceconfig.Config) *string { return &c.Kunlun.ResourceCountName })},
		{"kunlunResourceVCountName", field(func(c *deviceconfig.Config) *string { return &c.Kunlun.ResourceVCountName })},
		{"kunlunResourceVMemoryName", field(func(c *deviceconfig.Config) *string { return &c.Kunlun.ResourceVMemoryName })},
		{"vastaiResourceName", field(func(c *deviceconfig.Config) *string { return &c.Vastai.ResourceCountName })},
		{"birenResourceName", field(func(c *deviceconfig.Config) *string { return &c.Biren.ResourceCountName })},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			name := "example.com/" + strings.ToLower(tt.key)
			c, err := renderChart(t, map[string]any{tt.key: name}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := chartDefault(t)
			*tt.field(want) = name
			if diff := cmp.Diff(want, c.deviceConfig("hami-scheduler")); diff != "" {
				t.Errorf("device config (-want +got):\n%s", diff)
			}
			// Rendered for the 1.37 band: NVIDIA's count too is the HAMi
			// plugin's to check (a DRA node advertises none).
			if !slices.Contains(c.ignoredResources("hami-scheduler"), name) {
				t.Errorf("NodeResourcesFit does not ignore %s", name)
			}
			if mc := c.webhookConfiguration("hami-webhook").MatchConditions; !strings.Contains(mc[0].Expression, `"example.com/"`) {
				t.Errorf("the webhook's matchConditions do not route %s:\n%s", name, mc[0].Expression)
			}
			if a := c.pluginArgs("hami-scheduler", "HAMi"); a["deviceConfigFile"] != deviceConfigFile {
				t.Errorf("plugin args %v, want deviceConfigFile %s", a, deviceConfigFile)
			}
			if !hasArg(c.deployment("hami-webhook"), "--device-config-file="+deviceConfigFile) {
				t.Errorf("webhook args %q", argsOf(c.deployment("hami-webhook")))
			}
		})
	}
}

// deviceConfigFile is where both binaries read the mounted device config.
const deviceConfigFile = "/etc/hami-device/device-config.yaml"

// TestHAMiValuesFile: test/testdata/hami-values.yaml (HAMi v2.10's keys, a
// few overrides) renders HAMi's chart-default device config with its
// overrides, every vendor but the one switched off, its policies, lock
// expiry, webhook settings, metrics Service and labels.
func TestHAMiValuesFile(t *testing.T) {
	c, err := renderChart(t, hamiValues(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := chartDefault(t)
	want.NVIDIA.OverwriteEnv = true
	for i := range want.VNPUs.Configs {
		want.VNPUs.Configs[i].OverwriteEnv = true
	}
	want.MetaX.SGPUTopologyAware = true
	want.MThreads = nil
	if diff := cmp.Diff(want, c.deviceConfig("hami-scheduler")); diff != "" {
		t.Errorf("device config (-want +got):\n%s", diff)
	}
	args := c.pluginArgs("hami-scheduler", "HAMi")
	if args["nodeSchedulerPolicy"] != "binpack" || args["gpuSchedulerPolicy"] != "binpack" || args["deviceConfigFile"] != deviceConfigFile || args["enableAscend"] != nil {
		t.Errorf("plugin args %v", args)
	}
	for _, r := range c.ignoredResources("hami-scheduler") {
		if strings.HasPrefix(r, "mthreads.com/") || strings.HasPrefix(r, "huawei.com/") || strings.HasPrefix(r, "iluvatar.ai/") {
			t.Errorf("NodeResourcesFit ignores %s of a vendor switched off", r)
		}
	}
	sched := c.deployment("hami-scheduler")
	if env := container(sched).Env; len(env) != 1 || env[0].Value != "3m" {
		t.Errorf("scheduler env %v, want HAMI_NODELOCK_EXPIRE 3m", env)
	}
	hook := c.webhookConfiguration("hami-webhook")
	if *hook.FailurePolicy != "Ignore" || hook.ObjectSelector == nil || len(hook.ObjectSelector.MatchExpressions) != 1 {
		t.Errorf("webhook failure policy %s, object selector %v", *hook.FailurePolicy, hook.ObjectSelector)
	}
	svc := &corev1.Service{}
	c.get("Service", "hami-scheduler", svc)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Labels["release"] != "prometheus" || svc.Spec.Ports[0].NodePort != 0 {
		t.Errorf("metrics Service %+v", svc)
	}
	for _, o := range c.objs {
		if o.GetLabels()["team"] != "gpu-platform" || o.GetAnnotations()["example.com/owner"] != "gpu-platform" {
			t.Errorf("%s/%s lacks global.labels or global.annotations", o.GetKind(), o.GetName())
		}
	}
}

// TestHAMiChartDefault: deviceConfig.hamiChartDefault renders exactly
// HAMi's chart-default device config.
func TestHAMiChartDefault(t *testing.T) {
	c, err := renderChart(t, nested("deviceConfig.hamiChartDefault", true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(chartDefault(t), c.deviceConfig("hami-scheduler")); diff != "" {
		t.Errorf("device config (-want +got):\n%s", diff)
	}
}

// TestHAMiKeys: each of HAMi's other keys has its effect on the rendered
// objects.
func TestHAMiKeys(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		caps   bool // the cluster serves ServiceMonitor
		check  func(t *testing.T, c *chartObjects)
	}{
		{name: "scheduler.overwriteEnv", values: nested("scheduler.overwriteEnv", "true"), check: func(t *testing.T, c *chartObjects) {
			cfg := c.deviceConfig("hami-scheduler")
			if !cfg.NVIDIA.OverwriteEnv || !cfg.VNPUs.Configs[0].OverwriteEnv {
				t.Errorf("overwriteEnv: nvidia %v, Ascend %v", cfg.NVIDIA.OverwriteEnv, cfg.VNPUs.Configs[0].OverwriteEnv)
			}
		}},
		{name: "devicePlugin.runtimeClassName", values: nested("devicePlugin.runtimeClassName", "nvidia"), check: func(t *testing.T, c *chartObjects) {
			if got := c.deviceConfig("hami-scheduler").NVIDIA.RuntimeClassName; got != "nvidia" {
				t.Errorf("nvidia.runtimeClassName %q", got)
			}
		}},
		{name: "devices.nvidia", values: nested("devices.nvidia", map[string]any{"gpuCorePolicy": "force", "libCudaLogLevel": 3}), check: func(t *testing.T, c *chartObjects) {
			n := c.deviceConfig("hami-scheduler").NVIDIA
			if n.GPUCorePolicy != "force" || n.LibCudaLogLevel == nil || *n.LibCudaLogLevel != "3" {
				t.Errorf("nvidia gpuCorePolicy %q, libCudaLogLevel %v", n.GPUCorePolicy, n.LibCudaLogLevel)
			}
		}},
		{name: "metaxsGPUTopologyAware", values: map[string]any{"metaxsGPUTopologyAware": "true"}, check: func(t *testing.T, c *chartObjects) {
			if !c.deviceConfig("hami-scheduler").MetaX.SGPUTopologyAware {
				t.Error("metax.sgpuTopologyAware false")
			}
		}},
		{name: "devices.kunlun.enabled false", values: nested("devices.kunlun.enabled", false), check: func(t *testing.T, c *chartObjects) {
			if c.deviceConfig("hami-scheduler").Kunlun != nil {
				t.Error("the kunlun section is still rendered")
			}
			if slices.ContainsFunc(c.ignoredResources("hami-scheduler"), func(r string) bool { return strings.HasPrefix(r, "kunlunxin.com/") }) {
				t.Error("NodeResourcesFit still ignores kunlunxin.com/ resources")
			}
		}},
		{name: "devices.ascend", values: nested("devices.ascend", map[string]any{"enabled": true, "runtimeClassName": "ascend", "hamiVnpuCore": true}), check: func(t *testing.T, c *chartObjects) {
			cfg := c.deviceConfig("hami-scheduler")
			if !cfg.VNPUs.HAMiVNPUCore || cfg.VNPUs.Configs[0].RuntimeClassName != "ascend" {
				t.Errorf("vnpus %+v", cfg.VNPUs)
			}
			if c.pluginArgs("hami-scheduler", "HAMi")["enableAscend"] != true || !hasArg(c.deployment("hami-webhook"), "--enable-ascend=true") {
				t.Error("Ascend not enabled in the plugin and the webhook")
			}
		}},
		{name: "devices.iluvatar.enabled", values: nested("devices.iluvatar.enabled", true), check: func(t *testing.T, c *chartObjects) {
			if c.pluginArgs("hami-scheduler", "HAMi")["enableIluvatar"] != true || !hasArg(c.deployment("hami-webhook"), "--enable-iluvatar=true") {
				t.Error("Iluvatar not enabled in the plugin and the webhook")
			}
		}},
		{name: "devices.amd.customresources", values: nested("devices.amd.customresources", []any{"example.org/amd-vram"}), check: func(t *testing.T, c *chartObjects) {
			if !slices.Contains(c.ignoredResources("hami-scheduler"), "example.org/amd-vram") {
				t.Error("NodeResourcesFit does not ignore the custom resource")
			}
		}},
		{name: "device-config.content", values: nested("device-config.content", "nvidia:\n  resourceCountName: nvidia.com/gpu\n"), check: func(t *testing.T, c *chartObjects) {
			if cfg := c.deviceConfig("hami-scheduler"); cfg.NVIDIA == nil || cfg.Cambricon != nil {
				t.Errorf("device config %+v, want the given content", cfg)
			}
		}},
		{name: "scheduler.defaultSchedulerPolicy", values: nested("scheduler.defaultSchedulerPolicy", map[string]any{"nodeSchedulerPolicy": "spread", "gpuSchedulerPolicy": "binpack"}), check: func(t *testing.T, c *chartObjects) {
			a := c.pluginArgs("hami-scheduler", "HAMi")
			if a["nodeSchedulerPolicy"] != "spread" || a["gpuSchedulerPolicy"] != "binpack" || a["deviceConfigFile"] != nil {
				t.Errorf("plugin args %v", a)
			}
		}},
		{name: "scheduler.nodeLockExpire", values: nested("scheduler.nodeLockExpire", "90s"), check: func(t *testing.T, c *chartObjects) {
			if env := container(c.deployment("hami-scheduler")).Env; env[0].Name != "HAMI_NODELOCK_EXPIRE" || env[0].Value != "90s" {
				t.Errorf("env %v", env)
			}
		}},
		{name: "scheduler.metricsBindAddress", values: nested("scheduler", map[string]any{"metricsBindAddress": "0.0.0.0:9500", "service": map[string]any{"monitorTargetPort": 9500}}), check: func(t *testing.T, c *chartObjects) {
			d := c.deployment("hami-scheduler")
			if !hasArg(d, "--hami-metrics-bind-address=0.0.0.0:9500") || !slices.ContainsFunc(container(d).Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 9500 }) {
				t.Errorf("scheduler args %q ports %v", argsOf(d), container(d).Ports)
			}
			svc := &corev1.Service{}
			c.get("Service", "hami-scheduler", svc)
			if p := svc.Spec.Ports[0]; p.Name != "monitor" || p.TargetPort.IntValue() != 9500 || p.Port != 31993 || p.NodePort != 31993 || svc.Spec.Type != corev1.ServiceTypeNodePort {
				t.Errorf("metrics Service %+v", svc.Spec)
			}
		}},
		{name: "scheduler.metricsBindAddress empty", values: nested("scheduler.metricsBindAddress", ""), check: func(t *testing.T, c *chartObjects) {
			if slices.ContainsFunc(argsOf(c.deployment("hami-scheduler")), func(a string) bool { return strings.HasPrefix(a, "--hami-metrics-bind-address") }) || c.find("Service", "hami-scheduler") != nil {
				t.Error("a metrics listener or Service without scheduler.metricsBindAddress")
			}
		}},
		{name: "scheduler.leaderElect false", values: nested("scheduler.leaderElect", false), check: func(t *testing.T, c *chartObjects) {
			le := c.schedulerConfig("hami-scheduler")["leaderElection"].(map[string]any)
			if le["leaderElect"] != false || *c.deployment("hami-scheduler").Spec.Replicas != 1 {
				t.Errorf("leaderElection %v, replicas %d", le, *c.deployment("hami-scheduler").Spec.Replicas)
			}
		}},
		{name: "scheduler pod settings", values: nested("scheduler", map[string]any{"podAnnotations": map[string]any{"a": "b"}, "nodeName": "control-0", "extraArgs": []any{"--kube-api-qps=100"}}), check: func(t *testing.T, c *chartObjects) {
			d := c.deployment("hami-scheduler")
			if d.Spec.Template.Annotations["a"] != "b" || d.Spec.Template.Spec.NodeName != "control-0" || !hasArg(d, "--kube-api-qps=100") {
				t.Errorf("scheduler pod %v %q %q", d.Spec.Template.Annotations, d.Spec.Template.Spec.NodeName, argsOf(d))
			}
			if c.deployment("hami-webhook").Spec.Template.Annotations["a"] != "b" {
				t.Error("the webhook's pods lack scheduler.podAnnotations (HAMi's scheduler pod served the webhook)")
			}
		}},
		{name: "scheduler.livenessProbe false", values: nested("scheduler.livenessProbe", false), check: func(t *testing.T, c *chartObjects) {
			for _, name := range []string{"hami-scheduler", "hami-webhook"} {
				if container(c.deployment(name)).LivenessProbe != nil {
					t.Errorf("%s has a liveness probe", name)
				}
			}
		}},
		{name: "scheduler.forceOverwriteDefaultScheduler false", values: nested("scheduler.forceOverwriteDefaultScheduler", false), check: func(t *testing.T, c *chartObjects) {
			if !hasArg(c.deployment("hami-webhook"), "--take-over-default-scheduler=false") {
				t.Errorf("webhook args %q", argsOf(c.deployment("hami-webhook")))
			}
		}},
		{name: "scheduler.admissionWebhook selectors and policies", values: nested("scheduler.admissionWebhook", map[string]any{
			"whitelistNamespaces": []any{"istio-system"},
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"gpu": "yes"},
				"matchExpressions": []any{map[string]any{"key": "env", "operator": "NotIn", "values": []any{"dev"}}}},
			"objectSelector":     map[string]any{"matchLabels": map[string]any{"hami.io/enable": "true"}},
			"failurePolicy":      "Ignore",
			"reinvocationPolicy": "IfNeeded",
		}), check: func(t *testing.T, c *chartObjects) {
			h := c.webhookConfiguration("hami-webhook")
			want := &metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "yes"}, MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "hami.io/webhook", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ignore"}},
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"istio-system"}},
				{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}},
			}}
			if diff := cmp.Diff(want, h.NamespaceSelector); diff != "" {
				t.Errorf("namespaceSelector (-want +got):\n%s", diff)
			}
			if !reflect.DeepEqual(h.ObjectSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"hami.io/enable": "true"}}) {
				t.Errorf("objectSelector %v", h.ObjectSelector)
			}
			if *h.FailurePolicy != "Ignore" || *h.ReinvocationPolicy != "IfNeeded" {
				t.Errorf("failurePolicy %s reinvocationPolicy %s", *h.FailurePolicy, *h.ReinvocationPolicy)
			}
		}},
		{name: "scheduler.admissionWebhook as HAMi's values.yaml leaves it", values: nested("scheduler.admissionWebhook", map[string]any{
			"whitelistNamespaces": nil, "namespaceSelector": map[string]any{"matchLabels": nil, "matchExpressions": []any{}},
			"objectSelector": map[string]any{"matchExpressions": []any{}},
		}), check: func(t *testing.T, c *chartObjects) {
			h := c.webhookConfiguration("hami-webhook")
			want := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "hami.io/webhook", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ignore"}}}}
			if diff := cmp.Diff(want, h.NamespaceSelector); diff != "" || h.ObjectSelector != nil {
				t.Errorf("namespaceSelector (-want +got):\n%s\nobjectSelector %v", diff, h.ObjectSelector)
			}
		}},
		{name: "scheduler.admissionWebhook.manageNamespaceSelector false", values: nested("scheduler.admissionWebhook.manageNamespaceSelector", false), check: func(t *testing.T, c *chartObjects) {
			if h := c.webhookConfiguration("hami-webhook"); h.NamespaceSelector != nil {
				t.Errorf("namespaceSelector %v rendered", h.NamespaceSelector)
			}
		}},
		{name: "scheduler.admissionWebhook.enabled false", values: nested("scheduler.admissionWebhook.enabled", false), check: func(t *testing.T, c *chartObjects) {
			for _, o := range c.objs {
				if strings.HasPrefix(o.GetName(), "hami-webhook") {
					t.Errorf("%s/%s rendered without the webhook", o.GetKind(), o.GetName())
				}
			}
		}},
		{name: "scheduler.certManager.enabled", values: nested("scheduler.certManager.enabled", true), check: func(t *testing.T, c *chartObjects) {
			if c.find("Certificate", "hami-webhook") == nil || c.find("Issuer", "hami-webhook-issuer") == nil {
				t.Errorf("no Certificate and self-signed Issuer: %s", c.names())
			}
			if c.find("MutatingWebhookConfiguration", "hami-webhook").GetAnnotations()["cert-manager.io/inject-ca-from"] != "hami-system/hami-webhook" {
				t.Error("no CA injection")
			}
			if hasArg(c.deployment("hami-webhook"), "--self-managed-certs") {
				t.Error("the webhook still manages its certificates")
			}
		}},
		{name: "global image settings", values: nested("global", map[string]any{"imageRegistry": "registry.example.com/", "imagePullSecrets": []any{"regcred"}}), check: func(t *testing.T, c *chartObjects) {
			for _, name := range []string{"hami-scheduler", "hami-webhook"} {
				d := c.deployment(name)
				if !strings.HasPrefix(container(d).Image, "registry.example.com/hami-scheduler:") || !reflect.DeepEqual(d.Spec.Template.Spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) {
					t.Errorf("%s image %s pull secrets %v", name, container(d).Image, d.Spec.Template.Spec.ImagePullSecrets)
				}
			}
		}},
		{name: "fullnameOverride", values: map[string]any{"fullnameOverride": "gpu"}, check: checkNames("gpu")},
		{name: "nameOverride", values: map[string]any{"nameOverride": "vgpu"}, check: checkNames("hami-scheduler-vgpu")},
		{name: "namespaceOverride", values: map[string]any{"namespaceOverride": "gpu-system"}, check: func(t *testing.T, c *chartObjects) {
			for _, o := range c.objs {
				if ns := o.GetNamespace(); ns != "" && ns != "gpu-system" && ns != "kube-system" {
					t.Errorf("%s/%s in %s", o.GetKind(), o.GetName(), ns)
				}
			}
			if le := c.schedulerConfig("hami-scheduler")["leaderElection"].(map[string]any); le["resourceNamespace"] != "gpu-system" {
				t.Errorf("lease namespace %v", le["resourceNamespace"])
			}
			if !hasArg(c.deployment("hami-webhook"), "--cert-dns-name=hami-webhook.gpu-system.svc") {
				t.Errorf("webhook args %q", argsOf(c.deployment("hami-webhook")))
			}
		}},
		{name: "prometheus.enabled", caps: true, values: nested("prometheus", map[string]any{"enabled": true, "webhook": true, "labels": map[string]any{"release": "kube-prometheus"}}), check: func(t *testing.T, c *chartObjects) {
			for _, name := range []string{"hami-scheduler-metrics-monitor", "hami-webhook-metrics-monitor"} {
				if o := c.find("ServiceMonitor", name); o == nil || o.GetLabels()["release"] != "kube-prometheus" {
					t.Errorf("ServiceMonitor %s: %v", name, o)
				}
			}
		}},
		{name: "prometheus.enabled without the CRD", values: nested("prometheus.enabled", true), check: func(t *testing.T, c *chartObjects) {
			if slices.ContainsFunc(c.objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ServiceMonitor" }) {
				t.Error("a ServiceMonitor on a cluster that serves none")
			}
		}},
		{name: "dashboards.enabled", values: nested("dashboards.enabled", true), check: func(t *testing.T, c *chartObjects) {
			cm := &corev1.ConfigMap{}
			c.get("ConfigMap", "hami-scheduler-dashboard", cm)
			if cm.Labels["grafana_dashboard"] != "1" || !strings.Contains(cm.Data["hami-scheduler.json"], "hami_gpu_memory_limit_bytes") {
				t.Errorf("dashboard ConfigMap labels %v", cm.Labels)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caps := KubeCapabilities(37)
			if tt.caps {
				caps = withServiceMonitor()
			}
			c, err := renderChart(t, tt.values, caps)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// checkNames: every object named after the prefix (<prefix>-scheduler,
// <prefix>-webhook, ...), and every reference between them (bindings,
// volumes, the webhook's Service and certificate) follows.
func checkNames(prefix string) func(t *testing.T, c *chartObjects) {
	return func(t *testing.T, c *chartObjects) {
		for _, o := range c.objs {
			if o.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(o.GetName(), prefix+"-") {
				t.Errorf("%s/%s not named after %s", o.GetKind(), o.GetName(), prefix)
			}
		}
		sched, hook := c.deployment(prefix+"-scheduler"), c.deployment(prefix+"-webhook")
		if sched.Spec.Template.Spec.ServiceAccountName != prefix+"-scheduler" || sched.Spec.Template.Spec.Volumes[0].ConfigMap.Name != prefix+"-scheduler-config" {
			t.Errorf("scheduler pod %+v", sched.Spec.Template.Spec)
		}
		for _, want := range []string{"--cert-secret=hami-system/" + prefix + "-webhook-tls", "--cert-dns-name=" + prefix + "-webhook.hami-system.svc", "--webhook-configuration=" + prefix + "-webhook"} {
			if !hasArg(hook, want) {
				t.Errorf("webhook args %q lack %s", argsOf(hook), want)
			}
		}
		if svc := c.webhookConfiguration(prefix + "-webhook").ClientConfig.Service; svc.Name != prefix+"-webhook" {
			t.Errorf("webhook configuration calls %s", svc.Name)
		}
		if p := c.find("ValidatingAdmissionPolicy", prefix+"-scheduling-annotations"); p == nil || !strings.Contains(describe(p.Object), "system:serviceaccount:hami-system:"+prefix+"-scheduler") {
			t.Error("the admission policy does not trust the renamed scheduler")
		}
	}
}

// TestHAMiRefusedKeys: a HAMi key without a meaning here fails the render
// naming it and why; at the value that asks for nothing this chart lacks,
// it is accepted.
func TestHAMiRefusedKeys(t *testing.T) {
	tests := []struct {
		key   string
		value any
		// want is part of the message; "" when the value is accepted.
		want string
	}{
		{"global.imageTag", "v2.10.0", "global.imageTag: it tags HAMi's images"},
		{"global.gpuHookPath", "/usr/local", "global.gpuHookPath: it is where HAMi's device plugin"},
		{"global.managedNodeSelectorEnable", true, "global.managedNodeSelectorEnable: HAMi v2.10 only hands it"},
		{"global.managedNodeSelectorEnable", false, ""},
		{"global.managedNodeSelector", map[string]any{"usage": "gpu"}, "global.managedNodeSelector.usage: HAMi v2.10 only hands it"},
		{"podSecurityPolicy.enabled", true, "podSecurityPolicy.enabled: PodSecurityPolicy is gone"},
		{"podSecurityPolicy.enabled", false, ""},
		{"scheduler.nodeLabelSelector", map[string]any{"gpu": "on"}, "scheduler.nodeLabelSelector.gpu: HAMi's --node-label-selector"},
		{"scheduler.kubeScheduler.enabled", false, "scheduler.kubeScheduler.enabled: kube-scheduler is hami-scheduler itself"},
		{"scheduler.kubeScheduler.enabled", true, ""},
		{"scheduler.kubeScheduler.image.tag", "v1.30.1", "scheduler.kubeScheduler.image.tag: kube-scheduler is hami-scheduler itself"},
		{"scheduler.kubeScheduler.extraNewArgs", []any{"--config=/config/config.yaml", "-v=4"}, "scheduler.kubeScheduler.extraNewArgs: kube-scheduler is"},
		{"scheduler.extender.extraArgs", []any{"--debug"}, "scheduler.extender.extraArgs: there is no extender"},
		{"scheduler.admissionWebhook.customURL.enabled", true, "scheduler.admissionWebhook.customURL.enabled: the API server calls hami-webhook"},
		{"scheduler.admissionWebhook.customURL.enabled", false, ""},
		{"scheduler.patch.enabled", false, "scheduler.patch.enabled: there are no certificate jobs"},
		{"scheduler.patch.enabled", true, ""},
		{"scheduler.patch.image.tag", "v1.5.2", "scheduler.patch.image.tag: there are no certificate jobs"},
		{"scheduler.service.httpPort", 443, "scheduler.service.httpPort: the webhook has a Service of its own"},
		{"scheduler.service.schedulerPort", 31998, "scheduler.service.schedulerPort: the webhook has a Service of its own"},
		{"devicePlugin.enabled", true, "devicePlugin.enabled: this chart installs no device plugin"},
		{"devicePlugin.enabled", false, ""},
		{"devicePlugin.deviceSplitCount", 5, "devicePlugin.deviceSplitCount: it configures HAMi's device plugin"},
		{"mockDevicePlugin.enabled", true, "mockDevicePlugin.enabled: this chart installs no device plugin"},
		{"legacyMetrics", true, "legacyMetrics: HAMi's --legacy-metrics names"},
		{"legacyMetrics", false, ""},
		{"devices.ascend.image", "ascend-device-plugin:v1", "devices.ascend.image: it configures Ascend's device plugin"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+describe(tt.value), func(t *testing.T) {
			_, err := renderChart(t, nested(tt.key, tt.value), nil)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// TestValueConflicts: values whose combination the chart cannot honour
// fail the render naming them; every refusal is named at once.
func TestValueConflicts(t *testing.T) {
	content := map[string]any{"deviceConfig": map[string]any{"content": "nvidia:\n  resourceCountName: nvidia.com/gpu\n"}}
	tests := []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"HAMi device keys and the plugin's vendors", merged(map[string]any{"resourceMem": "nvidia.com/gpumem"}, nested("scheduler.pluginArgs.vendors", []any{map[string]any{"name": "nvidia"}})),
			[]string{"resourceMem: HAMi's device keys describe its device-config.yaml, which scheduler.pluginArgs.vendors excludes"}},
		{"a file field with a given device config", merged(content, nested("scheduler.overwriteEnv", "true")),
			[]string{"scheduler.overwriteEnv: it sets a field of the device-config.yaml HAMi's chart renders"}},
		{"a resource name with a given device config is read", merged(content, map[string]any{"resourceMem": "nvidia.com/gpumem"}), nil},
		{"a policy hami-scheduler has no default for", nested("scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy", "topology-aware"),
			[]string{"scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy: topology-aware is not a default hami-scheduler has"}},
		{"two policies", merged(nested("scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy", "spread"), nested("scheduler.pluginArgs.nodeSchedulerPolicy", "binpack")),
			[]string{"scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy: spread differs from scheduler.pluginArgs.nodeSchedulerPolicy binpack"}},
		{"two burst bounds", merged(nested("scheduler.burstQueueWait", "10s"), nested("scheduler.pluginArgs.burstQueueWait", "5s")),
			[]string{"scheduler.burstQueueWait: 10s differs from scheduler.pluginArgs.burstQueueWait 5s"}},
		{"the same burst bound twice", merged(nested("scheduler.burstQueueWait", "10s"), nested("scheduler.pluginArgs.burstQueueWait", "10s")), nil},
		{"a Service to another port", nested("scheduler.service.monitorTargetPort", 9999),
			[]string{"scheduler.service.monitorTargetPort: 9999 is not the port of scheduler.metricsBindAddress :9395"}},
		{"a ServiceMonitor without a listener", merged(nested("scheduler.metricsBindAddress", ""), nested("prometheus.enabled", true)),
			[]string{"prometheus.enabled: the ServiceMonitor scrapes the scheduler's metrics Service"}},
		{"a ServiceMonitor without the Service", merged(nested("scheduler.service.enabled", false), nested("prometheus.enabled", true)),
			[]string{"prometheus.enabled: the ServiceMonitor scrapes the scheduler's metrics Service"}},
		{"HAMi's chart default and a given config", merged(content, nested("deviceConfig.hamiChartDefault", true)),
			[]string{"deviceConfig.hamiChartDefault: a device config is given"}},
		{"two contents", merged(content, nested("device-config.content", "hygon:\n  resourceCountName: hygon.com/dcunum\n")),
			[]string{"deviceConfig.content and HAMi's device-config.content are both set and differ"}},
		{"every refusal at once", merged(nested("devicePlugin.deviceSplitCount", 5), nested("global.imageTag", "v2.10.0"), map[string]any{"legacyMetrics": true}),
			[]string{"devicePlugin.deviceSplitCount:", "global.imageTag:", "legacyMetrics:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderChart(t, tt.values, nil)
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one saying %q", err, want)
				}
			}
		})
	}
}
