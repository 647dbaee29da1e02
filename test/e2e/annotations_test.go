package e2e

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// A fractional pod lands on the node's card and carries exactly the
// annotations of the protocol: what the scheduler writes at PreBind, and
// what is left once the device plugin has served every container.
func TestFractionalPodAnnotations(t *testing.T) {
	e := newEnv(t, "annotations")
	nodes := e.addNodes("1 node x 1 card of NVIDIA A100-SXM4-40GB 40 GiB, split 10", nil)
	node := nodes[0].Name
	card := simnode.CardUUID(node, 0)

	tests := []struct {
		name       string
		init       []gpu
		containers []gpu
		// wantAssigned is what the scheduler writes in both to-allocate and
		// allocated.
		wantAssigned string
		// wantErased is to-allocate once HAMi v2.10's device plugin has
		// served every container.
		wantErased string
	}{
		{
			name:         "single",
			containers:   []gpu{{cards: 1, memory: 2000, cores: 30}},
			wantAssigned: card + ",NVIDIA,2000,30:;",
			wantErased:   ";;",
		},
		{
			name:         "sidecars",
			init:         []gpu{{name: "setup"}},
			containers:   []gpu{{name: "train", cards: 1, memory: 3000, cores: 20}, {name: "log"}, {name: "eval", cards: 1, percent: 10}},
			wantAssigned: ";" + card + ",NVIDIA,3000,20:;;" + card + ",NVIDIA,4096,0:;",
			wantErased:   ";;;;;;",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			pod := e.pod(tt.name, tt.containers...)
			for _, c := range e.pod("", tt.init...).Spec.Containers {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
			}
			w, err := controlPlane.Client.CoreV1().Pods(e.ns).Watch(e.ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + tt.name})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			before := time.Now().Unix()
			e.create(pod)
			running := e.waitRunning(tt.name)
			after := time.Now().Unix()

			// The first version handed to the device plugin.
			handed := firstVersion(t, w, func(p *corev1.Pod) bool {
				return p.Annotations[devices.BindPhase] == devices.BindPhaseAllocating
			})
			want := map[string]string{
				devices.AssignedNode:        node,
				devices.BindPhase:           devices.BindPhaseAllocating,
				nvidia.ToAllocateAnnotation: tt.wantAssigned,
				nvidia.AllocatedAnnotation:  tt.wantAssigned,
			}
			for k, v := range want {
				if got := handed.Annotations[k]; got != v {
					t.Errorf("at PreBind %s = %q, want %q", k, got, v)
				}
			}
			if handed.Spec.NodeName != "" {
				t.Errorf("pod was bound to %s before its assignment was written", handed.Spec.NodeName)
			}

			// After the device plugin: success, containers erased, the
			// assignment kept for accounting.
			want[devices.BindPhase] = devices.BindPhaseSuccess
			want[nvidia.ToAllocateAnnotation] = tt.wantErased
			for k, v := range want {
				if got := running.Annotations[k]; got != v {
					t.Errorf("running pod %s = %q, want %q", k, got, v)
				}
			}
			if running.Spec.NodeName != node || running.Labels[devices.AssignedNode] != node {
				t.Errorf("pod on %q with label %s=%q, want %q for both", running.Spec.NodeName, devices.AssignedNode, running.Labels[devices.AssignedNode], node)
			}
			for _, k := range []string{devices.AssignedTime, devices.BindTime} {
				v, err := strconv.ParseInt(running.Annotations[k], 10, 64)
				if err != nil || v < before || v > after {
					t.Errorf("%s = %q, want unix seconds between %d and %d", k, running.Annotations[k], before, after)
				}
			}
			e.checkNodeUnlocked(node)
			if s := agent.Stats(); s.Mismatched != 0 {
				t.Errorf("device plugin found the wrong pod %d times", s.Mismatched)
			}
		})
	}
	e.t = t
	e.checkAccounting()
}

// firstVersion returns the first watched version of the pod that matches.
func firstVersion(t *testing.T, w watch.Interface, match func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed before the pod was handed to the device plugin")
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod && match(p) {
				return p
			}
		case <-timeout:
			t.Fatal("no watched version of the pod matched")
		}
	}
}
