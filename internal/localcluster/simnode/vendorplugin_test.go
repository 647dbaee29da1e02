package simnode

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/cambricon"
	"github.com/hami-scheduler/hami-scheduler/devices/mthreads"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// The vendors without a public plugin are served by HAMi's NVIDIA plugin
// code on their own keys: erase the to-allocate entry or check the
// allocated one, set bind-phase=success and the vendor's served flags,
// release the vendor's lock.
func TestSimulatedVendorAllocate(t *testing.T) {
	tests := []struct {
		name      string
		resource  corev1.ResourceName
		lockKey   string
		lockValue string
		pod       map[string]string
		wantCalls string
		wantErr   string
		wantPhase string
		// want lists annotations the pod must end with ("" = absent).
		want     map[string]string
		wantLock bool
	}{
		{name: "Moore Threads: no to-allocate key, no lock",
			resource:  mthreads.DefaultCountName,
			pod:       map[string]string{mthreads.AllocatedAnnotation: ";n1-mthreads-0,Mthreads,16384,8:;"},
			wantCalls: "get pods p|patch pods p", wantPhase: devices.BindPhaseSuccess,
			want: map[string]string{mthreads.AllocatedAnnotation: ";n1-mthreads-0,Mthreads,16384,8:;"}},
		{name: "Moore Threads: no entry for the container: failed",
			resource:  mthreads.DefaultCountName,
			pod:       map[string]string{mthreads.AllocatedAnnotation: "n1-mthreads-0,Mthreads,16384,8:;"},
			wantCalls: "get pods p|patch pods p", wantErr: "no device allocation found", wantPhase: devices.BindPhaseFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p", "")
			delete(pod.Annotations, nvidia.ToAllocateAnnotation)
			for k, v := range tt.pod {
				pod.Annotations[k] = v
			}
			node := testNode("")
			if tt.lockKey != "" {
				node.Annotations[tt.lockKey] = tt.lockValue
			}
			client := fake.NewClientset(node, pod)
			calls := recordCalls(client)
			dp := &devicePlugin{node: "n1", client: client.CoreV1(), mismatched: &atomic.Int64{}}
			p, ok := pluginFor(tt.resource)
			if !ok {
				t.Fatalf("no plugin serves %s", tt.resource)
			}
			// The second container (index 1) asks for one card.
			err := dp.Allocate(context.Background(), p, allocateCall{admitted: pod, container: 1, resource: tt.resource, devices: 1})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Allocate() error = %v, want %q", err, tt.wantErr)
			}
			if got := strings.Join(*calls, "|"); got != tt.wantCalls {
				t.Errorf("calls:\n got %s\nwant %s", strings.ReplaceAll(got, "|", " | "), strings.ReplaceAll(tt.wantCalls, "|", " | "))
			}
			after, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := after.Annotations[devices.BindPhase]; got != tt.wantPhase {
				t.Errorf("bind-phase = %q, want %q", got, tt.wantPhase)
			}
			for k, v := range tt.want {
				if got := after.Annotations[k]; got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			n, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, held := n.Annotations[tt.lockKey]; tt.lockKey != "" && held {
				t.Errorf("lock %s still held", tt.lockKey)
			}
		})
	}
}

// The kubelet calls each endpoint whose resource a container's limits ask,
// once per container, init containers first, in resource-name order, with
// the limit as the device count; requests alone and resources no plugin
// registers get no call.
func TestKubeletCalls(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			"hygon.com/dcunum": resource.MustParse("1"),
		}}}},
		Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{
				nvidia.DefaultCountName:          resource.MustParse("2"),
				nvidia.DefaultMemoryName:         resource.MustParse("3000"),
				"huawei.com/Ascend910B4":         resource.MustParse("1"),
				"huawei.com/Ascend910B4-memory":  resource.MustParse("8192"),
				cambricon.DefaultCoresName:       resource.MustParse("10"),
				cambricon.DefaultMemoryName:      resource.MustParse("20"),
				cambricon.DefaultCountName:       resource.MustParse("1"),
				"aws.amazon.com/neuroncore":      resource.MustParse("1"),
				corev1.ResourceCPU:               resource.MustParse("1"),
				"iluvatar.ai/BI-V150-vgpu":       resource.MustParse("0"),
				"example.com/not-a-device-count": resource.MustParse("1"),
			},
			Requests: corev1.ResourceList{"amd.com/gpu": resource.MustParse("1")},
		}}},
	}}
	var got []string
	for _, kc := range kubeletCalls(pod) {
		got = append(got, strconv.Itoa(kc.call.container)+":"+string(kc.call.resource)+"="+strconv.Itoa(kc.call.devices))
	}
	want := "0:hygon.com/dcunum=1|1:aws.amazon.com/neuroncore=1|1:cambricon.com/mlu.smlu.vcore=10|1:cambricon.com/mlu.smlu.vmemory=20|" +
		"1:huawei.com/Ascend910B4=1|1:nvidia.com/gpu=2"
	if strings.Join(got, "|") != want {
		t.Errorf("calls = %s\nwant    %s", strings.Join(got, "|"), want)
	}
}
