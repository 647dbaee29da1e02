package switchover

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestSwitchThereAndBack: back after a switch restores HAMi's scheduler
// replicas, its webhook configuration as it was, and stops
// hami-scheduler; the record goes.
func TestSwitchThereAndBack(t *testing.T) {
	tests := []struct {
		name string
		objs []runtime.Object
		// steps of the way back.
		steps []string
		want  observed
	}{{
		name: "from a standby install",
		objs: append(hamiObjects(1), ourDeployment(0)),
		steps: []string{"Deployment hami-system/hami-framework-scheduler (hami-scheduler: it stops before HAMi's starts",
			"Deployment kube-system/hami-scheduler (HAMi's scheduler, and its webhook server) to 1",
			"create MutatingWebhookConfiguration hami-webhook as recorded", "remove the annotation hami.io/switch-record"},
		want: observed{hamiReplicas: 1, hamiPods: 1, webhook: true},
	}, {
		name: "HAMi with three replicas, hami-scheduler with one",
		objs: append(hamiObjects(3), withPods(ourDeployment(1))...),
		steps: []string{"hami-system/hami-framework-scheduler", "kube-system/hami-scheduler (HAMi's scheduler, and its webhook server) to 3",
			"create MutatingWebhookConfiguration hami-webhook", "remove the annotation"},
		want: observed{hamiReplicas: 3, hamiPods: 3, webhook: true},
	}, {
		name: "HAMi's release without a webhook",
		objs: append(withPods(hamiDeployment("hami", "hami", 1, "hami-scheduler")), ourDeployment(0)),
		steps: []string{"hami-system/hami-framework-scheduler", "kube-system/hami-scheduler (HAMi's scheduler, and its webhook server) to 1",
			"remove the annotation"},
		want: observed{hamiReplicas: 1, hamiPods: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newClient(t, "hami-scheduler", tt.objs...)
			ctx := context.Background()
			webhookBefore, _ := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "hami-webhook", metav1.GetOptions{})
			if err := Switch(ctx, client, testOptions()); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			o := testOptions()
			o.Out = &out
			if err := Back(ctx, client, o); err != nil {
				t.Fatalf("Back: %v\n%s", err, out.String())
			}
			t.Log(out.String())
			checkSteps(t, out.String(), tt.steps)
			if got := observeTest(t, client); got != tt.want {
				t.Errorf("after the way back %+v, want %+v", got, tt.want)
			}
			if !tt.want.webhook {
				return
			}
			webhookAfter, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "hami-webhook", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(keptWebhookConfiguration(webhookBefore), keptWebhookConfiguration(webhookAfter)); diff != "" {
				t.Errorf("HAMi's webhook configuration (-before +after):\n%s", diff)
			}
		})
	}
}

// TestBackRefuses: without a record there is nothing to undo; a record
// that cannot be read is named.
func TestBackRefuses(t *testing.T) {
	garbled := hamiDeployment("hami", "hami", 0, "hami-scheduler")
	garbled.Annotations = map[string]string{RecordAnnotation: "{not json"}
	future := hamiDeployment("hami", "hami", 0, "hami-scheduler")
	future.Annotations = map[string]string{RecordAnnotation: `{"version":2}`}
	tests := []struct {
		name    string
		objs    []runtime.Object
		wantErr string
	}{
		{"never switched", append(hamiObjects(1), ourDeployment(0)), "has no annotation hami.io/switch-record: there is no switch to undo"},
		{"garbled record", []runtime.Object{garbled, ourDeployment(2)}, "annotation hami.io/switch-record: invalid character"},
		{"record of another version", []runtime.Object{future, ourDeployment(2)}, "version 2, this kubectl-hami reads version 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newClient(t, "hami-scheduler", tt.objs...)
			err := Back(context.Background(), client, testOptions())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Back error = %v, want one saying %q", err, tt.wantErr)
			}
			if w := writes(client.Actions()); len(w) > 0 {
				t.Errorf("refused, but wrote: %v", w)
			}
		})
	}
}

// TestBackLeavesAWebhookConfigurationThere: when a helm upgrade has
// re-created HAMi's webhook configuration, back leaves it as it is.
func TestBackLeavesAWebhookConfigurationThere(t *testing.T) {
	client := newClient(t, "hami-scheduler", append(switched(t), hamiWebhook("hami"), ourDeployment(2))...)
	var out bytes.Buffer
	o := testOptions()
	o.Out = &out
	if err := Back(context.Background(), client, o); err != nil {
		t.Fatal(err)
	}
	checkSteps(t, out.String(), []string{"hami-system/hami-framework-scheduler", "kube-system/hami-scheduler", "remove the annotation"})
}
