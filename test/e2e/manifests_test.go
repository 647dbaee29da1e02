package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacregistryvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	hamiconfig "github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// TestManifestsGenerated: the kustomize tree's generated files are what
// `make manifests` writes from the chart today.
func TestManifestsGenerated(t *testing.T) {
	root := manifestgen.RepoRoot()
	files, err := manifestgen.KustomizeFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, "manifests", name))
		if err != nil {
			t.Errorf("%v (run make manifests)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("manifests/%s differs from the chart's rendering (run make manifests):\n%s", name, cmp.Diff(string(want), string(got)))
		}
	}
}

// TestManifestsMatchChart: `kubectl apply -k manifests/` and `helm install
// -n hami-system` with the chart's default values create the same objects
// (the kustomize tree adds only the namespace).
func TestManifestsMatchChart(t *testing.T) {
	kustomized := kustomizeBuild(t)
	rendered, err := manifestgen.Render(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath), manifestgen.Namespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	charted := decodeDocuments(t, manifestgen.Documents(rendered))
	byKey := func(objs []*unstructured.Unstructured) map[string]map[string]any {
		m := map[string]map[string]any{}
		for _, o := range objs {
			if o.GetKind() == "Namespace" {
				continue
			}
			key := objectKey(o)
			if _, dup := m[key]; dup {
				t.Errorf("%s twice", key)
			}
			// Through JSON, so that numbers compare as one type.
			raw, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			m[key] = obj
		}
		return m
	}
	if diff := cmp.Diff(byKey(charted), byKey(kustomized)); diff != "" {
		t.Errorf("kustomize build manifests/ differs from the chart (-chart +kustomize):\n%s", diff)
	}
	if !slices.ContainsFunc(kustomized, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "Namespace" && o.GetName() == manifestgen.Namespace
	}) {
		t.Errorf("kustomize build manifests/ has no Namespace %s", manifestgen.Namespace)
	}
}

// TestKustomizeApplyDryRun: every object of `kubectl apply -k manifests/`
// is accepted by the API server (server-side dry run; the namespace is
// created for real, as its objects need it).
func TestKustomizeApplyDryRun(t *testing.T) {
	objs := kustomizeBuild(t)
	if len(objs) < 20 {
		t.Fatalf("kustomize build manifests/: %d objects", len(objs))
	}
	applyDryRun(t, objs)
}

