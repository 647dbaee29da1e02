package switchover

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// switched is HAMi's release after a switch from one HAMi replica: its
// scheduler at 0 with the record, no webhook configuration.
func switched(t *testing.T) []runtime.Object {
	t.Helper()
	d := hamiDeployment("hami", "hami", 1, "hami-scheduler")
	rec := &Record{Version: recordVersion, SchedulerName: "hami-scheduler", Replicas: 1,
		WebhookConfiguration: keptWebhookConfiguration(hamiWebhook("hami")),
		HAMiScheduler:        DeploymentRef{Namespace: oursNS, Name: DefaultDeployment}}
	value, err := rec.encode()
	if err != nil {
		t.Fatal(err)
	}
	d.Annotations = map[string]string{RecordAnnotation: value}
	d.Spec.Replicas = new(int32)
	return []runtime.Object{d, hamiDevicePlugin("hami")}
}

func TestSwitch(t *testing.T) {
	tests := []struct {
		name string
		objs func(t *testing.T) []runtime.Object
		// release is HAMi's release name; "" for hami.
		release string
		// gives is the scheduler name hami-scheduler's webhook gives
		// device pods; "" for none registered.
		gives string
		// steps are words of each step, in order.
		steps []string
		want  observed
	}{{
		name:  "standby hami-scheduler takes over",
		objs:  func(*testing.T) []runtime.Object { return append(hamiObjects(1), ourDeployment(0)) },
		gives: "hami-scheduler",
		steps: []string{"record HAMi's scheduler replicas (1)", "delete MutatingWebhookConfiguration hami-webhook",
			"Deployment kube-system/hami-scheduler (HAMi's scheduler, and its webhook server) to 0", "Deployment hami-system/hami-framework-scheduler (hami-scheduler) to 2"},
		want: observed{hamiReplicas: 0, hamiPods: 0, webhook: false, ourReplicas: 2, ourPods: 2, record: true},
	}, {
		name: "both running: hami-scheduler stops first and comes back with its replicas",
		objs: func(*testing.T) []runtime.Object {
			return append(hamiObjects(2), withPods(ourDeployment(3))...)
		},
		gives: "hami-scheduler",
		steps: []string{"record HAMi's scheduler replicas (2)", "delete MutatingWebhookConfiguration hami-webhook",
			"Deployment hami-system/hami-framework-scheduler (hami-scheduler, running beside HAMi's", "Deployment kube-system/hami-scheduler (HAMi's scheduler", "Deployment hami-system/hami-framework-scheduler (hami-scheduler) to 3"},
		want: observed{hamiReplicas: 0, hamiPods: 0, ourReplicas: 3, ourPods: 3, record: true},
	}, {
		name: "a helm upgrade brought HAMi back: switched again, the first record kept",
		objs: func(t *testing.T) []runtime.Object {
			objs := switched(t)
			d := objs[0].(*appsv1.Deployment)
			d.Spec.Replicas = new(int32)
			*d.Spec.Replicas = 1
			return append(append(withPods(d), hamiWebhook("hami"), hamiDevicePlugin("hami")), withPods(ourDeployment(2))...)
		},
		gives: "hami-scheduler",
		steps: []string{"delete MutatingWebhookConfiguration hami-webhook", "Deployment hami-system/hami-framework-scheduler (hami-scheduler, running beside",
			"Deployment kube-system/hami-scheduler (HAMi's scheduler", "Deployment hami-system/hami-framework-scheduler (hami-scheduler) to 2"},
		want: observed{ourReplicas: 2, ourPods: 2, record: true},
	}, {
		name:  "already switched: nothing to change",
		objs:  func(t *testing.T) []runtime.Object { return append(switched(t), withPods(ourDeployment(2))...) },
		gives: "hami-scheduler",
		want:  observed{ourReplicas: 2, ourPods: 2, record: true},
	}, {
		name:    "a release not named hami: fullname <release>-hami",
		release: "vgpu",
		objs: func(*testing.T) []runtime.Object {
			objs := withPods(hamiDeployment("vgpu", "vgpu-hami", 1, "hami-scheduler"))
			return append(objs, hamiWebhook("vgpu-hami"), ourDeployment(0))
		},
		gives: "hami-scheduler",
		steps: []string{"record", "delete MutatingWebhookConfiguration vgpu-hami-webhook", "kube-system/vgpu-hami-scheduler", "hami-system/hami-framework-scheduler"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newClient(t, tt.gives, tt.objs(t)...)
			o := testOptions()
			o.HAMiRelease = tt.release
			var out bytes.Buffer
			o.Out = &out
			if err := Switch(context.Background(), client, o); err != nil {
				t.Fatalf("Switch: %v\n%s", err, out.String())
			}
			t.Log(out.String())
			checkSteps(t, out.String(), tt.steps)
			if tt.want != (observed{}) {
				if got := observeTest(t, client); got != tt.want {
					t.Errorf("after the switch %+v, want %+v\n%s", got, tt.want, out.String())
				}
			}
		})
	}
}

