package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// A node whose register annotation is garbage is skipped, with a warning
// event on the node; pods go to the nodes that work, and the scheduler
// keeps running.
func TestGarbageRegisterAnnotationSkipped(t *testing.T) {
	e := newEnv(t, "garbage")
	nodes := e.addNodes("3 nodes x 1 card of NVIDIA A100 40 GiB, split 2", func(i int, n *corev1.Node) {
		switch i {
		case 0:
			n.Annotations[nvidia.RegisterAnnotation] = `[{"id":"GPU-0","count":10,"devmem":`
		case 1:
			n.Annotations[nvidia.RegisterAnnotation] = "GPU-0,ten,lots,100,NVIDIA-x,0,true:"
		}
	})
	good := nodes[2].Name
	for i := range 2 {
		name := fmt.Sprintf("p%d", i)
		e.create(e.pod(name, gpu{cards: 1, memory: 1000}))
		if p := e.waitRunning(name); p.Spec.NodeName != good {
			t.Errorf("pod %s on %s, want %s (the only node with a readable inventory)", name, p.Spec.NodeName, good)
		}
	}
	// The good node's card is full (split 2): the next pod has nowhere to go
	// and the event names the unusable nodes.
	e.create(e.pod("extra", gpu{cards: 1, memory: 1000}))
	msg := e.waitUnschedulable("extra")
	if !strings.Contains(msg, "2 NVIDIA devices unusable") && !strings.Contains(msg, "devices unusable") {
		t.Errorf("event %q does not say that two nodes' devices are unusable", msg)
	}
	for _, bad := range nodes[:2] {
		e.eventually("InvalidDeviceInventory event on "+bad.Name, func() (bool, string) {
			list, err := controlPlane.Client.CoreV1().Events(metav1.NamespaceDefault).List(e.ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + bad.Name,
			})
			if err != nil {
				return false, err.Error()
			}
			for _, ev := range list.Items {
				if ev.Reason == "InvalidDeviceInventory" && ev.Type == corev1.EventTypeWarning {
					return true, ev.Message
				}
			}
			return false, fmt.Sprintf("%d events", len(list.Items))
		})
	}
	e.checkAccounting()
}
