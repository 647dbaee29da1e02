package simnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// Agent plays, for every node labelled SimulatedLabel, HAMi's NVIDIA device
// plugin and the kubelet:
//
//   - a pod bound to such a node is admitted: for each container that asks
//     for nvidia.com/gpu (init containers first) the device plugin's
//     Allocate runs as in HAMi v2.10: it finds the pod through the node lock
//     holder, else the pending pod on the node with bind-phase allocating or
//     success, erases that container's cards from
//     hami.io/vgpu-devices-to-allocate, and once no NVIDIA card is left sets
//     hami.io/bind-phase=success and releases hami.io/mutex.lock; then the
//     pod is marked Running;
//   - on any Allocate error (or when told to with FailPod) the device plugin
//     sets bind-phase=failed and releases the lock, and the kubelet fails the
//     pod with UnexpectedAdmissionError;
//   - a pod being deleted is removed at once, as after its containers stop.
//
// Pods without hami.io/bind-phase were not handed to HAMi; they are started
// as they are, as if another device plugin had served them.
//
// The agent is watch-driven: the scheduler holds a node's lock until the
// device plugin releases it, so every delay here delays the next pod bound
// to the same node.
type Agent struct {
	client  kubernetes.Interface
	workers int

	pods  corelisters.PodLister
	nodes corelisters.NodeLister
	queue workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// admitted holds pods whose admission has begun, so that updates the
	// admission itself causes do not admit them twice.
	admitted map[types.UID]bool
	// allocated holds the device plugin's outcome per pod (nil: success),
	// so that retrying a failed status report does not allocate again.
	allocated map[types.UID]error
	// failing names pods (namespace/name) whose Allocate must fail.
	failing map[string]bool
	// nodeMutex serialises Allocate per node, as the device plugin does.
	nodeMutex map[string]*sync.Mutex

	served, started, failed, mismatched, deleted atomic.Int64

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Stats counts what an Agent did.
type Stats struct {
	// Served pods went through the device plugin's Allocate successfully.
	Served int64
	// Started pods were marked Running.
	Started int64
	// Failed pods were refused (Allocate error or FailPod).
	Failed int64
	// Mismatched counts Allocate calls that found another pod than the one
	// being admitted: a node-lock protocol violation.
	Mismatched int64
	// Deleted pods were removed after their deletion was requested.
	Deleted int64
}

// NewAgent returns an agent for the simulated nodes; workers pods are
// admitted at once (Allocate stays one at a time per node). Start runs it.
func NewAgent(client kubernetes.Interface, workers int) *Agent {
	if workers <= 0 {
		workers = 16
	}
	return &Agent{
		client:    client,
		workers:   workers,
		admitted:  map[types.UID]bool{},
		allocated: map[types.UID]error{},
		failing:   map[string]bool{},
		nodeMutex: map[string]*sync.Mutex{},
	}
}

// FailPod makes the device plugin's Allocate fail for the pod, as a broken
// card or driver would.
func (a *Agent) FailPod(namespace, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failing[namespace+"/"+name] = true
}

// Stats returns what the agent did so far.
func (a *Agent) Stats() Stats {
	return Stats{
		Served: a.served.Load(), Started: a.started.Load(), Failed: a.failed.Load(),
		Mismatched: a.mismatched.Load(), Deleted: a.deleted.Load(),
	}
}

// Start watches simulated nodes and the pods bound to nodes, and returns
// once its caches are synced. Stop ends it.
func (a *Agent) Start(ctx context.Context) error {
	ctx, a.cancel = context.WithCancel(ctx)
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(a.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = SimulatedLabel + "=true" }))
	podFactory := informers.NewSharedInformerFactoryWithOptions(a.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName!=" }))
	nodeInformer := nodeFactory.Core().V1().Nodes()
	podInformer := podFactory.Core().V1().Pods()
	a.nodes = nodeInformer.Lister()
	a.pods = podInformer.Lister()
	a.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 5*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "simnode-agent"})

	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			a.queue.Add(key)
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				a.mu.Lock()
				delete(a.admitted, pod.UID)
				delete(a.allocated, pod.UID)
				a.mu.Unlock()
			}
		},
	}); err != nil {
		a.cancel()
		return fmt.Errorf("watch pods: %w", err)
	}
	// A node that appears late may already have pods bound to it.
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			node, ok := obj.(*corev1.Node)
			if !ok {
				return
			}
			pods, _ := a.pods.List(labels.Everything())
			for _, p := range pods {
				if p.Spec.NodeName == node.Name {
					enqueue(p)
				}
			}
		},
	}); err != nil {
		a.cancel()
		return fmt.Errorf("watch nodes: %w", err)
	}
	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	a.done.Go(func() {
		<-ctx.Done()
		a.queue.ShutDown()
		nodeFactory.Shutdown()
		podFactory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), nodeInformer.Informer().HasSynced, podInformer.Informer().HasSynced) {
		a.Stop()
		return fmt.Errorf("agent caches did not sync: %w", context.Cause(ctx))
	}
	for range a.workers {
		a.done.Go(func() {
			for a.processNext(ctx) {
			}
		})
	}
	return nil
}

