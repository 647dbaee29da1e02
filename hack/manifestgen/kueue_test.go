package manifestgen

import (
	"strings"
	"testing"
)

// TestKueueValues: kueue.admissionCheck.enabled adds the check's flags to
// hami-scheduler and the RBAC for Kueue's Workloads and AdmissionChecks;
// off (the default), neither.
func TestKueueValues(t *testing.T) {
	on := map[string]any{"kueue": map[string]any{"admissionCheck": map[string]any{"enabled": true, "promiseTimeout": "90s"}}}
	rendered, err := RenderFor(chartDir(), Namespace, on, KubeCapabilities(37))
	if err != nil {
		t.Fatal(err)
	}
	sched := rendered["templates/scheduler.yaml"]
	for _, want := range []string{"- --hami-kueue-card-fit\n", "--hami-kueue-card-fit-promise-timeout=90s", "--hami-kueue-card-fit-retry=5s",
		`resources: ["workloads", "admissionchecks"]`, `resources: ["workloads/status", "admissionchecks/status"]`} {
		if !strings.Contains(sched, want) {
			t.Errorf("kueue.admissionCheck on: scheduler.yaml lacks %q", want)
		}
	}
	rendered, err = RenderFor(chartDir(), Namespace, nil, KubeCapabilities(37))
	if err != nil {
		t.Fatal(err)
	}
	if s := rendered["templates/scheduler.yaml"]; strings.Contains(s, "kueue") {
		t.Error("defaults: the check's flags or RBAC are rendered")
	}
}
