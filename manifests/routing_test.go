package manifests_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
	"github.com/hami-scheduler/hami-scheduler/manifests"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// chartDeviceConfig is HAMi v2.10's chart default device config.
const chartDeviceConfig = "../test/testdata/device-config.yaml"

// vendorResources returns every resource name of every vendor as the
// device packages define them: each vendor that can be enabled by name,
// with its defaults, and every vendor of HAMi's chart device config (its
// Ascend and Iluvatar chips included). count is true for card counts.
func vendorResources(t *testing.T) map[corev1.ResourceName]bool {
	t.Helper()
	var configs []devices.Config
	for _, name := range vendors.Known() {
		configs = append(configs, devices.Config{Name: name})
	}
	fromFile, err := config.FromDeviceConfigFile(chartDeviceConfig, deviceconfig.Options{EnableAscend: true, EnableIluvatar: true})
	if err != nil {
		t.Fatal(err)
	}
	names := map[corev1.ResourceName]bool{}
	for _, cs := range [][]devices.Config{configs, fromFile.Configs} {
		for _, c := range cs {
			reg, err := vendors.NewRegistry([]devices.Config{c})
			if err != nil {
				t.Fatalf("vendor %s: %v", c.Name, err)
			}
			for _, v := range reg.Vendors() {
				r := v.Resources()
				for _, n := range r.All() {
					names[n] = names[n] || n == r.Count
				}
			}
		}
	}
	if len(names) < 40 {
		t.Fatalf("only %d vendor resources found: %v", len(names), names)
	}
	return names
}

// shippedWebhook is the MutatingWebhookConfiguration of manifests/webhook.yaml.
func shippedWebhook(t *testing.T) admissionv1.MutatingWebhook {
	t.Helper()
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests.WebhookYAML)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		var cfg admissionv1.MutatingWebhookConfiguration
		if err := yaml.UnmarshalStrict(doc, &cfg); err != nil {
			t.Fatal(err)
		}
		if len(cfg.Webhooks) != 1 {
			t.Fatalf("want one webhook, got %d", len(cfg.Webhooks))
		}
		return cfg.Webhooks[0]
	}
	t.Fatal("manifests/webhook.yaml has no MutatingWebhookConfiguration")
	return admissionv1.MutatingWebhook{}
}

// matcher compiles the webhook's matchConditions as the API server does
// (generic webhook dispatcher, stored-expression environment).
func matcher(t *testing.T, wh admissionv1.MutatingWebhook) matchconditions.Matcher {
	t.Helper()
	if len(wh.MatchConditions) == 0 {
		t.Fatal("the shipped webhook has no matchConditions")
	}
	expressions := make([]celplugin.ExpressionAccessor, len(wh.MatchConditions))
	for i, mc := range wh.MatchConditions {
		expressions[i] = &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}
	}
	compiler := celplugin.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	filter := compiler.CompileCondition(expressions, celplugin.OptionalVariableDeclarations{HasAuthorizer: true}, environment.StoredExpressions)
	return matchconditions.NewMatcher(filter, wh.FailurePolicy, "webhook", "admit", wh.Name)
}

// matches reports whether the API server would send the pod's CREATE to
// the webhook; it fails the test on an evaluation error.
func matches(t *testing.T, m matchconditions.Matcher, pod *corev1.Pod) bool {
	t.Helper()
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	attr := admission.NewAttributesRecord(pod, nil, gvk, pod.Namespace, pod.Name, gvr, "", admission.Create, &metav1.CreateOptions{}, false, nil)
	got := m.Match(context.Background(), &admission.VersionedAttributes{Attributes: attr, VersionedObject: admission.NewLazyObject(pod), VersionedKind: gvk}, nil, nil)
	if got.Error != nil {
		t.Fatalf("matchConditions: %v", got.Error)
	}
	return got.Matches
}

func podAsking(init bool, inRequests bool, rl corev1.ResourceList) *corev1.Pod {
	c := corev1.Container{Name: "main", Image: "busybox"}
	if inRequests {
		c.Resources.Requests = rl
	} else {
		c.Resources.Limits = rl
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}
	if init {
		pod.Spec.InitContainers = []corev1.Container{c}
		pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "busybox"}}
	} else {
		pod.Spec.Containers = []corev1.Container{c}
	}
	return pod
}

// TestWebhookMatchesEveryVendor: the shipped matchConditions send the
// webhook a pod that asks, in limits or requests of a regular or an init
// container, for any resource of any vendor, and spare pods that ask for
// cpu and memory only.
func TestWebhookMatchesEveryVendor(t *testing.T) {
	m := matcher(t, shippedWebhook(t))
	for name := range vendorResources(t) {
		for _, init := range []bool{false, true} {
			for _, inRequests := range []bool{false, true} {
				pod := podAsking(init, inRequests, corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"),
					name:               resource.MustParse("1"),
				})
				if !matches(t, m, pod) {
					t.Errorf("a pod asking for %s (init %v, in requests %v) is not sent to the webhook", name, init, inRequests)
				}
			}
		}
	}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"cpu and memory", podAsking(false, false, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")})},
		{"cpu requested by an init container", podAsking(true, true, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})},
		{"no resources", podAsking(false, false, nil)},
		{"another vendor's device", podAsking(false, false, corev1.ResourceList{"example.com/fpga": resource.MustParse("1")})},
		{"an AWS resource that is not Neuron", podAsking(false, false, corev1.ResourceList{"aws.amazon.com/efa": resource.MustParse("1")})},
	} {
		if matches(t, m, tt.pod) {
			t.Errorf("a pod asking for %s is sent to the webhook", tt.name)
		}
	}
}

// TestNodeResourcesFitIgnoresShares: the shipped scheduler configuration's
// NodeResourcesFit ignores every resource of every vendor that is not a
// card count (nodes never advertise shares of a card), so it does not
// reject the pods the HAMi plugin places.
func TestNodeResourcesFitIgnoresShares(t *testing.T) {
	cfg, err := profile.Versioned(nil)
	if err != nil {
		t.Fatal(err)
	}
	var ignored []string
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name != "NodeResourcesFit" {
			continue
		}
		args, ok := pc.Args.Object.(*configv1.NodeResourcesFitArgs)
		if !ok {
			t.Fatalf("NodeResourcesFit args are %T", pc.Args.Object)
		}
		ignored = args.IgnoredResources
	}
	if len(ignored) == 0 {
		t.Fatal("the shipped NodeResourcesFit ignores no resource")
	}
	for name, count := range vendorResources(t) {
		if !count && !slices.Contains(ignored, string(name)) {
			t.Errorf("NodeResourcesFit does not ignore %s", name)
		}
	}
	// The shipped tree is the 1.37 band's: the HAMi plugin checks
	// nvidia.com/gpu where a device plugin advertises it (DRA nodes
	// advertise none).
	if !slices.Contains(ignored, "nvidia.com/gpu") {
		t.Error("NodeResourcesFit checks nvidia.com/gpu, which DRA nodes do not advertise")
	}
}
