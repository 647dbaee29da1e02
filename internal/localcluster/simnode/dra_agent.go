package simnode

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// driverWorkers start and stop the nodes' DRA drivers: a driver's slice
// controller waits (polling each second) for its informer before it
// publishes, so many start at once.
const driverWorkers = 64

// nodeChanged queues a node whose DRA driver may have to start or stop:
// a new node, or one whose spec changed (old nil for a new one).
func (a *Agent) nodeChanged(old, obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	if prev, ok := old.(*corev1.Node); ok && prev.Annotations[SpecAnnotation] == node.Annotations[SpecAnnotation] {
		return
	}
	a.driverQueue.Add(node.Name)
}

// known reports whether the agent met the node already.
func (a *Agent) known(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.simNodes[name] != nil
}

func (a *Agent) processDriver(ctx context.Context) bool {
	name, quit := a.driverQueue.Get()
	if quit {
		return false
	}
	defer a.driverQueue.Done(name)
	if err := a.syncDriver(ctx, name); err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Simulated DRA driver retries", "node", name)
			a.driverQueue.AddRateLimited(name)
		}
		return true
	}
	a.driverQueue.Forget(name)
	return true
}

// syncDriver runs on the node the DRA driver its spec names, as the
// driver's DaemonSet would: a driver starts (registers with the kubelet
// and publishes the node's slices) when the spec names it, and a driver no
// longer named unregisters; the kubelet deletes its slices after the
// wiping delay unless it came back. Claims it prepared stay prepared.
func (a *Agent) syncDriver(ctx context.Context, name string) error {
	node, err := a.nodes.Get(name)
	if err != nil {
		// Gone: its driver stops with it, and its slices go with it
		// (owned by the Node, the garbage collector deletes them; a
		// driver left running would put them back).
		a.stopDriver(name)
		return nil
	}
	s, _, err := NodeSpec(node)
	if err != nil {
		return err
	}
	if s.DRA == "" && !a.known(name) {
		// A device-plugin node never met: no driver to stop.
		return nil
	}
	n, err := a.nodeFor(name)
	if err != nil {
		return err
	}
	n.dra.mu.Lock()
	current := n.dra.driver
	n.dra.mu.Unlock()
	if current != nil && current.model.driver == s.DRA {
		return nil
	}
	if current != nil {
		n.dra.mu.Lock()
		n.dra.driver = nil
		n.dra.mu.Unlock()
		a.wipe(n, current)
	}
	if s.DRA == "" {
		return nil
	}
	client, err := a.draDrivers.clientset()
	if err != nil {
		return err
	}
	d, err := startDRADriver(ctx, client, node, s)
	if err != nil {
		return err
	}
	n.dra.mu.Lock()
	n.dra.driver = d
	n.dra.mu.Unlock()
	return nil
}

// wipe stops a driver gone from its node and, after the wiping delay,
// deletes its slices with the kubelet's client, unless the same driver is
// registered again by then.
func (a *Agent) wipe(n *simNode, gone *draDriver) {
	gone.publisher.controller.Stop()
	a.done.Go(func() {
		select {
		case <-a.ctx.Done():
			return
		case <-time.After(a.opts.DRAWipingDelay):
		}
		n.dra.mu.Lock()
		back := n.dra.driver != nil && n.dra.driver.model == gone.model
		n.dra.mu.Unlock()
		if back {
			return
		}
		if err := gone.publisher.withdraw(a.ctx, n.dra.kubelet, n.name); err != nil {
			klog.FromContext(a.ctx).Error(err, "Simulated kubelet cannot wipe a DRA driver's slices", "node", n.name)
		}
	})
}

// stopDrivers stops every node's driver (their slices stay, as when the
// node's processes stop).
func (a *Agent) stopDrivers() {
	a.mu.Lock()
	nodes := slices.Collect(maps.Keys(a.simNodes))
	a.mu.Unlock()
	for _, name := range nodes {
		a.stopDriver(name)
	}
}

// stopDriver stops the node's driver, if it runs one; its slices stay.
func (a *Agent) stopDriver(name string) {
	a.mu.Lock()
	n := a.simNodes[name]
	a.mu.Unlock()
	if n == nil {
		return
	}
	n.dra.mu.Lock()
	d := n.dra.driver
	n.dra.driver = nil
	n.dra.mu.Unlock()
	if d != nil {
		d.publisher.controller.Stop()
	}
}

// runsDevicePlugins reports whether the node runs its vendor's HAMi device
// plugin (a device-plugin node, or a node without a spec), not a DRA
// driver: on a DRA node no device plugin registers the vendor's
// resources, so the device manager calls none.
func (a *Agent) runsDevicePlugins(name string) bool {
	node, err := a.nodes.Get(name)
	if err != nil {
		return true
	}
	s, ok, err := NodeSpec(node)
	return !ok || err != nil || s.DRA == ""
}

// prepareWait is a pod whose claims failed to prepare: the kubelet syncs
// it again once due, or when its labels or annotations differ from those
// it had.
type prepareWait struct {
	fingerprint string
	due         time.Time
	// reported: the ContainerCreating status is written.
	reported bool
}