// checkSteps fails unless the report's numbered steps contain the words,
// one step each, in order (none: "Nothing to change.").
func checkSteps(t *testing.T, report string, words []string) {
	t.Helper()
	var steps []string
	for line := range strings.SplitSeq(report, "\n") {
		if l := strings.TrimSpace(line); len(l) > 2 && l[0] >= '1' && l[0] <= '9' && strings.Contains(l[:3], ". ") {
			steps = append(steps, l)
		}
	}
	if len(words) == 0 {
		if len(steps) > 0 || !strings.Contains(report, "Nothing to change.") {
			t.Errorf("want no step, got:\n%s", report)
		}
		return
	}
	if len(steps) != len(words) {
		t.Fatalf("%d steps, want %d:\n%s", len(steps), len(words), report)
	}
	for i, w := range words {
		if !strings.Contains(steps[i], w) {
			t.Errorf("step %d = %q, want it to say %q", i+1, steps[i], w)
		}
	}
}

// TestSwitchRecordsWhatItChanges: the record holds HAMi's replicas, its
// webhook configuration (re-creatable: no UID) and hami-scheduler's
// Deployment.
func TestSwitchRecordsWhatItChanges(t *testing.T) {
	client := newClient(t, "hami-scheduler", append(hamiObjects(2), ourDeployment(0))...)
	if err := Switch(context.Background(), client, testOptions()); err != nil {
		t.Fatal(err)
	}
	d, err := client.AppsV1().Deployments(hamiNS).Get(context.Background(), "hami-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readRecord(d)
	if err != nil || got == nil {
		t.Fatalf("record %v, %v", got, err)
	}
	want := &Record{Version: recordVersion, SwitchedAt: got.SwitchedAt, SchedulerName: "hami-scheduler", Replicas: 2,
		WebhookConfiguration: keptWebhookConfiguration(hamiWebhook("hami")),
		HAMiScheduler:        DeploymentRef{Namespace: oursNS, Name: DefaultDeployment, Replicas: 0}}
	want.WebhookConfiguration.UID = ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// TestSwitchRefuses: what the switch cannot do safely, it refuses before
// any change.
func TestSwitchRefuses(t *testing.T) {
	tests := []struct {
		name    string
		objs    []runtime.Object
		gives   string
		release string
		wantErr string
	}{
		{"no webhook of hami-scheduler", append(hamiObjects(1), ourDeployment(0)), "", "hami", "hami-scheduler's webhook does not admit device pods"},
		{"hami-scheduler's webhook gives another name", append(hamiObjects(1), ourDeployment(0)), "gpu-scheduler", "hami", `schedulerName "gpu-scheduler"`},
		{"hami-scheduler not installed", hamiObjects(1), "hami-scheduler", "hami", "hami-scheduler's Deployment hami-system/hami-framework-scheduler does not exist"},
		{"no HAMi release of that name", append(hamiObjects(1), ourDeployment(0)), "hami-scheduler", "other", "is HAMi's release other installed there"},
		{"HAMi's scheduler name unknown", []runtime.Object{func() *appsv1.Deployment {
			d := hamiDeployment("hami", "hami", 1, "x")
			d.Spec.Template.Spec.Containers[1].Command = []string{"scheduler"}
			return d
		}(), ourDeployment(0)}, "hami-scheduler", "hami", "no container has --scheduler-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newClient(t, tt.gives, tt.objs...)
			o := testOptions()
			o.HAMiRelease = tt.release
			o.Timeout = 50 * o.Interval
			err := Switch(context.Background(), client, o)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Switch error = %v, want one saying %q", err, tt.wantErr)
			}
			if w := writes(client.Actions()); len(w) > 0 {
				t.Errorf("refused, but wrote: %v", w)
			}
		})
	}
}

// TestDryRunChangesNothing: a dry run reads and probes (a server-side dry
// run), prints the steps of the run, and writes nothing.
func TestDryRunChangesNothing(t *testing.T) {
	tests := []struct {
		name  string
		objs  func(t *testing.T) []runtime.Object
		back  bool
		steps []string
	}{
		{"switch", func(*testing.T) []runtime.Object { return append(hamiObjects(1), ourDeployment(0)) }, false,
			[]string{"record", "delete MutatingWebhookConfiguration hami-webhook", "kube-system/hami-scheduler", "hami-system/hami-framework-scheduler"}},
		{"back", func(t *testing.T) []runtime.Object { return append(switched(t), withPods(ourDeployment(2))...) }, true,
			[]string{"hami-system/hami-framework-scheduler", "kube-system/hami-scheduler (HAMi's scheduler, and its webhook server) to 1", "create MutatingWebhookConfiguration hami-webhook", "remove the annotation"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newClient(t, "hami-scheduler", tt.objs(t)...)
			before := observeTest(t, client)
			var out bytes.Buffer
			o := testOptions()
			o.DryRun, o.Out = true, &out
			do := Switch
			if tt.back {
				do = Back
			}
			if err := do(context.Background(), client, o); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "dry run") {
				t.Errorf("report does not say it is a dry run:\n%s", out.String())
			}
			checkSteps(t, out.String(), tt.steps)
			if w := writes(client.Actions()); len(w) > 0 {
				t.Errorf("dry run wrote: %v", w)
			}
			if after := observeTest(t, client); after != before {
				t.Errorf("dry run changed %+v to %+v", before, after)
			}
		})
	}
}

// writes are the actions that change something: not get, list, watch, nor
// a server-side dry-run create.
func writes(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		case "create":
			if c, ok := a.(k8stesting.CreateActionImpl); ok && len(c.CreateOptions.DryRun) > 0 {
				continue
			}
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}
