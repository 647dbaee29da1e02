package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// Pods that ask for no managed device but name hami-scheduler run, as HAMi's
// extender passes them through: no lock, no assignment, no bind phase.
func TestPodsAskingForNoDeviceRun(t *testing.T) {
	e := newEnv(t, "nodevice")
	e.addNodes("1 node x 1 card of NVIDIA A100 40 GiB, split 10", nil)
	zeroCards := e.pod("zero-cards", gpu{name: "main"})
	zeroCards.Spec.Containers[0].Resources.Limits = corev1.ResourceList{nvidia.DefaultCountName: *resource.NewQuantity(0, resource.DecimalSI)}
	for _, p := range []*corev1.Pod{e.pod("plain", gpu{name: "main"}), zeroCards} {
		e.create(p)
		got := e.waitRunning(p.Name)
		for _, key := range []string{nvidia.AllocatedAnnotation, nvidia.ToAllocateAnnotation, devices.BindPhase} {
			if v, ok := got.Annotations[key]; ok {
				t.Errorf("pod %s carries %s=%q; a pod asking for no device gets no assignment", p.Name, key, v)
			}
		}
		e.checkNodeUnlocked(got.Spec.NodeName)
	}
}
