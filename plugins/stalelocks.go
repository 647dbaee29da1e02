package plugins

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Stale node locks: a lock left by a scheduler process killed between
// taking a node's lock and binding its pod there is released as soon as
// the informers show its pod bound to another node, or deleted
// (nodelock.Holders).

// trackLock indexes the node's lock and releases it at once when its
// holder is already bound to another node.
func (p *Plugin) trackLock(logger klog.Logger, node *corev1.Node) {
	holder := p.lockHolders.Set(node.Name, node.Annotations[devices.NodeLock])
	if holder == "" || p.pods == nil {
		return
	}
	ns, name, err := cache.SplitMetaNamespaceKey(holder)
	if err != nil {
		return
	}
	pod, err := p.pods.Pods(ns).Get(name)
	if err != nil || pod.Spec.NodeName == "" || pod.Spec.NodeName == node.Name {
		return
	}
	p.lockHolders.ReleaseStale(logger, p.locker, node.Name, node.Annotations[devices.NodeLock], "its pod is bound to node "+pod.Spec.NodeName)
}

// releaseLocksOf releases the locks naming the pod on nodes other than
// the one it is bound to, or all of them when it was deleted.
func (p *Plugin) releaseLocksOf(logger klog.Logger, pod *corev1.Pod, deleted bool) {
	for node, value := range p.lockHolders.Of(pod.Namespace + "/" + pod.Name) {
		switch {
		case deleted:
			p.lockHolders.ReleaseStale(logger, p.locker, node, value, "its pod was deleted")
		case pod.Spec.NodeName != "" && pod.Spec.NodeName != node:
			p.lockHolders.ReleaseStale(logger, p.locker, node, value, "its pod is bound to node "+pod.Spec.NodeName)
		}
	}
}
