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
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/mthreads"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// Each vendor's simulated plugin serves a container with the calls and
// writes of its kind: erase the to-allocate entry or check the allocated
// one, set bind-phase=success and the vendor's served flags, release the
// vendor's lock.
func TestVendorAllocate(t *testing.T) {
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
		{name: "Hygon: the shared lock's holder, entry erased, lock released",
			resource: hygon.DefaultCountName, lockKey: devices.NodeLock, lockValue: testLockTime + ",ns,p",
			pod:       map[string]string{hygon.ToAllocateAnnotation: "DCU-a,DCU,2000,60:;"},
			wantCalls: "get nodes n1|get pods p|patch pods p|get pods p|patch pods p|get nodes n1|get nodes n1|patch nodes n1",
			wantPhase: devices.BindPhaseSuccess, want: map[string]string{hygon.ToAllocateAnnotation: ";;"}},
		{name: "Cambricon: its own lock released, assigned flag set",
			resource: cambricon.DefaultCountName, lockKey: cambricon.LockAnnotation, lockValue: testLockTime,
			pod: map[string]string{
				cambricon.ToAllocateAnnotation: "n1-cambricon-mlu-0,MLU,5120,10:;", cambricon.AssignedAnnotation: "false",
			},
			wantCalls: "get pods p|patch pods p|get pods p|patch pods p|get nodes n1|get nodes n1|patch nodes n1",
			wantPhase: devices.BindPhaseSuccess,
			want:      map[string]string{cambricon.ToAllocateAnnotation: ";;", cambricon.AssignedAnnotation: "true"}},
		{name: "Moore Threads: no to-allocate key, no lock",
			resource:  mthreads.DefaultCountName,
			pod:       map[string]string{mthreads.AllocatedAnnotation: ";n1-mthreads-0,Mthreads,16384,8:;"},
			wantCalls: "get pods p|patch pods p", wantPhase: devices.BindPhaseSuccess,
			want: map[string]string{mthreads.AllocatedAnnotation: ";n1-mthreads-0,Mthreads,16384,8:;"}},
		{name: "Moore Threads: no entry for the container: failed",
			resource:  mthreads.DefaultCountName,
			pod:       map[string]string{mthreads.AllocatedAnnotation: "n1-mthreads-0,Mthreads,16384,8:;"},
			wantCalls: "get pods p|patch pods p", wantErr: "no device allocation found", wantPhase: devices.BindPhaseFailed},
		{name: "Hygon: no entry left: failed, lock released",
			resource: hygon.DefaultCountName, lockKey: devices.NodeLock, lockValue: testLockTime + ",ns,p",
			pod:       map[string]string{hygon.ToAllocateAnnotation: ";"},
			wantCalls: "get nodes n1|get pods p|patch pods p|get nodes n1|get nodes n1|patch nodes n1",
			wantErr:   "no pending device allocation", wantPhase: devices.BindPhaseFailed},
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
			err := dp.Allocate(context.Background(), pod, p, 1, 1)
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

// The kubelet calls one plugin per vendor a container asks for, in
// resource-name order, with the vendor's card count.
func TestContainerPlugins(t *testing.T) {
	c := &corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
		nvidia.DefaultCountName:          resource.MustParse("2"),
		nvidia.DefaultMemoryName:         resource.MustParse("3000"),
		"huawei.com/Ascend910B4":         resource.MustParse("1"),
		"huawei.com/Ascend910B4-memory":  resource.MustParse("8192"),
		"aws.amazon.com/neuroncore":      resource.MustParse("1"),
		corev1.ResourceCPU:               resource.MustParse("1"),
		"iluvatar.ai/BI-V150-vgpu":       resource.MustParse("0"),
		"example.com/not-a-device-count": resource.MustParse("1"),
	}}}
	var got []string
	for _, r := range containerPlugins(c) {
		got = append(got, r.plugin.allocated+"="+strconv.Itoa(r.want))
	}
	want := "hami.io/aws-neuron-devices-allocated=0|hami.io/Ascend910B4-devices-allocated=1|hami.io/vgpu-devices-allocated=2"
	if strings.Join(got, "|") != want {
		t.Errorf("plugins = %s, want %s", strings.Join(got, "|"), want)
	}
}
