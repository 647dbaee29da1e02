package manifestgen

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/hami-scheduler/hami-scheduler/internal/kubeversion"
)

func chartDir() string { return filepath.Join(RepoRoot(), ChartPath) }

// TestChartBands: the chart's band list is internal/kubeversion.Bands, and
// its kubeVersion admits exactly the minors some band serves.
func TestChartBands(t *testing.T) {
	chrt, err := loader.Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	var helpers string
	for _, f := range chrt.Templates {
		if f.Name == "templates/_helpers.tpl" {
			helpers = string(f.Data)
		}
	}
	m := regexp.MustCompile(`(?s)define "hami-scheduler.bands" -}}\n(.*?)\n\{\{- end`).FindStringSubmatch(helpers)
	if m == nil {
		t.Fatal(`templates/_helpers.tpl defines no "hami-scheduler.bands"`)
	}
	var want []string
	for _, b := range kubeversion.Bands {
		entry := fmt.Sprint(b.Minor)
		if b.TestedBelow > 0 {
			entry += fmt.Sprintf(":%d", b.TestedBelow)
		}
		want = append(want, entry)
	}
	if got := strings.TrimSpace(m[1]); got != strings.Join(want, " ") {
		t.Errorf("chart bands %q, kubeversion.Bands %q", got, strings.Join(want, " "))
	}
	for minor := 20; minor <= 45; minor++ {
		v := fmt.Sprintf("v1.%d.3", minor)
		_, served := kubeversion.BandFor(minor)
		if got := chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, v); got != served {
			t.Errorf("kubeVersion %q admits %s: %v; a band serves it: %v", chrt.Metadata.KubeVersion, v, got, served)
		}
	}
}

// TestImageBand: the images' tag is <appVersion>-k8s1.<band> of the band
// serving the cluster's minor, image.kubernetesBand or image.tag override
// it, and a cluster no band serves fails the render with what to do.
func TestImageBand(t *testing.T) {
	tests := []struct {
		name    string
		minor   string
		values  map[string]any
		want    string
		wantErr string
	}{
		{name: "1.37", minor: "37", want: "hami-scheduler:0.1.0-k8s1.37"},
		{name: "1.34", minor: "34", want: "hami-scheduler:0.1.0-k8s1.37"},
		{name: "managed 1.36+", minor: "36+", want: "hami-scheduler:0.1.0-k8s1.37"},
		{name: "band override", minor: "36", values: map[string]any{"image": map[string]any{"kubernetesBand": "1.33"}}, want: "hami-scheduler:0.1.0-k8s1.33"},
		{name: "tag override", minor: "36", values: map[string]any{"image": map[string]any{"tag": "dev"}}, want: "hami-scheduler:dev"},
		{name: "1.33", minor: "33", want: "hami-scheduler:0.1.0-k8s1.33"},
		{name: "1.31", minor: "31", want: "hami-scheduler:0.1.0-k8s1.33"},
		{name: "1.30", minor: "30", want: "hami-scheduler:0.1.0-k8s1.30"},
		{name: "1.28", minor: "28", want: "hami-scheduler:0.1.0-k8s1.30"},
		{name: "1.27 refused", minor: "27", wantErr: "incompatible with Kubernetes v1.27.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caps := KubeCapabilities(0)
			caps.KubeVersion = chartutil.KubeVersion{Version: "v1." + strings.TrimSuffix(tt.minor, "+") + ".0", Major: "1", Minor: tt.minor}
			rendered, err := RenderFor(chartDir(), Namespace, tt.values, caps)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("render error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			images := regexp.MustCompile(`(?m)^\s+image: (\S+)$`).FindAllStringSubmatch(rendered["templates/scheduler.yaml"]+rendered["templates/webhook.yaml"], -1)
			if len(images) != 2 {
				t.Fatalf("found images %v, want the scheduler's and the webhook's", images)
			}
			for _, img := range images {
				if img[1] != tt.want {
					t.Errorf("image %s, want %s", img[1], tt.want)
				}
			}
		})
	}
}

// TestAdmissionPolicyOnlyWhereServed: the policy is rendered only for a
// cluster that serves admissionregistration.k8s.io/v1 policies.
func TestAdmissionPolicyOnlyWhereServed(t *testing.T) {
	caps := KubeCapabilities(kubeversion.Bands[0].Minor)
	rendered, err := RenderFor(chartDir(), Namespace, nil, caps)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rendered["templates/admission-policy.yaml"], "kind: ValidatingAdmissionPolicy") {
		t.Errorf("no policy rendered for a cluster that serves it")
	}
	var without chartutil.VersionSet
	for _, v := range caps.APIVersions {
		if !strings.HasPrefix(v, "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy") {
			without = append(without, v)
		}
	}
	caps.APIVersions = without
	if rendered, err = RenderFor(chartDir(), Namespace, nil, caps); err != nil {
		t.Fatal(err)
	}
	if text, ok := rendered["templates/admission-policy.yaml"]; ok {
		t.Errorf("policy rendered for a cluster that does not serve it:\n%s", text)
	}
}

