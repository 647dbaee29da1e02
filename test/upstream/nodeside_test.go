//go:build upstream

package upstream

import (
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/kubernetes/pkg/scheduler"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// cardsAnnotation, on a node a test case creates (hami/templates), names
// the cards its device plugins register, as a simnode node group without
// its count, e.g. "8 cards of Ascend910B4 32 GiB".
const cardsAnnotation = "sim.hami.io/cards"

// nodeUpdateWorkers bound the node updates in flight.
const nodeUpdateWorkers = 16

// addDeviceInventory gives every node that names its cards
// (cardsAnnotation) and has none yet what its device plugins write on it:
// simnode's inventory of the cards (register and handshake annotations,
// labels, capacity and allocatable), and the label that has simnode's
// agent serve it. It runs after each createNodes op, on every node.
func addDeviceInventory(tCtx ktesting.TContext, _ *scheduler.Scheduler, _ *perf.Workload, nodes *corev1.NodeList) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	items := nodes.Items
	workqueue.ParallelizeUntil(tCtx, nodeUpdateWorkers, len(items), func(i int) {
		if err := addInventory(tCtx, &items[i]); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errors.Join(errs...)
}

// addInventory writes one node's inventory: labels and annotations, then
// capacity and allocatable through the status subresource, as the device
// plugins do.
func addInventory(tCtx ktesting.TContext, node *corev1.Node) error {
	cards, ok := node.Annotations[cardsAnnotation]
	if !ok || node.Labels[simnode.SimulatedLabel] == "true" {
		return nil
	}
	spec, err := simnode.ParseSpec("1 node x " + cards)
	if err != nil {
		return fmt.Errorf("node %s: %s: %w", node.Name, cardsAnnotation, err)
	}
	nodes := tCtx.Client().CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := nodes.Get(tCtx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := current.DeepCopy()
		spec.AddTo(want)
		if want.Labels == nil {
			want.Labels = map[string]string{}
		}
		want.Labels[simnode.SimulatedLabel] = "true"
		updated, err := nodes.Update(tCtx, want, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		updated.Status.Capacity = want.Status.Capacity
		updated.Status.Allocatable = want.Status.Allocatable
		_, err = nodes.UpdateStatus(tCtx, updated, metav1.UpdateOptions{})
		return err
	})
}

// startNodeSide starts, for the workload, simnode's agent in its faithful
// mode: per node a device plugin whose client is limited as HAMi's (5 QPS,
// burst 10) and a kubelet that admits a pod only once its watch shows the
// pod bound. It stops when the workload ends. HAMi's workloads (topic
// devices) run it as a prepare hook, beside addDeviceInventory as the node
// hook.
func startNodeSide(tCtx ktesting.TContext) error {
	agent, err := simnode.NewAgent(tCtx.RESTConfig(), simnode.Options{})
	if err != nil {
		return err
	}
	if err := agent.Start(tCtx); err != nil {
		return err
	}
	tCtx.Cleanup(func() {
		agent.Stop()
		stats := agent.Stats()
		tCtx.Logf("Node side: %s; %d pods served by device plugins, %d started, %d refused, %d mismatched, %d deleted",
			agent.Options(), stats.Served, stats.Started, stats.Failed, stats.Mismatched, stats.Deleted)
		if stats.Mismatched > 0 {
			tCtx.Errorf("device plugins found %d pods other than those being admitted: the node lock protocol failed", stats.Mismatched)
		}
	})
	return nil
}
