package simnode

import (
	"context"
	"fmt"
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
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Defaults of Options.
const (
	// DefaultDevicePluginQPS and DefaultDevicePluginBurst are client-go's
	// rest.DefaultQPS and rest.DefaultBurst, which HAMi v2.10's device
	// plugin keeps (pkg/util/client).
	DefaultDevicePluginQPS   = 5
	DefaultDevicePluginBurst = 10
	// DefaultKubeletQPS and DefaultKubeletBurst are the kubelet's
	// kubeAPIQPS and kubeAPIBurst defaults.
	DefaultKubeletQPS   = 50
	DefaultKubeletBurst = 100
	// DefaultAdmissionDelay is how long the simulated kubelet takes from
	// seeing a pod bound to admitting it (and calling Allocate).
	DefaultAdmissionDelay = 100 * time.Millisecond
	// DefaultDRADriverQPS and DefaultDRADriverBurst are the kube-api-qps
	// and kube-api-burst defaults of every modelled DRA driver (HAMi's,
	// NVIDIA's, Hygon's and Ascend's kubelet plugins).
	DefaultDRADriverQPS   = 5
	DefaultDRADriverBurst = 10
	// DefaultDRAResync is the kubelet's syncFrequency: a pod whose claims
	// failed to prepare is synced again after it, or at once when its
	// labels or annotations change.
	DefaultDRAResync = time.Minute
	// DefaultDRAWipingDelay is how long the kubelet waits for a DRA driver
	// gone from its node to come back before it deletes the driver's
	// ResourceSlices.
	DefaultDRAWipingDelay = 30 * time.Second
)

// Options configure an Agent. The zero value is the faithful mode with
// HAMi's and the kubelet's defaults.
type Options struct {
	// Workers handle the watch's events (default 16); in the fast mode
	// they also admit the pods, so that many are admitted at once.
	Workers int
	// Fast is the shortcut mode: one client for all nodes' device plugins
	// and one for all kubelets, neither rate-limited, and admission as soon
	// as a worker picks the pod up. The calls are the same as in the
	// faithful mode.
	Fast bool
	// DevicePluginQPS and DevicePluginBurst limit each node's device
	// plugin client (defaults 5 and 10, HAMi's); a negative QPS: no limit.
	DevicePluginQPS   float32
	DevicePluginBurst int
	// KubeletQPS and KubeletBurst limit each node's kubelet client
	// (defaults 50 and 100); a negative QPS: no limit.
	KubeletQPS   float32
	KubeletBurst int
	// AdmissionDelay runs from the watch showing a pod bound to the
	// kubelet admitting it (default 100 ms; negative: none). The faithful
	// kubelet admits its node's pods one at a time.
	AdmissionDelay time.Duration
	// DevicePluginWrap and KubeletWrap, if set, wrap the HTTP transports
	// of the device plugins' and the kubelets' clients, e.g. to count
	// their calls.
	DevicePluginWrap, KubeletWrap transport.WrapperFunc
	// DRADriverQPS and DRADriverBurst limit each DRA node's driver client
	// (defaults 5 and 10); a negative QPS: no limit. DRADriverWrap, if
	// set, wraps its transport, as DevicePluginWrap the device plugins'.
	DRADriverQPS   float32
	DRADriverBurst int
	DRADriverWrap  transport.WrapperFunc
	// DRAResync is how long after a failed prepare of a pod's claims the
	// kubelet syncs the pod again (default one minute, the kubelet's
	// syncFrequency; negative: at once). A change of the pod's labels or
	// annotations syncs it at once, as in the kubelet.
	DRAResync time.Duration
	// DRAWipingDelay is how long after a node's DRA driver went away (its
	// node switched back to the device plugin) its ResourceSlices are
	// deleted (default 30 s, the kubelet's; negative: at once).
	DRAWipingDelay time.Duration
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.DevicePluginQPS == 0 {
		o.DevicePluginQPS = DefaultDevicePluginQPS
	}
	if o.DevicePluginBurst <= 0 {
		o.DevicePluginBurst = DefaultDevicePluginBurst
	}
	if o.KubeletQPS == 0 {
		o.KubeletQPS = DefaultKubeletQPS
	}
	if o.KubeletBurst <= 0 {
		o.KubeletBurst = DefaultKubeletBurst
	}
	switch {
	case o.Fast, o.AdmissionDelay < 0:
		o.AdmissionDelay = 0
	case o.AdmissionDelay == 0:
		o.AdmissionDelay = DefaultAdmissionDelay
	}
	if o.DRADriverQPS == 0 {
		o.DRADriverQPS = DefaultDRADriverQPS
	}
	if o.DRADriverBurst <= 0 {
		o.DRADriverBurst = DefaultDRADriverBurst
	}
	o.DRAResync = defaultDuration(o.DRAResync, DefaultDRAResync)
	o.DRAWipingDelay = defaultDuration(o.DRAWipingDelay, DefaultDRAWipingDelay)
	if o.Fast {
		o.DevicePluginQPS, o.KubeletQPS, o.DRADriverQPS = -1, -1, -1
	}
}

// defaultDuration is d, def when zero, none (0) when negative.
func defaultDuration(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// String describes the mode, e.g. for a benchmark's header.
func (o Options) String() string {
	o.defaults()
	if o.Fast {
		return "fast node side (no client limits, no admission delay)"
	}
	limit := func(qps float32, burst int) string {
		if qps < 0 {
			return "no limit"
		}
		return fmt.Sprintf("%g QPS, burst %d", qps, burst)
	}
	return fmt.Sprintf("faithful node side (per node: device plugin %s, DRA driver %s, kubelet %s; admission delay %s)",
		limit(o.DevicePluginQPS, o.DevicePluginBurst), limit(o.DRADriverQPS, o.DRADriverBurst), limit(o.KubeletQPS, o.KubeletBurst), o.AdmissionDelay)
}

// Agent plays, for every node labelled SimulatedLabel, HAMi's NVIDIA device
// plugin and the kubelet:
//
//   - a pod bound to such a node is admitted: for each container that asks
//     for nvidia.com/gpu (init containers first) the kubelet calls the
//     device plugin's Allocate, which runs as in HAMi v2.10 (see
//     devicePlugin.Allocate); then the pod is marked Running;
//   - on any Allocate error (or when told to with FailPod) the device plugin
//     sets bind-phase=failed and releases the lock, and the kubelet fails the
//     pod with UnexpectedAdmissionError;
//   - a pod being deleted is removed at once, as after its containers stop.
//
// Pods without hami.io/bind-phase were not handed to HAMi; they are started
// as they are, as if another device plugin had served them.
//
// In the faithful mode (the default) each node has a kubelet and a device
// plugin of its own, each with its own rate-limited client (the device
// plugin's limited like HAMi's), all sharing one connection pool; the
// kubelet admits a pod only once the agent's watch shows it bound, after
// the admission delay, and one pod at a time. The fast mode (Options.Fast)
// skips the limits and the delay.
//
// The scheduler holds a node's lock until the device plugin releases it,
// so every delay here delays the next pod bound to the same node.
type Agent struct {
	opts  Options
	watch kubernetes.Interface
	// devicePlugins, kubelets and draDrivers make the nodes' clients.
	devicePlugins, kubelets, draDrivers *clientMaker

	pods  corelisters.PodLister
	nodes corelisters.NodeLister
	queue workqueue.TypedRateLimitingInterface[string]
	// driverQueue holds the names of nodes whose DRA driver to start or
	// stop (dra_agent.go).
	driverQueue workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// admitted holds pods whose admission has begun, so that updates the
	// admission itself causes do not admit them twice.
	admitted map[types.UID]bool
	// allocated holds the device plugin's outcome per pod (nil: success),
	// so that retrying a failed status report does not allocate again.
	allocated map[types.UID]error
	// failing names pods (namespace/name) whose Allocate must fail.
	failing map[string]bool
	// simNodes are the nodes met so far.
	simNodes map[string]*simNode
	// shared is every node's clients in the fast mode.
	shared *simNode
	// waiting holds the pods whose claims failed to prepare, until the
	// kubelet syncs them again (dra_agent.go).
	waiting map[types.UID]prepareWait
	// devices records what each container of a pod got from its claims,
	// by pod namespace/name.
	devices map[string]podDevices

	served, started, failed, mismatched, deleted atomic.Int64
	prepared, prepareFailures, draViolations     atomic.Int64
	// handOvers times each node's passage from one pod to the next.
	handOvers handOverLog

	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// simNode is one node's kubelet and device plugin.
type simNode struct {
	name    string
	dp      *devicePlugin
	kubelet corev1client.CoreV1Interface
	// dra is the kubelet's DRA manager and the DRA driver it runs.
	dra *draManager
	// admissions holds the keys of pods the kubelet is to admit, each
	// added after the admission delay (faithful mode only).
	admissions workqueue.TypedRateLimitingInterface[string]
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
	// Prepared pods had the claims they use prepared by their node's DRA
	// driver; PrepareFailed counts the kubelet's failed attempts
	// (FailedPrepareDynamicResources events).
	Prepared, PrepareFailed int64
	// DRAViolations counts claims a simulated node refused because no
	// real driver checks what was wrong with them (ViolationError).
	DRAViolations int64
}

// NewAgent returns an agent for the simulated nodes of the API server cfg
// reaches. Start runs it.
func NewAgent(cfg *rest.Config, opts Options) (*Agent, error) {
	opts.defaults()
	watchConfig := rest.CopyConfig(cfg)
	watch, err := kubernetes.NewForConfig(watchConfig)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		opts:      opts,
		watch:     watch,
		admitted:  map[types.UID]bool{},
		allocated: map[types.UID]error{},
		failing:   map[string]bool{},
		simNodes:  map[string]*simNode{},
		waiting:   map[types.UID]prepareWait{},
		devices:   map[string]podDevices{},
	}
	if a.devicePlugins, err = newClientMaker(cfg, opts.DevicePluginWrap, opts.DevicePluginQPS, opts.DevicePluginBurst); err != nil {
		return nil, err
	}
	if a.kubelets, err = newClientMaker(cfg, opts.KubeletWrap, opts.KubeletQPS, opts.KubeletBurst); err != nil {
		return nil, err
	}
	if a.draDrivers, err = newClientMaker(cfg, opts.DRADriverWrap, opts.DRADriverQPS, opts.DRADriverBurst); err != nil {
		return nil, err
	}
	if opts.Fast {
		if a.shared, err = a.newSimNode(""); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Options returns the agent's options, defaults filled in.
func (a *Agent) Options() Options { return a.opts }

func (a *Agent) newSimNode(name string) (*simNode, error) {
	dpClient, err := a.devicePlugins.client()
	if err != nil {
		return nil, err
	}
	kubeletClient, err := a.kubelets.clientset()
	if err != nil {
		return nil, err
	}
	return &simNode{
		name:    name,
		kubelet: kubeletClient.CoreV1(),
		dra:     newDRAManager(name, kubeletClient.ResourceV1()),
		dp: &devicePlugin{
			node:       name,
			client:     dpClient,
			nodes:      a.nodes,
			failing:    a.isFailing,
			mismatched: &a.mismatched,
			released:   a.handOvers.released,
		},
	}, nil
}

// nodeFor returns the node's kubelet and device plugin, made (and, in the
// faithful mode, started) on first use.
func (a *Agent) nodeFor(name string) (*simNode, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := a.simNodes[name]; n != nil {
		return n, nil
	}
	var n *simNode
	if a.opts.Fast {
		// One pair of clients for all, one device plugin per node (its
		// Allocate is serialised per node).
		n = &simNode{name: name, kubelet: a.shared.kubelet, dra: newDRAManager(name, a.shared.dra.kubelet), dp: &devicePlugin{
			node: name, client: a.shared.dp.client, nodes: a.nodes, failing: a.isFailing, mismatched: &a.mismatched,
			released: a.handOvers.released,
		}}
	} else {
		var err error
		if n, err = a.newSimNode(name); err != nil {
			return nil, err
		}
		n.admissions = workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 5*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "simnode-kubelet-" + name})
		if a.ctx.Err() != nil {
			n.admissions.ShutDown()
		}
		a.done.Go(func() {
			for a.admitNext(n) {
			}
		})
	}
	a.simNodes[name] = n
	return n, nil
}

func (a *Agent) isFailing(namespace, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failing[namespace+"/"+name]
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
		Prepared: a.prepared.Load(), PrepareFailed: a.prepareFailures.Load(), DRAViolations: a.draViolations.Load(),
	}
}

// Start watches simulated nodes and the pods bound to nodes, and returns
// once its caches are synced. Stop ends it.
func (a *Agent) Start(ctx context.Context) error {
	a.ctx, a.cancel = context.WithCancel(ctx)
	ctx = a.ctx
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(a.watch, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = SimulatedLabel + "=true" }))
	podFactory := informers.NewSharedInformerFactoryWithOptions(a.watch, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName!=" }))
	nodeInformer := nodeFactory.Core().V1().Nodes()
	podInformer := podFactory.Core().V1().Pods()
	a.nodes = nodeInformer.Lister()
	a.pods = podInformer.Lister()
	a.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 5*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "simnode-agent"})
	a.driverQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 10*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "simnode-dra-drivers"})

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
				delete(a.waiting, pod.UID)
				a.mu.Unlock()
				a.podDeleted(pod)
			}
		},
	}); err != nil {
		a.cancel()
		return fmt.Errorf("watch pods: %w", err)
	}
	// A node that appears late may already have pods bound to it. A
	// node's DRA driver starts and stops with its spec.
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: a.nodeChanged,
		// A deleted node's driver stops (syncDriver).
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				a.driverQueue.Add(key)
			}
		},
		AddFunc: func(obj any) {
			node, ok := obj.(*corev1.Node)
			if !ok {
				return
			}
			a.nodeChanged(nil, node)
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
		a.driverQueue.ShutDown()
		a.mu.Lock()
		for _, n := range a.simNodes {
			if n.admissions != nil {
				n.admissions.ShutDown()
			}
		}
		a.mu.Unlock()
		nodeFactory.Shutdown()
		podFactory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), nodeInformer.Informer().HasSynced, podInformer.Informer().HasSynced) {
		a.Stop()
		return fmt.Errorf("agent caches did not sync: %w", context.Cause(ctx))
	}
	for range a.opts.Workers {
		a.done.Go(func() {
			for a.processNext(ctx) {
			}
		})
	}
	// Drivers start one per node at once: each waits for its slice
	// informer to sync before publishing.
	for range driverWorkers {
		a.done.Go(func() {
			for a.processDriver(ctx) {
			}
		})
	}
	return nil
}