// TestFeatureGatesOfTheBand: scheduler.featureGates reaches the scheduler
// less the gates its band's kube-scheduler does not know, which it would
// refuse at start.
func TestFeatureGatesOfTheBand(t *testing.T) {
	tests := []struct {
		minor int
		want  string
	}{
		{minor: 37, want: "--feature-gates=NominatedNodeNameForExpectation=false"},
		{minor: 34, want: "--feature-gates=NominatedNodeNameForExpectation=false"},
		{minor: 33, want: ""},
		{minor: 31, want: ""},
		{minor: 30, want: ""},
	}
	for _, tt := range tests {
		rendered, err := RenderFor(chartDir(), Namespace, nil, KubeCapabilities(tt.minor))
		if err != nil {
			t.Fatal(err)
		}
		got := regexp.MustCompile(`--feature-gates=\S*`).FindString(rendered["templates/scheduler.yaml"])
		if got != tt.want {
			t.Errorf("1.%d: scheduler runs with %q, want %q", tt.minor, got, tt.want)
		}
	}
	values := map[string]any{"scheduler": map[string]any{"featureGates": "NominatedNodeNameForExpectation=false, SchedulerQueueingHints=true"}}
	rendered, err := RenderFor(chartDir(), Namespace, values, KubeCapabilities(33))
	if err != nil {
		t.Fatal(err)
	}
	if got := regexp.MustCompile(`--feature-gates=\S*`).FindString(rendered["templates/scheduler.yaml"]); got != "--feature-gates=SchedulerQueueingHints=true" {
		t.Errorf("1.33 with two gates: %q, want the gate 1.33 knows only", got)
	}
}

// TestGangValues: gangs.inTree turns GenericWorkload on where the server
// serves the in-tree PodGroup (1.37) and is refused below; without
// Coscheduling the profile keeps PrioritySort and the chart neither
// installs the CRD nor grants PodGroups; installCRD false leaves the CRD
// out alone.
func TestGangValues(t *testing.T) {
	inTree := map[string]any{"gangs": map[string]any{"inTree": map[string]any{"enabled": true}}}
	rendered, err := RenderFor(chartDir(), Namespace, inTree, KubeCapabilities(37))
	if err != nil {
		t.Fatal(err)
	}
	if got := regexp.MustCompile(`--feature-gates=\S*`).FindString(rendered["templates/scheduler.yaml"]); got != "--feature-gates=NominatedNodeNameForExpectation=false,GenericWorkload=true" {
		t.Errorf("gangs.inTree on 1.37: %q", got)
	}
	if _, err := RenderFor(chartDir(), Namespace, inTree, KubeCapabilities(36)); err == nil || !strings.Contains(err.Error(), "gangs.inTree needs Kubernetes 1.37") {
		t.Errorf("gangs.inTree on 1.36: %v, want a refusal naming 1.37", err)
	}

	rendered, err = RenderFor(chartDir(), Namespace, nil, KubeCapabilities(37))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rendered["templates/podgroup-crd.yaml"], "podgroups.scheduling.x-k8s.io") ||
		!strings.Contains(rendered["templates/scheduler-config.yaml"], "name: Coscheduling") ||
		!strings.Contains(rendered["templates/scheduler.yaml"], "scheduling.x-k8s.io") {
		t.Error("defaults: want the PodGroup CRD, Coscheduling in the profile and its RBAC")
	}

	off := map[string]any{"gangs": map[string]any{"coscheduling": map[string]any{"enabled": false}}}
	rendered, err = RenderFor(chartDir(), Namespace, off, KubeCapabilities(37))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(rendered["templates/podgroup-crd.yaml"]) != "" ||
		strings.Contains(rendered["templates/scheduler-config.yaml"], "Coscheduling") ||
		strings.Contains(rendered["templates/scheduler.yaml"], "scheduling.x-k8s.io") {
		t.Error("gangs.coscheduling off: the CRD, the plugin or its RBAC is still rendered")
	}

	noCRD := map[string]any{"gangs": map[string]any{"coscheduling": map[string]any{"installCRD": false}}}
	rendered, err = RenderFor(chartDir(), Namespace, noCRD, KubeCapabilities(37))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(rendered["templates/podgroup-crd.yaml"]) != "" || !strings.Contains(rendered["templates/scheduler-config.yaml"], "name: Coscheduling") {
		t.Error("installCRD false: want the plugin without the CRD")
	}

	args := map[string]any{"gangs": map[string]any{"coscheduling": map[string]any{"args": map[string]any{"permitWaitingTimeSeconds": 10}}}}
	rendered, err = RenderFor(chartDir(), Namespace, args, KubeCapabilities(37))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rendered["templates/scheduler-config.yaml"], "permitWaitingTimeSeconds: 10") {
		t.Error("gangs.coscheduling.args not in the Coscheduling pluginConfig")
	}
}
