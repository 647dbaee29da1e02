package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
)

// kubectl hami why: a pending pod of 30,000 MiB against two cards of
// 40 GiB with 20,960 MiB taken on each: the node does not fit, and each
// card says why (insufficient memory), with what it has free.
func TestWhyPendingPod(t *testing.T) {
	n := node("gpu-0", nil, map[string]string{nvidia.RegisterAnnotation: `[{"id":"` + p4a + `","index":0,"count":10,"devmem":40960,"devcore":100,"type":"NVIDIA-A100","numa":0,"health":true},{"id":"` + p4b + `","index":1,"count":10,"devmem":40960,"devcore":100,"type":"NVIDIA-A100","numa":0,"health":true}]`})
	holders := []*corev1.Pod{
		pod("default", "a", "gpu-0", corev1.PodRunning, p4a+",NVIDIA,20960,0:;", "main"),
		pod("default", "b", "gpu-0", corev1.PodRunning, p4b+",NVIDIA,20960,0:;", "main"),
	}
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "big"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			nvidia.DefaultCountName: resource.MustParse("1"), nvidia.DefaultMemoryName: resource.MustParse("30000"),
		}},
	}}}}
	client := fake.NewClientset(n, holders[0], holders[1], pending)
	vendors, err := clustervendors.FromConfigs(nil) // NVIDIA alone
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = runWhy(context.Background(), &out, vendors, func() (kubernetes.Interface, error) { return client, nil },
		func() (dynamic.Interface, error) { return nil, nil }, "default", "big")
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"asks 1 NVIDIA card(s) of 30000 MiB", "node gpu-0: does not fit: 2/2 cards: insufficient memory", "20000/40960 MiB free"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "insufficient memory") != 3 {
		t.Errorf("want the node's verdict and both cards refusing for memory:\n%s", got)
	}
}