// podFingerprint is what of a pod makes the kubelet's pod config send an
// update to the pod's worker, a bound pod's spec aside: its labels and
// annotations (status changes are not).
func podFingerprint(pod *corev1.Pod) string {
	return fmt.Sprint(pod.Labels, pod.Annotations, pod.DeletionTimestamp)
}

// dueForPrepare reports whether an admitted pod waiting for its claims is
// to be synced again now (called with a.mu held).
func (a *Agent) dueForPrepare(pod *corev1.Pod) bool {
	w, ok := a.waiting[pod.UID]
	if !ok || (w.fingerprint == podFingerprint(pod) && time.Now().Before(w.due)) {
		return false
	}
	w.due = time.Now().Add(a.opts.DRAResync)
	w.fingerprint = podFingerprint(pod)
	a.waiting[pod.UID] = w
	return true
}

// syncAgain hands a waiting pod to its kubelet again (at once in the fast
// mode).
func (a *Agent) syncAgain(ctx context.Context, key string, node *simNode, pod *corev1.Pod) error {
	if node.admissions != nil {
		node.admissions.Add(key)
		return nil
	}
	return a.admit(ctx, node, pod)
}

// prepareFailed is what the kubelet does when PrepareDynamicResources
// fails in SyncPod: a FailedPrepareDynamicResources event, the pod left
// Pending with its containers waiting (ContainerCreating, the status
// written once), and the pod synced again after the resync interval or on
// its next change. The error returned is a status write's, to retry.
func (a *Agent) prepareFailed(ctx context.Context, node *simNode, pod *corev1.Pod, cause error) error {
	a.prepareFailures.Add(1)
	var violation *ViolationError
	if errors.As(cause, &violation) {
		a.draViolations.Add(1)
	}
	a.recordEvent(ctx, node, pod, corev1.EventTypeWarning, "FailedPrepareDynamicResources",
		"Failed to prepare dynamic resources: prepare dynamic resources: "+cause.Error())
	key, _ := cache.MetaNamespaceKeyFunc(pod)
	a.mu.Lock()
	w := a.waiting[pod.UID]
	reported := w.reported
	a.waiting[pod.UID] = prepareWait{fingerprint: podFingerprint(pod), due: time.Now().Add(a.opts.DRAResync), reported: true}
	a.mu.Unlock()
	if node.admissions != nil {
		node.admissions.AddAfter(key, a.opts.DRAResync)
	} else {
		a.queue.AddAfter(key, a.opts.DRAResync)
	}
	if reported {
		return nil
	}
	if err := a.reportCreating(ctx, node, pod); err != nil {
		a.mu.Lock()
		if w, ok := a.waiting[pod.UID]; ok {
			w.reported = false
			a.waiting[pod.UID] = w
		}
		a.mu.Unlock()
		return err
	}
	return nil
}

// recordEvent posts an event about the pod from the node's kubelet, as
// its event recorder does (source kubelet on the node). A failure is
// logged, as the recorder drops it.
func (a *Agent) recordEvent(ctx context.Context, node *simNode, pod *corev1.Pod, eventType, reason, message string) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano())},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		},
		Reason: reason, Message: message, Type: eventType,
		Source:         corev1.EventSource{Component: "kubelet", Host: node.name},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kubelet", ReportingInstance: node.name,
	}
	if _, err := node.kubelet.Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		klog.FromContext(ctx).V(2).Info("Simulated kubelet cannot record an event", "pod", klog.KObj(pod), "reason", reason, "err", err)
	}
}

// podDevices is what each container of one pod got from its claims.
type podDevices struct {
	uid        types.UID
	containers map[string][]PreparedDevice
}

// recordDevices notes what the pod's containers got from its prepared
// claims.
func (a *Agent) recordDevices(node *simNode, pod *corev1.Pod) {
	got := node.dra.containerDevices(pod)
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waiting, pod.UID)
	key := pod.Namespace + "/" + pod.Name
	if a.devices[key].uid != pod.UID {
		a.prepared.Add(1)
	}
	a.devices[key] = podDevices{uid: pod.UID, containers: got}
}

// forgetDevices drops the record of a pod that is gone.
func (a *Agent) forgetDevices(pod *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := pod.Namespace + "/" + pod.Name
	if a.devices[key].uid == pod.UID {
		delete(a.devices, key)
	}
}

// PreparedDevices is what each container of the pod (by name) got from the
// claims its node's DRA driver prepared for it, the DRA side's record of
// what the device plugins hand a container: for HAMi's driver hami-core's
// memory and core limits. ok is false until the pod's claims are prepared
// (and once the pod is gone).
func (a *Agent) PreparedDevices(namespace, name string) (containers map[string][]PreparedDevice, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.devices[namespace+"/"+name]
	if !ok {
		return nil, false
	}
	out := make(map[string][]PreparedDevice, len(got.containers))
	for c, devs := range got.containers {
		out[c] = slices.Clone(devs)
	}
	return out, true
}
