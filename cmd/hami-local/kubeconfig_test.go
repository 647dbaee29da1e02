package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hami-scheduler/hami-scheduler/webhook"
)

// A script that creates device pods the instant the kubeconfig appears gets
// every one of them mutated: hami-local publishes the kubeconfig only once
// the API server sends pods to the webhook. A kubeconfig left by an earlier
// run is removed at start.
func TestKubeconfigOnlyOnceTheWebhookAdmits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole local cluster")
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- up(ctx, []string{"-dir", dir, "-table-every", "0", "-nodes", "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB"}, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("hami-local: %v", err)
		}
	}()

	deadline := time.Now().Add(2 * time.Minute)
	for {
		data, err := os.ReadFile(kubeconfig)
		if err == nil && string(data) != "stale" {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("hami-local ended before writing its kubeconfig: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no kubeconfig within 2 minutes")
		}
		time.Sleep(time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("early-%d", i), Namespace: metav1.NamespaceDefault},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cuda", Image: "cuda", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": resource.MustParse("1000")},
			}}}},
		}
		created, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", p.Name, err)
		}
		if created.Spec.SchedulerName != webhook.DefaultSchedulerName {
			t.Errorf("pod %s created right after the kubeconfig appeared has schedulerName %q, want %s", p.Name, created.Spec.SchedulerName, webhook.DefaultSchedulerName)
		}
	}
}
