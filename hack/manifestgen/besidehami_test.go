package manifestgen

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/internal/switchover"
)

// objectID is what an object collides on: its kind, its namespace ("" for
// a cluster-scoped kind) and its name.
type objectID struct{ kind, namespace, name string }

func (o objectID) String() string {
	if o.namespace == "" {
		return o.kind + " " + o.name
	}
	return o.kind + " " + o.namespace + "/" + o.name
}

// clusterScoped are the cluster-scoped kinds either chart renders.
var clusterScoped = []string{
	"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
	"ValidatingAdmissionPolicyBinding", "CustomResourceDefinition", "PodSecurityPolicy", "RuntimeClass",
}

// hamiChartObjects are the objects HAMi v2.10's chart (charts/hami of
// Project-HAMi/HAMi) makes for a release named hami (full name "hami") in
// namespace ns, with any values: every template's object, those of
// optional features included (mock device plugin, cert-manager, the
// admission Jobs, PodSecurityPolicy, ServiceMonitors), and the Secret the
// admission-create Job writes. Listed from the chart's templates; the
// RuntimeClass (named by a value) and the leader-election Lease (not
// Helm's; this chart renders none) are left out.
func hamiChartObjects(ns string) []objectID {
	cluster := func(kind string, names ...string) []objectID {
		var out []objectID
		for _, n := range names {
			out = append(out, objectID{kind, "", n})
		}
		return out
	}
	in := func(kind string, names ...string) []objectID {
		var out []objectID
		for _, n := range names {
			out = append(out, objectID{kind, ns, n})
		}
		return out
	}
	return slices.Concat(
		// scheduler/: clusterrole, clusterrolebinding, webhook; job-patch/;
		// device-plugin/monitorrole*; the mock device plugin's RBAC.
		cluster("ClusterRole", "hami-scheduler", "hami-mock-device-plugin", "hami-device-plugin-monitor", "hami-admission"),
		cluster("ClusterRoleBinding", "hami-scheduler", "hami-scheduler-kube", "hami-scheduler-volume",
			"hami-device-plugin", "hami-mock-device-plugin", "hami-admission"),
		cluster("MutatingWebhookConfiguration", "hami-webhook"),
		cluster("PodSecurityPolicy", "hami-admission"),
		in("Deployment", "hami-scheduler"),
		in("DaemonSet", "hami-device-plugin", "hami-mock-device-plugin"),
		in("ServiceAccount", "hami-scheduler", "hami-device-plugin", "hami-mock-device-plugin", "hami-admission"),
		in("ConfigMap", "hami-scheduler", "hami-scheduler-device", "hami-device-plugin"),
		in("Service", "hami-scheduler", "hami-device-plugin-monitor"),
		in("ServiceMonitor", "hami-scheduler-metrics-monitor", "hami-device-plugin-metrics-monitor"),
		in("Role", "hami-scheduler", "hami-admission"),
		in("RoleBinding", "hami-scheduler", "hami-admission"),
		in("Job", "hami-admission-create", "hami-admission-patch"),
		in("Certificate", "hami-scheduler-serving-cert"),
		in("Issuer", "hami-scheduler-selfsigned-issuer"),
		in("Secret", "hami-scheduler-tls"),
	)
}

// hamiNodePorts are the node ports of HAMi's chart's Services at its
// defaults: the scheduler's https (31998) and monitor (31993) ports, the
// device plugin's monitor (31992).
var hamiNodePorts = []int32{31998, 31993, 31992}

