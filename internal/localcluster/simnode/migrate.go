package simnode

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// handshakePrefix starts the keys of HAMi's node handshake
// (hami.io/node-handshake, -dcu, ...), which the scheduler stamps on a
// device plugin's node.
const handshakePrefix = "hami.io/node-handshake"

// SwitchToDRA switches a running simulated node from its vendor's HAMi
// device plugin to the DRA driver word names, as after "dra" in a spec
// ("": the vendor's first; "nvidia" for NVIDIA's), the way an
// administrator migrates one node: the device plugin's resources leave the
// node's capacity and allocatable and its annotations (registration,
// HAMi's handshake) go, then the node's spec names the driver, and the
// agent starts it: it registers with the kubelet and publishes the node's
// ResourceSlices (WaitForSlices waits for them). Pods running on the node
// keep running, and their device-plugin grants stay in their annotations,
// until they end; pods bound later get no device-plugin Allocate.
func SwitchToDRA(ctx context.Context, client kubernetes.Interface, node, word string) error {
	s, err := simulatedSpec(ctx, client, node)
	if err != nil {
		return err
	}
	if s.DRA != "" {
		return fmt.Errorf("node %s runs the DRA driver %s already", node, s.DRA)
	}
	dra := s
	if err := dra.setDRA(kindOf(s), &word); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	inv := inventoryOf(node, s)
	if err := updateNodeStatus(ctx, client, node, func(n *corev1.Node) {
		for name := range inv.Status.Capacity {
			delete(n.Status.Capacity, name)
			delete(n.Status.Allocatable, name)
		}
	}); err != nil {
		return err
	}
	return updateNode(ctx, client, node, func(n *corev1.Node) {
		for key := range n.Annotations {
			if _, ok := inv.Annotations[key]; ok || strings.HasPrefix(key, handshakePrefix) {
				delete(n.Annotations, key)
			}
		}
		for key := range inv.Labels {
			delete(n.Labels, key)
		}
		n.Annotations[SpecAnnotation] = dra.String()
		n.Labels[DRADriverLabel] = dra.DRA
	})
}

// SwitchToDevicePlugin switches a simulated DRA node back to its vendor's
// HAMi device plugin: the node's spec drops the driver, the device
// plugin's registration and resources come back, and the agent stops the
// driver; the kubelet deletes its slices after Options.DRAWipingDelay.
// Pods running on the node keep running, their claims stay allocated and
// prepared until they end.
func SwitchToDevicePlugin(ctx context.Context, client kubernetes.Interface, node string) error {
	s, err := simulatedSpec(ctx, client, node)
	if err != nil {
		return err
	}
	if s.DRA == "" {
		return fmt.Errorf("node %s runs its vendor's device plugin already", node)
	}
	s.DRA = ""
	inv := inventoryOf(node, s)
	if err := updateNode(ctx, client, node, func(n *corev1.Node) {
		for key, value := range inv.Annotations {
			n.Annotations[key] = value
		}
		for key, value := range inv.Labels {
			n.Labels[key] = value
		}
		delete(n.Labels, DRADriverLabel)
		n.Annotations[SpecAnnotation] = s.String()
	}); err != nil {
		return err
	}
	return updateNodeStatus(ctx, client, node, func(n *corev1.Node) {
		for name, q := range inv.Status.Capacity {
			n.Status.Capacity[name] = q
		}
		for name, q := range inv.Status.Allocatable {
			n.Status.Allocatable[name] = q
		}
	})
}

// inventoryOf is what the device plugin of a device-plugin spec puts on a
// node of that name, alone: its annotations, labels and resources.
func inventoryOf(node string, s Spec) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	s.AddTo(n)
	return n
}

// simulatedSpec is the spec of the simulated node (SpecAnnotation).
func simulatedSpec(ctx context.Context, client kubernetes.Interface, node string) (Spec, error) {
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return Spec{}, err
	}
	s, ok, err := NodeSpec(n)
	if err == nil && !ok {
		err = fmt.Errorf("node %s is not a simulated node (no %s)", node, SpecAnnotation)
	}
	return s, err
}

// updateNode changes the node's metadata, retried on conflicts.
func updateNode(ctx context.Context, client kubernetes.Interface, node string, change func(*corev1.Node)) error {
	return changeNode(ctx, client, node, change, client.CoreV1().Nodes().Update)
}

// updateNodeStatus changes the node's status (the kubelet's capacity and
// allocatable), retried on conflicts.
func updateNodeStatus(ctx context.Context, client kubernetes.Interface, node string, change func(*corev1.Node)) error {
	return changeNode(ctx, client, node, change, client.CoreV1().Nodes().UpdateStatus)
}

// changeNode reads the node, changes it (its maps made) and writes it with
// write, retried on conflicts.
func changeNode(ctx context.Context, client kubernetes.Interface, node string, change func(*corev1.Node),
	write func(context.Context, *corev1.Node, metav1.UpdateOptions) (*corev1.Node, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		makeNodeMaps(n)
		change(n)
		_, err = write(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