// TestChartApplyDryRun renders the chart with the Helm library for several
// sets of values and has the API server accept every object (server-side
// dry run), including a pod of each Deployment in a namespace that enforces
// the restricted Pod Security Standard.
func TestChartApplyDryRun(t *testing.T) {
	deviceConfig := "nvidia:\n  resourceCountName: nvidia.com/gpu\n  resourceMemoryName: nvidia.com/gpumem\n" +
		"  resourceCoreName: nvidia.com/gpucores\n  defaultMemory: 0\n  defaultCores: 0\n  defaultGPUNum: 1\n"
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{name: "defaults", check: func(t *testing.T, objs []*unstructured.Unstructured) {
			args := webhookArgs(t, objs)
			if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--device-config-file") }) {
				t.Errorf("webhook args %q name a device config", args)
			}
			if _, ok := pluginArgs(t, objs); ok {
				t.Errorf("the HAMi plugin has args")
			}
		}},
		{name: "device config, digest and settings", values: map[string]any{
			"image":           map[string]any{"repository": "registry.example.com/hami-scheduler", "digest": digest},
			"schedulerName":   "gpu-scheduler",
			"deviceConfig":    map[string]any{"content": deviceConfig},
			"scheduler":       map[string]any{"replicas": 3, "pluginArgs": map[string]any{"nodeSchedulerPolicy": "spread", "nodeLockWait": "10s"}},
			"webhook":         map[string]any{"failurePolicy": "Ignore", "extraArgs": []any{"--max-request-bytes=1000000"}, "resources": map[string]any{"limits": map[string]any{"memory": "256Mi"}}},
			"admissionPolicy": map[string]any{"enabled": false},
		}, check: func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, d := range deployments(t, objs) {
				if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/hami-scheduler@"+digest {
					t.Errorf("%s image %q", d.Name, img)
				}
			}
			args := webhookArgs(t, objs)
			for _, want := range []string{"--scheduler-name=gpu-scheduler", "--device-config-file=/etc/hami-device/device-config.yaml", "--max-request-bytes=1000000"} {
				if !slices.Contains(args, want) {
					t.Errorf("webhook args %q lack %s", args, want)
				}
			}
			a, ok := pluginArgs(t, objs)
			if !ok || a.DeviceConfigFile != "/etc/hami-device/device-config.yaml" || a.NodeSchedulerPolicy != "spread" || a.NodeLockWait.Duration.String() != "10s" {
				t.Errorf("plugin args %+v", a)
			}
			if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
				return o.GetKind() == "ConfigMap" && o.GetName() == "hami-scheduler-device"
			}) {
				t.Errorf("no ConfigMap hami-scheduler-device")
			}
			if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ValidatingAdmissionPolicy" }) {
				t.Errorf("admission policy rendered though disabled")
			}
		}},
		{name: "HAMi's device ConfigMap", values: map[string]any{
			"deviceConfig": map[string]any{"existingConfigMap": "hami-scheduler-device", "enableAscend": true},
		}, check: func(t *testing.T, objs []*unstructured.Unstructured) {
			if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
				return o.GetKind() == "ConfigMap" && o.GetName() == "hami-scheduler-device"
			}) {
				t.Errorf("the chart creates the existing ConfigMap")
			}
			for _, d := range deployments(t, objs) {
				if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
					return v.ConfigMap != nil && v.ConfigMap.Name == "hami-scheduler-device"
				}) {
					t.Errorf("%s does not mount ConfigMap hami-scheduler-device", d.Name)
				}
			}
			if args := webhookArgs(t, objs); !slices.Contains(args, "--enable-ascend=true") {
				t.Errorf("webhook args %q", args)
			}
			if a, ok := pluginArgs(t, objs); !ok || !a.EnableAscend || a.DeviceConfigFile == "" {
				t.Errorf("plugin args %+v", a)
			}
		}},
		// HAMi v2.10's value keys (hack/manifestgen's TestHAMiValuesFile
		// checks their effects).
		{name: "HAMi's values", values: hamiUserValues(t), check: func(t *testing.T, objs []*unstructured.Unstructured) {
			if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
				return o.GetKind() == "ConfigMap" && o.GetName() == "hami-scheduler-device"
			}) {
				t.Errorf("no ConfigMap hami-scheduler-device (HAMi's device config)")
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := fmt.Sprintf("hami-chart-%d", i)
			createNamespace(t, ns, map[string]string{
				"pod-security.kubernetes.io/enforce": "restricted",
				"hami.io/webhook":                    "ignore",
			})
			rendered, err := manifestgen.Render(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath), ns, tt.values)
			if err != nil {
				t.Fatal(err)
			}
			objs := decodeDocuments(t, manifestgen.Documents(rendered))
			for _, o := range objs {
				if o.GetNamespace() != "" && o.GetNamespace() != ns && o.GetNamespace() != "kube-system" {
					t.Errorf("%s outside the release namespace", objectKey(o))
				}
			}
			tt.check(t, objs)
			applyDryRun(t, objs)
		})
	}
}

// hamiUserValues are test/testdata/hami-values.yaml: HAMi v2.10's value keys.
func hamiUserValues(t *testing.T) map[string]any {
	t.Helper()
	values, err := manifestgen.ReadValues(filepath.Join(manifestgen.RepoRoot(), manifestgen.HAMiValuesFile))
	if err != nil {
		t.Fatal(err)
	}
	return values
}

