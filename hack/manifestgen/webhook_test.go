package manifestgen

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestWebhookExcludedNamespaces: by default, as in HAMi, the webhook sees
// every namespace but those labelled hami.io/webhook=ignore (kube-system
// included: HAMi's examples run device pods there); webhook.excludedNamespaces
// adds a name exclusion.
func TestWebhookExcludedNamespaces(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   []metav1.LabelSelectorRequirement
	}{
		{name: "default", want: []metav1.LabelSelectorRequirement{
			{Key: "hami.io/webhook", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ignore"}},
		}},
		{name: "excluded", values: map[string]any{"webhook": map[string]any{"excludedNamespaces": []any{"kube-system", "batch"}}},
			want: []metav1.LabelSelectorRequirement{
				{Key: "hami.io/webhook", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ignore"}},
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "batch"}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rendered, err := Render(chartDir(), Namespace, tt.values)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Decode(Documents(map[string]string{"webhook.yaml": rendered["templates/webhook.yaml"]}))
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, o := range objs {
				if o.GetKind() != "MutatingWebhookConfiguration" {
					continue
				}
				found = true
				data, err := o.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				var mwc admissionv1.MutatingWebhookConfiguration
				if err := yaml.Unmarshal(data, &mwc); err != nil {
					t.Fatal(err)
				}
				got := mwc.Webhooks[0].NamespaceSelector.MatchExpressions
				if len(got) != len(tt.want) {
					t.Fatalf("namespaceSelector %+v, want %+v", got, tt.want)
				}
				for i := range got {
					if got[i].Key != tt.want[i].Key || got[i].Operator != tt.want[i].Operator || len(got[i].Values) != len(tt.want[i].Values) {
						t.Errorf("requirement %d: %+v, want %+v", i, got[i], tt.want[i])
						continue
					}
					for j := range got[i].Values {
						if got[i].Values[j] != tt.want[i].Values[j] {
							t.Errorf("requirement %d: %+v, want %+v", i, got[i], tt.want[i])
						}
					}
				}
			}
			if !found {
				t.Fatal("no MutatingWebhookConfiguration rendered")
			}
		})
	}
}
