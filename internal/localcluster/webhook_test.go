package localcluster

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hami-scheduler/hami-scheduler/devices"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The registered webhook is manifests/webhook.yaml's, with only the client
// config (URL and CA instead of the in-cluster Service) and the optional
// namespace narrowing changed.
func TestShippedWebhookConfiguration(t *testing.T) {
	shipped, err := shippedMutatingWebhook()
	if err != nil {
		t.Fatal(err)
	}
	if shipped.Webhooks[0].ClientConfig.Service == nil || len(shipped.Webhooks[0].MatchConditions) == 0 {
		t.Fatalf("shipped webhook %+v: want a Service client config and matchConditions", shipped.Webhooks[0])
	}
	tests := []struct {
		name     string
		opts     WebhookOptions
		wantName string
		wantAlso map[string]string
	}{
		{name: "as shipped", wantName: shipped.Name},
		{name: "scoped to labelled namespaces", opts: WebhookOptions{ConfigurationName: "e2e", NamespaceLabels: map[string]string{"e2e": "on"}},
			wantName: "e2e", wantAlso: map[string]string{"e2e": "on"}},
		{name: "another configuration (e.g. rendered with other values)", opts: WebhookOptions{Configuration: renamed(shipped, "rendered")},
			wantName: "rendered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ShippedWebhookConfiguration("https://127.0.0.1:1/mutate-pods", []byte("CA"), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.wantName {
				t.Errorf("name %q, want %q", got.Name, tt.wantName)
			}
			wh := got.Webhooks[0]
			if wh.ClientConfig.Service != nil || wh.ClientConfig.URL == nil || string(wh.ClientConfig.CABundle) != "CA" {
				t.Errorf("client config %+v, want the URL and CA alone", wh.ClientConfig)
			}
			if diff := cmp.Diff(tt.wantAlso, wh.NamespaceSelector.MatchLabels); diff != "" && len(tt.wantAlso) > 0 {
				t.Errorf("namespace labels (-want +got):\n%s", diff)
			}
			// Everything else is the shipped object.
			want := shipped.DeepCopy()
			want.Name = got.Name
			want.Webhooks[0].ClientConfig = wh.ClientConfig
			want.Webhooks[0].NamespaceSelector.MatchLabels = wh.NamespaceSelector.MatchLabels
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("registration differs from manifests/webhook.yaml beyond URL, CA and scope (-shipped +registered):\n%s", diff)
			}
			excluded := slices.ContainsFunc(wh.NamespaceSelector.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool {
				return r.Operator == metav1.LabelSelectorOpNotIn && r.Key == devices.WebhookIgnoreLabel && slices.Contains(r.Values, "ignore")
			})
			if !excluded || *wh.FailurePolicy != admissionv1.Fail {
				t.Errorf("shipped exclusions or failure policy lost: %+v", wh)
			}
		})
	}
}

// renamed is a copy of the configuration with another name.
func renamed(c *admissionv1.MutatingWebhookConfiguration, name string) *admissionv1.MutatingWebhookConfiguration {
	c = c.DeepCopy()
	c.Name = name
	return c
}
