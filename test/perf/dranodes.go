package perf

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// kindLimit bounds the wait for the nodes to run the kinds a phase asks.
const kindLimit = 2 * time.Minute

// draNodes are the nodes (names in creation order) that run HAMi's DRA
// driver when percent of them do: spread evenly, node i when
// floor((i+1)p/100) passes floor(ip/100), so that half the nodes are
// every other node.
func draNodes(names []string, percent int) map[string]bool {
	out := map[string]bool{}
	for i, name := range names {
		if (i+1)*percent/100 > i*percent/100 {
			out[name] = true
		}
	}
	return out
}

// setNodeKinds switches the nodes, as an administrator migrates them
// (simnode.SwitchToDRA, SwitchToDevicePlugin), so that those of
// draNodes(names, percent) run HAMi's DRA driver and the others HAMi's
// device plugin, and waits until the DRA nodes' ResourceSlices are
// published and the others' gone. It runs between phases, with no pod on
// the nodes.
func setNodeKinds(ctx context.Context, client kubernetes.Interface, names []string, percent int) error {
	want := draNodes(names, percent)
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, 16)
	)
	for i := range nodes.Items {
		n := &nodes.Items[i]
		s, ok, err := simnode.NodeSpec(n)
		if err != nil {
			return err
		}
		if !ok || (s.DRA != "") == want[n.Name] {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			var err error
			if want[n.Name] {
				err = simnode.SwitchToDRA(ctx, client, n.Name, "")
			} else {
				err = simnode.SwitchToDevicePlugin(ctx, client, n.Name)
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if nodes, err = client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		return err
	}
	live := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		live[i] = &nodes.Items[i]
	}
	if err := simnode.WaitForSlices(ctx, client, live, kindLimit); err != nil {
		return err
	}
	return waitNoSlices(ctx, client, want)
}

// waitNoSlices waits until no node but the DRA ones has a ResourceSlice.
func waitNoSlices(ctx context.Context, client kubernetes.Interface, dra map[string]bool) error {
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, kindLimit, true, func(ctx context.Context) (bool, error) {
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		left = left[:0]
		for _, s := range list.Items {
			if s.Spec.NodeName != nil && !dra[*s.Spec.NodeName] {
				left = append(left, *s.Spec.NodeName)
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("device-plugin nodes still publish ResourceSlices after %s: %v: %w", kindLimit, slices.Compact(slices.Sorted(slices.Values(left))), err)
	}
	return nil
}
