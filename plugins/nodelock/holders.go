package nodelock

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// staleLockTimeout bounds one release of a stale lock.
const staleLockTimeout = 10 * time.Second

// Holders indexes the node locks the node informer shows by the pod
// each names, so that the pod's binding to another node or its deletion
// finds the lock it left behind. Such a lock is left by a scheduler process
// killed between taking a node's lock and binding its pod there (the pod is
// then placed again, elsewhere): the node's device plugin never sees that
// pod and never releases it, and only a later pod for the same node would
// take it over once it expires.
type Holders struct {
	mu sync.Mutex
	// byHolder maps a holder (namespace/name) to the locks naming it.
	byHolder map[string]map[string]string // holder -> node -> value
	// byNode maps a node to its lock's holder.
	byNode map[string]string
	// releasing counts the releases under way (in the background).
	releasing sync.WaitGroup
}

// Set records the node's lock (value "" for none) and returns its holder.
func (h *Holders) Set(node, value string) (holder string) {
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
	_, ns, name, err := Parse(value)
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

// Of returns the locks (node -> value) naming the holder.
func (h *Holders) Of(holder string) map[string]string {
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

// ReleaseStale deletes the node's lock with the locker if it still reads
// value, in the background: event handlers must not wait for the API
// server. why is logged.
func (h *Holders) ReleaseStale(logger klog.Logger, l *Locker, node, value, why string) {
	h.releasing.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), staleLockTimeout)
		defer cancel()
		released, err := l.ReleaseStale(ctx, node, value)
		switch {
		case err != nil:
			logger.Error(err, "Could not release a stale node lock; it expires on its own", "node", node, "lock", value, "reason", why)
		case released:
			logger.Info("Released a stale node lock", "node", node, "lock", value, "reason", why)
		}
	})
}

// Wait waits for the releases under way.
func (h *Holders) Wait() { h.releasing.Wait() }