// podDeleted runs what a node's device plugins do when one of its pods is
// deleted: Cambricon's gives back the lock of a pod it never served.
func (a *Agent) podDeleted(pod *corev1.Pod) {
	a.mu.Lock()
	n := a.simNodes[pod.Spec.NodeName]
	a.mu.Unlock()
	if n == nil || a.ctx.Err() != nil {
		return
	}
	// A pod removed without its deletion passing through remove (force
	// deleted) leaves its claims too.
	n.dra.unprepareResources(pod.UID)
	a.forgetDevices(pod)
	a.done.Go(func() {
		n.dp.applyMu.Lock()
		defer n.dp.applyMu.Unlock()
		if err := cambriconPodDeleted(a.ctx, n.dp, pod); err != nil {
			klog.FromContext(a.ctx).V(2).Info("Simulated Cambricon plugin cannot give back its node lock", "node", n.name, "pod", klog.KObj(pod), "err", err)
		}
	})
}

// Stop ends the agent, waits for its goroutines and closes its clients'
// idle connections.
func (a *Agent) Stop() {
	if a.cancel != nil {
		a.cancel()
	}
	a.done.Wait()
	a.stopDrivers()
	a.devicePlugins.http.CloseIdleConnections()
	a.kubelets.http.CloseIdleConnections()
	a.draDrivers.http.CloseIdleConnections()
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

// sync brings one pod forward: deletion, or admission on its node (at once
// in the fast mode, else handed to the node's kubelet).
func (a *Agent) sync(ctx context.Context, key string) error {
	pod, node, err := a.podOnNode(key)
	if pod == nil || err != nil {
		return err
	}
	if pod.DeletionTimestamp != nil {
		return a.remove(ctx, node, pod)
	}
	if pod.Status.Phase != corev1.PodPending {
		return nil
	}
	a.mu.Lock()
	if a.admitted[pod.UID] {
		retry := a.dueForPrepare(pod)
		a.mu.Unlock()
		if retry {
			return a.syncAgain(ctx, key, node, pod)
		}
		return nil
	}
	a.admitted[pod.UID] = true
	a.mu.Unlock()
	if node.admissions != nil {
		node.admissions.AddAfter(key, a.opts.AdmissionDelay)
		return nil
	}
	if err := a.admit(ctx, node, pod); err != nil {
		// Let a retry admit it again.
		a.mu.Lock()
		delete(a.admitted, pod.UID)
		a.mu.Unlock()
		return err
	}
	return nil
}

// podOnNode returns the pod of key and its simulated node; a nil pod means
// there is nothing to do.
func (a *Agent) podOnNode(key string) (*corev1.Pod, *simNode, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, nil, nil
	}
	pod, err := a.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err := a.nodes.Get(pod.Spec.NodeName); err != nil {
		// Not one of ours.
		return nil, nil, nil
	}
	node, err := a.nodeFor(pod.Spec.NodeName)
	if err != nil {
		return nil, nil, err
	}
	return pod, node, nil
}

