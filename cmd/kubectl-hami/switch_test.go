package main

import (
	"bytes"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// switchCluster holds HAMi's scheduler Deployment of release "hami" in
// kube-system (labels and the extender's --scheduler-name, as HAMi's
// chart renders them) and hami-scheduler's, at 0 replicas, in
// hami-system, named as values-beside-hami.yaml names it (the flags'
// defaults); hami-scheduler's webhook, played by a reactor, gives a
// dry-run pod labelled hami.io/webhook=ignore the name hami-scheduler.
func switchCluster() *fake.Clientset {
	labels := map[string]string{"app.kubernetes.io/component": "hami-scheduler", "app.kubernetes.io/instance": "hami", "app.kubernetes.io/name": "hami"}
	hami := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hami-scheduler", Namespace: "kube-system", Labels: labels, UID: "hami"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vgpu-scheduler-extender", Command: []string{"scheduler", "--scheduler-name=hami-scheduler"}}}},
		}},
	}
	zero := int32(0)
	ours := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hami-framework-scheduler", Namespace: "hami-system", UID: "ours"},
		Spec:       appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "hami-framework-scheduler"}}},
	}
	client := fake.NewClientset([]runtime.Object{hami, ours}...)
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pod := action.(k8stesting.CreateActionImpl).GetObject().(*corev1.Pod).DeepCopy()
		if pod.Labels["hami.io/webhook"] == "ignore" {
			pod.Spec.SchedulerName = "hami-scheduler"
		}
		return true, pod, nil
	})
	return client
}

// TestSwitchCommand: the flags reach the switch; a dry run through the
// command prints the steps and changes nothing; bad flags are named.
func TestSwitchCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantOut  []string
		wantErr  string
		wantNoop bool
	}{
		{name: "dry run", args: []string{"--hami-namespace", "kube-system", "--dry-run"},
			wantOut: []string{"HAMi's release hami in namespace kube-system", "Steps (dry run: none is taken):",
				"1. record", "2. scale Deployment kube-system/hami-scheduler (HAMi's scheduler", "3. scale Deployment hami-system/hami-framework-scheduler (hami-scheduler) to 2"}},
		{name: "dry run with replicas", args: []string{"--hami-namespace=kube-system", "--dry-run", "--scheduler-replicas=3"},
			wantOut: []string{"(hami-scheduler) to 3"}},
		{name: "dry run back without a switch", args: []string{"--hami-namespace=kube-system", "--dry-run", "--back"},
			wantErr: "there is no switch to undo"},
		{name: "no namespace", args: []string{"--dry-run"}, wantErr: "--hami-namespace is required"},
		{name: "no replicas", args: []string{"--hami-namespace=kube-system", "--scheduler-replicas=0"}, wantErr: "--scheduler-replicas must be at least 1"},
		{name: "another release", args: []string{"--hami-namespace=kube-system", "--hami-release=vgpu", "--dry-run"},
			wantErr: "is HAMi's release vgpu installed there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := switchCluster()
			var out, errOut bytes.Buffer
			root := newRootCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut},
				func() (kubernetes.Interface, error) { return client, nil }, nil)
			root.SetArgs(append([]string{"switch"}, tt.args...))
			err := root.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, a := range client.Actions() {
				if a.GetVerb() == "update" || a.GetVerb() == "delete" || a.GetVerb() == "patch" {
					t.Errorf("dry run did %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}
