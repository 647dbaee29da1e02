package manifestgen

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
)

// chartObjects is the chart rendered with some values, decoded.
type chartObjects struct {
	t    *testing.T
	objs []*unstructured.Unstructured
}

// withServiceMonitor are the capabilities of the newest band's cluster
// that also serves Prometheus Operator's ServiceMonitor.
func withServiceMonitor() *chartutil.Capabilities {
	caps := KubeCapabilities(37)
	caps.APIVersions = append(slices.Clone(caps.APIVersions), "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor")
	return caps
}

// renderChart renders the chart with values for a cluster of caps (nil:
// the newest band's) in the release namespace Namespace.
func renderChart(t *testing.T, values map[string]any, caps *chartutil.Capabilities) (*chartObjects, error) {
	t.Helper()
	if caps == nil {
		caps = KubeCapabilities(37)
	}
	rendered, err := RenderFor(chartDir(), Namespace, values, caps)
	if err != nil {
		return nil, err
	}
	objs, err := Decode(Documents(rendered))
	if err != nil {
		t.Fatal(err)
	}
	return &chartObjects{t: t, objs: objs}, nil
}

// hamiValues are the values of test/testdata/hami-values.yaml.
func hamiValues(t *testing.T) map[string]any {
	t.Helper()
	return readValues(t, HAMiValuesFile)
}

// find is the rendered object of the kind and name, nil when none.
func (c *chartObjects) find(kind, name string) *unstructured.Unstructured {
	return Find(c.objs, kind, name)
}

// get is the rendered object of the kind and name, decoded into out.
func (c *chartObjects) get(kind, name string, out any) {
	c.t.Helper()
	o := c.find(kind, name)
	if o == nil {
		c.t.Fatalf("no %s %s rendered; rendered: %s", kind, name, c.names())
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
		c.t.Fatal(err)
	}
}

func (c *chartObjects) names() string {
	var out []string
	for _, o := range c.objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(out, ", ")
}

func (c *chartObjects) deployment(name string) *appsv1.Deployment {
	c.t.Helper()
	d := &appsv1.Deployment{}
	c.get("Deployment", name, d)
	return d
}

func (c *chartObjects) webhookConfiguration(name string) *admissionv1.MutatingWebhook {
	c.t.Helper()
	mwc := &admissionv1.MutatingWebhookConfiguration{}
	c.get("MutatingWebhookConfiguration", name, mwc)
	return &mwc.Webhooks[0]
}

// schedulerConfig is the KubeSchedulerConfiguration of the ConfigMap
// <scheduler>-config, as a map.
func (c *chartObjects) schedulerConfig(scheduler string) map[string]any {
	c.t.Helper()
	cm := &corev1.ConfigMap{}
	c.get("ConfigMap", scheduler+"-config", cm)
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["scheduler-config.yaml"]), &cfg); err != nil {
		c.t.Fatal(err)
	}
	return cfg
}

// pluginArgs are the args of the plugin's pluginConfig in the scheduler's
// profile, nil when it has none.
func (c *chartObjects) pluginArgs(scheduler, plugin string) map[string]any {
	c.t.Helper()
	profiles, _ := c.schedulerConfig(scheduler)["profiles"].([]any)
	if len(profiles) != 1 {
		c.t.Fatalf("want one profile, got %v", profiles)
	}
	configs, _ := profiles[0].(map[string]any)["pluginConfig"].([]any)
	for _, pc := range configs {
		if pc := pc.(map[string]any); pc["name"] == plugin {
			args, _ := pc["args"].(map[string]any)
			return args
		}
	}
	return nil
}

// ignoredResources is NodeResourcesFit's ignoredResources.
func (c *chartObjects) ignoredResources(scheduler string) []string {
	c.t.Helper()
	var out []string
	for _, r := range c.pluginArgs(scheduler, "NodeResourcesFit")["ignoredResources"].([]any) {
		out = append(out, r.(string))
	}
	return out
}

// deviceConfig is the device-config.yaml of the ConfigMap
// <scheduler>-device, parsed as the binaries parse it.
func (c *chartObjects) deviceConfig(scheduler string) *deviceconfig.Config {
	c.t.Helper()
	cm := &corev1.ConfigMap{}
	c.get("ConfigMap", scheduler+"-device", cm)
	cfg, ignored, err := deviceconfig.Parse([]byte(cm.Data["device-config.yaml"]))
	if err != nil || len(ignored) > 0 {
		c.t.Fatalf("device-config.yaml: %v, unknown keys %q:\n%s", err, ignored, cm.Data["device-config.yaml"])
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		c.t.Fatalf("device-config.yaml: %v", errs.ToAggregate())
	}
	return cfg
}

// container is the pod spec's first container.
func container(d *appsv1.Deployment) *corev1.Container { return &d.Spec.Template.Spec.Containers[0] }

// argsOf are the container's command and args.
func argsOf(d *appsv1.Deployment) []string {
	c := container(d)
	return append(slices.Clone(c.Command), c.Args...)
}

// hasArg reports whether the Deployment's container runs with the argument.
func hasArg(d *appsv1.Deployment, arg string) bool { return slices.Contains(argsOf(d), arg) }

// nested sets a value at a dotted path of a new values map.
func nested(path string, value any) map[string]any {
	keys := strings.Split(path, ".")
	out := map[string]any{keys[len(keys)-1]: value}
	for i := len(keys) - 2; i >= 0; i-- {
		out = map[string]any{keys[i]: out}
	}
	return out
}

// merged is the values of each map, later ones over earlier ones, maps
// merged key by key.
func merged(maps ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range maps {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				if have, ok := out[k].(map[string]any); ok {
					out[k] = merged(have, sub)
					continue
				}
			}
			out[k] = v
		}
	}
	return out
}

func describe(v any) string { return fmt.Sprintf("%v", v) }
