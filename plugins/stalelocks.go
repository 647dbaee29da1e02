package plugins

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/plugins/nodelock"
)

// staleLockTimeout bounds one release of a stale lock.
const staleLockTimeout = 10 * time.Second

// lockHolders indexes the node locks the node informer shows by the pod
// each names, so that the pod's binding to another node or its deletion
// finds the lock it left behind. Such a lock is left by a scheduler process
// killed between taking a node's lock and binding its pod there (the pod is
// then placed again, elsewhere): the node's device plugin never sees that
// pod and never releases it, and only a later pod for the same node would
// take it over once it expires.
type lockHolders struct {
	mu sync.Mutex
	// byHolder maps a holder (namespace/name) to the locks naming it.
	byHolder map[string]map[string]string // holder -> node -> value
	// byNode maps a node to its lock's holder.
	byNode map[string]string
	// releasing counts the releases under way (in the background).
	releasing sync.WaitGroup
}

// set records the node's lock (value "" for none) and returns its holder.
func (h *lockHolders) set(node, value string) (holder string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.byNode[node]; ok {
		delete(h.byHolder[old], node)
		if len(h.byHolder[old]) == 0 {
			delete(h.byHolder, old)
		}
		delete(h.byNode, node)
	}
	if value == "" {
		return ""
	}
	_, ns, name, err := nodelock.Parse(value)
	if err != nil || name == "" {
		return ""
	}
	holder = ns + "/" + name
	if h.byNode == nil {
		h.byNode = map[string]string{}
		h.byHolder = map[string]map[string]string{}
	}
	h.byNode[node] = holder
	if h.byHolder[holder] == nil {
		h.byHolder[holder] = map[string]string{}
	}
	h.byHolder[holder][node] = value
	return holder
}

// of returns the locks (node -> value) naming the holder.
func (h *lockHolders) of(holder string) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.byHolder[holder]) == 0 {
		return nil
	}
	out := make(map[string]string, len(h.byHolder[holder]))
	for node, value := range h.byHolder[holder] {
		out[node] = value
	}
	return out
}

// trackLock indexes the node's lock and releases it at once when its
// holder is already bound to another node.
func (p *Plugin) trackLock(logger klog.Logger, node *corev1.Node) {
	holder := p.lockHolders.set(node.Name, node.Annotations[devices.NodeLock])
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
	p.releaseStaleLock(logger, node.Name, node.Annotations[devices.NodeLock], "its pod is bound to node "+pod.Spec.NodeName)
}

// releaseLocksOf releases the locks naming the pod on nodes other than
// the one it is bound to, or all of them when it was deleted.
func (p *Plugin) releaseLocksOf(logger klog.Logger, pod *corev1.Pod, deleted bool) {
	for node, value := range p.lockHolders.of(pod.Namespace + "/" + pod.Name) {
		switch {
		case deleted:
			p.releaseStaleLock(logger, node, value, "its pod was deleted")
		case pod.Spec.NodeName != "" && pod.Spec.NodeName != node:
			p.releaseStaleLock(logger, node, value, "its pod is bound to node "+pod.Spec.NodeName)
		}
	}
}

// releaseStaleLock deletes the node's lock if it still reads value, in
// the background: event handlers must not wait for the API server.
func (p *Plugin) releaseStaleLock(logger klog.Logger, node, value, why string) {
	p.lockHolders.releasing.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), staleLockTimeout)
		defer cancel()
		released, err := p.locker.ReleaseStale(ctx, node, value)
		switch {
		case err != nil:
			logger.Error(err, "Could not release a stale node lock; it expires on its own", "node", node, "lock", value, "reason", why)
		case released:
			logger.Info("Released a stale node lock", "node", node, "lock", value, "reason", why)
		}
	})
}
