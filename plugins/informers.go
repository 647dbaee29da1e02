package plugins

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

func (p *Plugin) onNodeAdd(logger klog.Logger, obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	p.locker.NodeChanged(node.Name)
	p.trackLock(logger, node)
	p.setNode(logger, node)
}

func (p *Plugin) onNodeUpdate(logger klog.Logger, oldObj, obj any) {
	old, ok1 := oldObj.(*corev1.Node)
	node, ok2 := obj.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	// Any new version may be the lock's release, or the version a waiting
	// lock write conflicted with.
	p.locker.NodeChanged(node.Name)
	if old.Annotations[devices.NodeLock] != node.Annotations[devices.NodeLock] {
		p.trackLock(logger, node)
	}
	if !p.cache.NodeChanged(old, node) {
		return
	}
	p.setNode(logger, node)
}

func (p *Plugin) setNode(logger klog.Logger, node *corev1.Node) {
	if !p.cache.SetNode(node) {
		logger.V(4).Info("Ignored an older node object than the cache holds", "node", klog.KObj(node), "resourceVersion", node.ResourceVersion)
		return
	}
	defer p.retryRejected(logger, "node devices changed")
	for vi, v := range p.registry.Vendors() {
		if err := p.cache.InventoryErr(node.Name, vi); err != nil {
			undecodableAnnotations.WithLabelValues("node").Inc()
		}
		if _, _, err := p.cache.Snapshot(node.Name, vi, nil); err != nil {
			logger.Info("Node's devices cannot be used", "node", klog.KObj(node), "vendor", v.Name(), "reason", err.Error())
			p.handle.EventRecorder().Eventf(node, nil, corev1.EventTypeWarning, "InvalidDeviceInventory", "Scheduling",
				"%s devices on this node are skipped: %v", v.Name(), err)
		}
	}
}

func (p *Plugin) onNodeDelete(logger klog.Logger, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		p.locker.NodeChanged(node.Name)
		p.lockHolders.Set(node.Name, "")
		p.releaseReservationsOn(logger, node.Name)
		p.cache.RemoveNode(node.Name)
		p.queues.ForgetNode(node.Name)
		logger.V(4).Info("Node left the device cache", "node", klog.KObj(node))
	}
}

// releaseReservationsOn gives back at once what is reserved on a deleted
// node: a resumed hand-over's cards are forgotten, a pod waiting at Permit
// is turned away (its Unreserve frees them, and its gang's), and the gang
// rounds binding a member there are aborted.
func (p *Plugin) releaseReservationsOn(logger klog.Logger, node string) {
	cause := "node " + node + " was deleted"
	p.gangs.onNode(node, cause)
	for uid, h := range p.cache.HoldingsOn(node) {
		if !h.Assumed {
			continue
		}
		if p.resumed.release(uid) {
			p.cache.ForgetUID(uid)
			logger.V(2).Info("A resumed hand-over's node was deleted; its cards are free", "pod", h.Key, "node", node)
			continue
		}
		if w := p.handle.GetWaitingPod(uid); w != nil {
			w.Reject(Name, cause)
		}
	}
}

func (p *Plugin) onPodSet(logger klog.Logger, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		p.rejected.remove(pod.UID)
		p.releaseLocksOf(logger, pod, false)
		p.leaveGang(logger, pod, true, false, "")
	}
	held := p.cache.HasAssignment(pod)
	now := time.Now()
	p.handOvers.observe(pod, now)
	p.queues.Observe(pod, now)
	p.waiting.Set(pod, now)
	if err := p.cache.SetPod(pod); err != nil {
		undecodableAnnotations.WithLabelValues("pod").Inc()
		logger.Error(err, "Pod's device assignment cannot be read; its node's cards are held until it is gone", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
		p.handle.EventRecorder().Eventf(pod, nil, corev1.EventTypeWarning, "InvalidDeviceAssignment", "Scheduling",
			"device assignment annotation cannot be read; the node's cards take no new pod until this pod is gone or its annotation is fixed: %v", err)
	}
	p.resumeHandOver(logger, pod)
	if held && pod.Spec.NodeName != "" && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
		p.retryRejected(logger, "a pod holding devices terminated")
	}
}

func (p *Plugin) onPodDelete(logger klog.Logger, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.rejected.remove(pod.UID)
		p.handOvers.drop(pod.UID)
		p.queues.Remove(pod.UID)
		p.waiting.Remove(pod.UID)
		p.fullPass.remove(pod.UID)
		p.resumed.forget(pod.UID)
		p.releaseLocksOf(logger, pod, true)
		p.leaveGang(logger, pod, false, true, fmt.Sprintf("member %s was deleted", klog.KObj(pod)))
		if p.cache.RemovePod(pod) {
			logger.V(5).Info("Pod left the device cache", "pod", klog.KObj(pod))
			p.retryRejected(logger, "a pod holding devices was deleted")
		}
	}
}