// admitNext is a faithful node's kubelet admitting its next pod; a failed
// status report is retried without allocating again.
func (a *Agent) admitNext(n *simNode) bool {
	key, quit := n.admissions.Get()
	if quit {
		return false
	}
	defer n.admissions.Done(key)
	ctx := a.ctx
	pod, _, err := a.podOnNode(key)
	if err == nil && pod != nil && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodPending {
		err = a.admit(ctx, n, pod)
	}
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).V(2).Info("Simulated kubelet retries", "pod", key, "err", err)
		n.admissions.AddRateLimited(key)
		return true
	}
	n.admissions.Forget(key)
	return true
}

// remove deletes a pod whose deletion was requested, as the kubelet does
// once its containers have stopped and its claims are unprepared.
func (a *Agent) remove(ctx context.Context, node *simNode, pod *corev1.Pod) error {
	node.dra.unprepareResources(pod.UID)
	err := node.kubelet.Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
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
func (a *Agent) admit(ctx context.Context, node *simNode, pod *corev1.Pod) error {
	a.mu.Lock()
	outcome, done := a.allocated[pod.UID]
	a.mu.Unlock()
	if !done {
		outcome = a.allocateAll(ctx, node, pod)
		a.mu.Lock()
		a.allocated[pod.UID] = outcome
		a.mu.Unlock()
	}
	if outcome != nil {
		return a.reportFailed(ctx, node, pod, outcome)
	}
	if hasDynamicResources(pod) {
		if err := node.dra.prepareResources(ctx, pod); err != nil {
			return a.prepareFailed(ctx, node, pod, err)
		}
		a.recordDevices(node, pod)
	}
	if err := a.reportRunning(ctx, node, pod); err != nil {
		return err
	}
	a.started.Add(1)
	return nil
}

// allocateAll is the kubelet asking the device plugins for each
// container's devices (kubeletCalls): init containers first, and within a
// container one call per registered resource it asks. Pods that were not
// handed to HAMi need nothing from them.
func (a *Agent) allocateAll(ctx context.Context, node *simNode, pod *corev1.Pod) error {
	if _, handed := pod.Annotations[devices.BindPhase]; !handed || !a.runsDevicePlugins(node.name) {
		return nil
	}
	a.handOvers.allocating(node.dp.node, pod.Namespace, pod.Name, time.Now())
	for _, kc := range kubeletCalls(pod) {
		if err := node.dp.Allocate(ctx, kc.plugin, kc.call); err != nil {
			a.failed.Add(1)
			return err
		}
	}
	a.served.Add(1)
	return nil
}