// kustomizeBuild is `kubectl kustomize manifests/`, with kustomize's Go
// library.
func kustomizeBuild(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(manifestgen.RepoRoot(), "manifests"))
	if err != nil {
		t.Fatalf("kustomize build manifests/: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// decodeDocuments turns YAML documents into objects.
func decodeDocuments(t *testing.T, docs []string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifestgen.Decode(docs)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func objectKey(o *unstructured.Unstructured) string { return manifestgen.ObjectKey(o) }

// createNamespace creates a namespace for real, if missing, and leaves it
// (no namespace controller runs to empty a deleted one).
func createNamespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	_, err := controlPlane.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// applyDryRun dry-runs every object on the control plane
// (manifestgen.ApplyDryRun) and fails the test for each it refuses.
func applyDryRun(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	errs, err := manifestgen.ApplyDryRun(t.Context(), controlPlane.Config, objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		t.Error(err)
	}
}

// deployments are the Deployments among objs.
func deployments(t *testing.T, objs []*unstructured.Unstructured) []appsv1.Deployment {
	t.Helper()
	var out []appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	if len(out) != 2 {
		t.Fatalf("%d Deployments, want hami-scheduler and hami-webhook", len(out))
	}
	return out
}

// webhookArgs are the hami-webhook container's args.
func webhookArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	for _, d := range deployments(t, objs) {
		if d.Name == "hami-webhook" {
			return d.Spec.Template.Spec.Containers[0].Args
		}
	}
	t.Fatal("no Deployment hami-webhook")
	return nil
}

// pluginArgs decodes the scheduler configuration of the ConfigMap
// hami-scheduler-config as kube-scheduler does (strictly, defaulted,
// validated) and returns the HAMi plugin's args, and whether the
// configuration sets them.
func pluginArgs(t *testing.T, objs []*unstructured.Unstructured) (*hamiconfig.HAMiArgs, bool) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || o.GetName() != "hami-scheduler-config" {
			continue
		}
		data, _, _ := unstructured.NestedString(o.Object, "data", "scheduler-config.yaml")
		cfg, err := profile.Decode([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
			t.Fatalf("invalid scheduler configuration: %v", err)
		}
		if len(cfg.Profiles) != 1 {
			t.Fatalf("%d profiles", len(cfg.Profiles))
		}
		set := false
		var args *hamiconfig.HAMiArgs
		for _, pc := range cfg.Profiles[0].PluginConfig {
			if pc.Name != "HAMi" {
				continue
			}
			a, ok := pc.Args.(*hamiconfig.HAMiArgs)
			if !ok {
				t.Fatalf("HAMi args are %T", pc.Args)
			}
			args = a
			set = !cmp.Equal(a, defaultPluginArgs(t))
		}
		if args == nil {
			t.Fatal("no HAMi plugin config")
		}
		return args, set
	}
	t.Fatal("no ConfigMap hami-scheduler-config")
	return nil, false
}

// defaultPluginArgs are the HAMi plugin's args when the configuration sets
// none (kube-scheduler defaults every plugin's args).
func defaultPluginArgs(t *testing.T) *hamiconfig.HAMiArgs {
	t.Helper()
	cfg, err := profile.Decode([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: x\n  plugins:\n    multiPoint:\n      enabled:\n      - name: HAMi\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if a, ok := pc.Args.(*hamiconfig.HAMiArgs); ok {
			return a
		}
	}
	t.Fatal("no default HAMi args")
	return nil
}

// TestChartRBAC: the chart's RBAC, beside kube-system's bootstrap roles,
// lets hami-scheduler and hami-webhook do what they need and nothing the
// review took away (any lease but their own, secrets, updating nodes). It
// runs Kubernetes' RBAC authorizer on the objects, not the API server (the
// in-process one authorizes everything).
func TestChartRBAC(t *testing.T) {
	const ns = "hami-chart-rbac"
	rendered, err := manifestgen.Render(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath), ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		roles               []*rbacv1.Role
		roleBindings        []*rbacv1.RoleBinding
		clusterRoles        []*rbacv1.ClusterRole
		clusterRoleBindings []*rbacv1.ClusterRoleBinding
	)
	for _, r := range bootstrappolicy.ClusterRoles() {
		clusterRoles = append(clusterRoles, r.DeepCopy())
	}
	for namespace, rs := range bootstrappolicy.NamespaceRoles() {
		for _, r := range rs {
			r := r.DeepCopy()
			r.Namespace = namespace
			roles = append(roles, r)
		}
	}
	convert := func(o *unstructured.Unstructured, into any) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range decodeDocuments(t, manifestgen.Documents(rendered)) {
		switch o.GetKind() {
		case "Role":
			r := &rbacv1.Role{}
			convert(o, r)
			roles = append(roles, r)
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			convert(o, b)
			roleBindings = append(roleBindings, b)
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			convert(o, r)
			clusterRoles = append(clusterRoles, r)
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			convert(o, b)
			clusterRoleBindings = append(clusterRoleBindings, b)
		}
	}
	_, static := rbacregistryvalidation.NewTestRuleResolver(roles, roleBindings, clusterRoles, clusterRoleBindings)
	authz := rbac.New(static, static, static, static)

	scheduler := "system:serviceaccount:" + ns + ":hami-scheduler"
	webhook := "system:serviceaccount:" + ns + ":hami-webhook"
	type attrs struct{ verb, group, resource, subresource, namespace, name string }
	tests := []struct {
		user    string
		a       attrs
		allowed bool
	}{
		{scheduler, attrs{"patch", "", "nodes", "", "", "n1"}, true},
		{scheduler, attrs{"watch", "", "nodes", "", "", ""}, true},
		{scheduler, attrs{"patch", "", "pods", "", "default", "p1"}, true},
		{scheduler, attrs{"list", "", "resourcequotas", "", "", ""}, true},
		{scheduler, attrs{"create", "", "pods", "binding", "default", "p1"}, true},
		{scheduler, attrs{"create", "events.k8s.io", "events", "", "default", ""}, true},
		{scheduler, attrs{"create", "coordination.k8s.io", "leases", "", ns, ""}, true},
		{scheduler, attrs{"get", "coordination.k8s.io", "leases", "", ns, "hami-scheduler"}, true},
		{scheduler, attrs{"update", "coordination.k8s.io", "leases", "", ns, "hami-scheduler"}, true},
		{scheduler, attrs{"update", "coordination.k8s.io", "leases", "", ns, "someone-else"}, false},
		{scheduler, attrs{"update", "coordination.k8s.io", "leases", "", "kube-system", "kube-controller-manager"}, false},
		{scheduler, attrs{"get", "", "configmaps", "", "kube-system", "extension-apiserver-authentication"}, true},
		{scheduler, attrs{"create", "authentication.k8s.io", "tokenreviews", "", "", ""}, true},
		{scheduler, attrs{"get", "", "secrets", "", ns, "hami-webhook-tls"}, false},
		{scheduler, attrs{"update", "", "nodes", "", "", "n1"}, false},
		{webhook, attrs{"list", "", "pods", "", "", ""}, true},
		{webhook, attrs{"watch", "", "resourcequotas", "", "", ""}, true},
		{webhook, attrs{"create", "authentication.k8s.io", "tokenreviews", "", "", ""}, true},
		{webhook, attrs{"create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""}, true},
		{webhook, attrs{"patch", "", "pods", "", "default", "p1"}, false},
		// Self-managed certificates (the default): the webhook reads and
		// updates the Secrets of its own namespace, no other, and only the
		// MutatingWebhookConfigurations.
		{webhook, attrs{"update", "", "secrets", "", ns, "hami-webhook-tls"}, true},
		{webhook, attrs{"get", "", "secrets", "", "kube-system", "anything"}, false},
		{webhook, attrs{"update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "hami-webhook"}, true},
		{webhook, attrs{"update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "", "x"}, false},
	}
	for _, tt := range tests {
		a := tt.a
		record := authorizer.AttributesRecord{
			User: &user.DefaultInfo{Name: tt.user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}},
			Verb: a.verb, APIGroup: a.group, APIVersion: "*", Resource: a.resource, Subresource: a.subresource,
			Namespace: a.namespace, Name: a.name, ResourceRequest: true,
		}
		decision, reason, err := authz.Authorize(t.Context(), record)
		if got := decision == authorizer.DecisionAllow; got != tt.allowed || err != nil {
			t.Errorf("%s %s %s/%s/%s %s/%s: allowed %v, want %v (%s %v)", tt.user, a.verb, a.group, a.resource, a.subresource,
				a.namespace, a.name, got, tt.allowed, reason, err)
		}
	}
}

// The chart's three certificate modes render what each needs: the webhook
// managing its own (default), cert-manager's Certificate and CA injection,
// or an operator-provided caBundle. (cert-manager's kinds are not served by
// the in-process API server, so this renders without applying.)
func TestChartCertificateModes(t *testing.T) {
	has := func(objs []*unstructured.Unstructured, kind, name string) bool {
		return slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind && o.GetName() == name })
	}
	tests := []struct {
		mode       string
		selfArgs   bool
		secret     bool
		certMgr    bool
		caBundleIn bool
	}{
		{mode: "self", selfArgs: true, secret: true},
		{mode: "cert-manager", certMgr: true},
		{mode: "external", caBundleIn: true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			rendered, err := manifestgen.Render(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath), "hami-system",
				map[string]any{"webhook": map[string]any{"certificates": tt.mode, "caBundle": "Q0E="}})
			if err != nil {
				t.Fatal(err)
			}
			objs := decodeDocuments(t, manifestgen.Documents(rendered))
			if got := slices.Contains(webhookArgs(t, objs), "--self-managed-certs"); got != tt.selfArgs {
				t.Errorf("--self-managed-certs in args: %v, want %v", got, tt.selfArgs)
			}
			if got := has(objs, "Secret", "hami-webhook-tls"); got != tt.secret {
				t.Errorf("Secret rendered: %v, want %v", got, tt.secret)
			}
			if got := has(objs, "Certificate", "hami-webhook"); got != tt.certMgr {
				t.Errorf("Certificate rendered: %v, want %v", got, tt.certMgr)
			}
			for _, o := range objs {
				if o.GetKind() != "MutatingWebhookConfiguration" {
					continue
				}
				if got := o.GetAnnotations()["cert-manager.io/inject-ca-from"] == "hami-system/hami-webhook"; got != tt.certMgr {
					t.Errorf("CA injection annotation: %v, want %v", got, tt.certMgr)
				}
				hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
				ca, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle")
				if got := ca == "Q0E="; got != tt.caBundleIn {
					t.Errorf("caBundle from values: %v, want %v", got, tt.caBundleIn)
				}
			}
		})
	}
}