// Stop ends the agent and waits for its goroutines.
func (a *Agent) Stop() {
	if a.cancel != nil {
		a.cancel()
	}
	a.done.Wait()
}

func (a *Agent) processNext(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	if err := a.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Simulated node agent retries", "pod", key, "err", err)
			a.queue.AddRateLimited(key)
		}
		return true
	}
	a.queue.Forget(key)
	return true
}

// sync brings one pod forward: deletion, or admission on its node.
func (a *Agent) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := a.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := a.nodes.Get(pod.Spec.NodeName); err != nil {
		// Not one of ours.
		return nil
	}
	if pod.DeletionTimestamp != nil {
		return a.remove(ctx, pod)
	}
	if pod.Status.Phase != corev1.PodPending {
		return nil
	}
	a.mu.Lock()
	if a.admitted[pod.UID] {
		a.mu.Unlock()
		return nil
	}
	a.admitted[pod.UID] = true
	a.mu.Unlock()
	if err := a.admit(ctx, pod); err != nil {
		// Let a retry admit it again.
		a.mu.Lock()
		delete(a.admitted, pod.UID)
		a.mu.Unlock()
		return err
	}
	return nil
}

// remove deletes a pod whose deletion was requested, as the kubelet does
// once its containers have stopped.
func (a *Agent) remove(ctx context.Context, pod *corev1.Pod) error {
	err := a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptrTo(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	switch {
	case err == nil:
		a.deleted.Add(1)
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	default:
		return fmt.Errorf("delete pod: %w", err)
	}
}

// admit runs the device plugin's Allocate for each container asking for
// cards, then reports the pod Running, or Failed when Allocate failed. An
// error means the status could not be written and admission should be
// retried; Allocate is not run twice.
func (a *Agent) admit(ctx context.Context, pod *corev1.Pod) error {
	a.mu.Lock()
	outcome, done := a.allocated[pod.UID]
	a.mu.Unlock()
	if !done {
		outcome = a.allocateAll(ctx, pod)
		a.mu.Lock()
		a.allocated[pod.UID] = outcome
		a.mu.Unlock()
	}
	if outcome != nil {
		return a.reportFailed(ctx, pod, outcome)
	}
	if err := a.reportRunning(ctx, pod); err != nil {
		return err
	}
	a.started.Add(1)
	return nil
}

// allocateAll is the kubelet asking the device plugin for each container's
// cards, init containers first. Pods that were not handed to HAMi need
// nothing from it.
func (a *Agent) allocateAll(ctx context.Context, pod *corev1.Pod) error {
	if _, handed := pod.Annotations[devices.BindPhase]; !handed {
		return nil
	}
	for _, c := range devices.Containers(pod) {
		if want := cardCount(c); want > 0 {
			if err := a.allocate(ctx, pod, want); err != nil {
				a.failed.Add(1)
				return err
			}
		}
	}
	a.served.Add(1)
	return nil
}

// cardCount is the number of cards the kubelet asks the device plugin for.
func cardCount(c *corev1.Container) int {
	q, ok := c.Resources.Limits[nvidia.DefaultCountName]
	if !ok {
		q, ok = c.Resources.Requests[nvidia.DefaultCountName]
	}
	if !ok {
		return 0
	}
	n, exact := q.AsInt64()
	if !exact || n < 0 || n > 1<<16 {
		return 0
	}
	return int(n)
}

func (a *Agent) lockFor(node string) *sync.Mutex {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.nodeMutex[node]
	if m == nil {
		m = &sync.Mutex{}
		a.nodeMutex[node] = m
	}
	return m
}

// allocate is HAMi v2.10's Allocate for one container request of want
// cards, on the pod's node. An error is Allocate's refusal: the kubelet
// does not start the pod.
func (a *Agent) allocate(ctx context.Context, pod *corev1.Pod, want int) error {
	node := pod.Spec.NodeName
	m := a.lockFor(node)
	m.Lock()
	defer m.Unlock()

	current, err := a.pendingPod(ctx, node)
	if err != nil {
		// HAMi returns the error and touches nothing; the kubelet fails
		// the pod's admission.
		return err
	}
	if current.UID != pod.UID {
		a.mismatched.Add(1)
		return fmt.Errorf("device plugin found pod %s/%s on node %s, not %s/%s",
			current.Namespace, current.Name, node, pod.Namespace, pod.Name)
	}
	a.mu.Lock()
	fail := a.failing[current.Namespace+"/"+current.Name]
	a.mu.Unlock()
	if fail {
		return a.allocationFailed(ctx, node, current, "simulated device failure")
	}
	value, ok := current.Annotations[nvidia.ToAllocateAnnotation]
	if !ok {
		return a.allocationFailed(ctx, node, current, "device request not found")
	}
	rest, served, err := eraseNext(value)
	switch {
	case err != nil:
		return a.allocationFailed(ctx, node, current, err.Error())
	case served == nil:
		return a.allocationFailed(ctx, node, current, "no pending device allocation found")
	case len(served) != want:
		return a.allocationFailed(ctx, node, current, "device number not matched")
	}
	if err := a.patchAnnotations(ctx, current, map[string]string{nvidia.ToAllocateAnnotation: rest}); err != nil {
		return a.allocationFailed(ctx, node, current, "erase allocated containers annotation: "+err.Error())
	}
	return a.trySuccess(ctx, node, current)
}

// pendingPod finds the pod being allocated on node as HAMi's
// util.GetPendingPod does: the holder of the node lock, else the first
// Pending pod on the node with a bind time, bind-phase allocating or
// success, and hami.io/vgpu-node naming the node.
func (a *Agent) pendingPod(ctx context.Context, node string) (*corev1.Pod, error) {
	n, err := a.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if value, ok := n.Annotations[devices.NodeLock]; ok {
		_, namespace, name, err := parseLock(value)
		if err != nil {
			return nil, err
		}
		if namespace != "" && name != "" {
			return a.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		}
	}
	list, err := a.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase != corev1.PodPending {
			continue
		}
		if _, ok := p.Annotations[devices.BindTime]; !ok {
			continue
		}
		if phase := p.Annotations[devices.BindPhase]; phase != devices.BindPhaseAllocating && phase != devices.BindPhaseSuccess {
			continue
		}
		if p.Annotations[devices.AssignedNode] == node {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no binding pod found on node %s", node)
}

// trySuccess ends the allocation once no NVIDIA card is left to hand out:
// bind-phase=success and the node lock released.
func (a *Agent) trySuccess(ctx context.Context, node string, pod *corev1.Pod) error {
	fresh, err := a.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		// HAMi logs and returns; the lock stays until it expires.
		klog.FromContext(ctx).Error(err, "Simulated device plugin cannot re-read the pod", "pod", klog.KObj(pod))
		return nil
	}
	if strings.Contains(fresh.Annotations[nvidia.ToAllocateAnnotation], nvidia.VendorWord) {
		return nil
	}
	a.finish(ctx, node, fresh, devices.BindPhaseSuccess)
	return nil
}

// allocationFailed is HAMi's PodAllocationFailed: bind-phase=failed and the
// node lock released; Allocate then returns the error.
func (a *Agent) allocationFailed(ctx context.Context, node string, pod *corev1.Pod, reason string) error {
	a.finish(ctx, node, pod, devices.BindPhaseFailed)
	return errors.New(reason)
}

func (a *Agent) finish(ctx context.Context, node string, pod *corev1.Pod, phase string) {
	logger := klog.FromContext(ctx)
	if err := a.patchAnnotations(ctx, pod, map[string]string{devices.BindPhase: phase}); err != nil {
		logger.Error(err, "Simulated device plugin cannot set the bind phase", "pod", klog.KObj(pod), "phase", phase)
	}
	if err := a.releaseLock(ctx, node, pod); err != nil {
		logger.Error(err, "Simulated device plugin cannot release the node lock", "node", node, "pod", klog.KObj(pod))
	}
}

// releaseLock deletes the node lock when the pod holds it (or it is a
// legacy lock naming no pod), with the node's resourceVersion, retrying a
// few times as HAMi's nodelock.ReleaseNodeLock does.
func (a *Agent) releaseLock(ctx context.Context, node string, pod *corev1.Pod) error {
	var err error
	delay := 100 * time.Millisecond
	for range 5 {
		var n *corev1.Node
		n, err = a.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil {
			value, held := n.Annotations[devices.NodeLock]
			if !held || !lockHeldBy(value, pod.Namespace, pod.Name) {
				return nil
			}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null},"resourceVersion":%q}}`, devices.NodeLock, n.ResourceVersion)
			_, err = a.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(delay):
		}
		delay *= 2
	}
	return err
}

func (a *Agent) patchAnnotations(ctx context.Context, pod *corev1.Pod, annotations map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	_, err = a.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