// TestBesideHAMi: the chart with values-beside-hami.yaml (as
// docs/switching.md installs it, alone or after a HAMi user's values, with
// every optional object on) renders no object that HAMi's release hami
// has, in another namespace or in HAMi's own, and no node port of HAMi's
// Services; its scheduler Deployment is the one `kubectl hami switch`
// looks for by default, its webhook manages its own configuration, and
// its admission policy trusts its scheduler. The chart's defaults do
// collide (what the values file is for).
func TestBesideHAMi(t *testing.T) {
	beside := readValues(t, BesideHAMiValuesFile)
	allOn := map[string]any{
		"prometheus": map[string]any{"enabled": true, "webhook": true},
		"dashboards": map[string]any{"enabled": true},
	}
	certManager := nested("scheduler.certManager.enabled", true)
	tests := []struct {
		name           string
		values         map[string]any
		ours, hamis    string
		wantCollisions []string
	}{
		{name: "own namespace", values: beside, ours: "hami-system", hamis: "kube-system"},
		{name: "HAMi's namespace kube-system", values: beside, ours: "kube-system", hamis: "kube-system"},
		{name: "HAMi's namespace hami-system", values: beside, ours: "hami-system", hamis: "hami-system"},
		{name: "a HAMi user's values, then beside", values: merged(hamiValues(t), allOn, beside), ours: "hami-system", hamis: "kube-system"},
		{name: "cert-manager", values: merged(allOn, certManager, beside), ours: "kube-system", hamis: "kube-system"},
		{name: "defaults collide", values: nil, ours: "hami-system", hamis: "kube-system",
			wantCollisions: []string{"ClusterRole hami-scheduler", "ClusterRoleBinding hami-scheduler", "MutatingWebhookConfiguration hami-webhook", "node port 31993"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := renderIn(t, tt.ours, tt.values)
			got := collisions(objs, tt.ours, tt.hamis)
			if tt.wantCollisions == nil {
				if len(got) > 0 {
					t.Fatalf("beside HAMi's release in %s, the chart in %s renders HAMi's: %s", tt.hamis, tt.ours, strings.Join(got, ", "))
				}
				checkSwitchFinds(t, objs, tt.ours)
				return
			}
			t.Logf("the chart's defaults collide on %s", strings.Join(got, ", "))
			for _, want := range tt.wantCollisions {
				if !slices.Contains(got, want) {
					t.Errorf("the chart's defaults should collide on %s (HAMi's list or the check is wrong); collisions: %v", want, got)
				}
			}
		})
	}
}

// readValues reads a values file of the repository.
func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	values, err := ReadValues(filepath.Join(RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	return values
}

// renderIn renders the chart for a release in namespace, on a cluster that
// serves ServiceMonitors.
func renderIn(t *testing.T, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	rendered, err := RenderFor(chartDir(), namespace, values, withServiceMonitor())
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(Documents(rendered))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// collisions are the rendered objects (of a release in namespace ours)
// that HAMi's release in namespace hamis has too, and the node ports of
// the rendered Services that HAMi's Services hold.
func collisions(objs []*unstructured.Unstructured, ours, hamis string) []string {
	hami := hamiChartObjects(hamis)
	var out []string
	for _, o := range objs {
		id := objectID{o.GetKind(), o.GetNamespace(), o.GetName()}
		switch {
		case slices.Contains(clusterScoped, id.kind):
			id.namespace = ""
		case id.namespace == "":
			id.namespace = ours
		}
		if slices.Contains(hami, id) {
			out = append(out, id.String())
		}
		for _, port := range nodePorts(o) {
			if slices.Contains(hamiNodePorts, port) {
				out = append(out, fmt.Sprintf("node port %d", port))
			}
		}
	}
	return out
}

// nodePorts are the node ports a rendered Service asks for.
func nodePorts(o *unstructured.Unstructured) []int32 {
	if o.GetKind() != "Service" {
		return nil
	}
	var s corev1.Service
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
		return nil
	}
	var out []int32
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			out = append(out, p.NodePort)
		}
	}
	return out
}

// checkSwitchFinds: the scheduler Deployment is switchover's default
// (--scheduler-deployment), the webhook keeps its own configuration's
// caBundle (or cert-manager's injector does, from the
// rendered Certificate), and the admission policy trusts the scheduler's
// account.
func checkSwitchFinds(t *testing.T, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	c := &chartObjects{t: t, objs: objs}
	c.deployment(switchover.DefaultDeployment)
	webhooks := c.findKind("MutatingWebhookConfiguration")
	if len(webhooks) != 1 {
		t.Fatalf("%d MutatingWebhookConfigurations rendered, want 1", len(webhooks))
	}
	config := webhooks[0]
	webhook := c.deployment(strings.TrimSuffix(switchover.DefaultDeployment, "-scheduler") + "-webhook")
	if inject, ok := config.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
		// cert-manager's CA injector fills the caBundle from the Certificate.
		if inject != ns+"/"+webhook.Name || c.find("Certificate", webhook.Name) == nil {
			t.Errorf("MutatingWebhookConfiguration %s takes its CA from %s, want the rendered Certificate %s/%s", config.GetName(), inject, ns, webhook.Name)
		}
	} else if !hasArg(webhook, "--webhook-configuration="+config.GetName()) {
		t.Errorf("webhook %s runs with %v, want --webhook-configuration=%s", webhook.Name, argsOf(webhook), config.GetName())
	}
	policies := c.findKind("ValidatingAdmissionPolicy")
	account := fmt.Sprintf("'system:serviceaccount:%s:%s'", ns, switchover.DefaultDeployment)
	if len(policies) != 1 || !strings.Contains(fmt.Sprint(policies[0].Object["spec"]), account) {
		t.Errorf("the admission policy does not trust %s: %v", account, policies)
	}
}

// findKind are the rendered objects of the kind.
func (c *chartObjects) findKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range c.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}
