package nodelock

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// ReadFrom makes the Locker read nodes and lock holders from the
// scheduler's informer stores instead of the API server; call it before the
// Locker is used. A lock write still carries the node's resourceVersion, so
// a stale store costs a conflict, never a wrong lock. Whoever owns the node
// informer must call NodeChanged on its events, or a waiting Lock only sees
// a release at its next recheck.
func (l *Locker) ReadFrom(nodes corelisters.NodeLister, pods corelisters.PodLister) {
	l.nodes, l.pods = nodes, pods
}

// readNode returns the newest copy of the node this Locker knows: the
// informer's, or the one its own last lock write returned while the
// informer has not caught up with it. Without an informer store, or when
// the store lacks the node, it asks the API server.
func (l *Locker) readNode(ctx context.Context, name string) (*corev1.Node, error) {
	if l.nodes != nil {
		node, err := l.nodes.Get(name)
		if err == nil {
			return l.newest(node), nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return l.getNode(ctx, name)
}

// getNode reads the node from the API server.
func (l *Locker) getNode(ctx context.Context, name string) (*corev1.Node, error) {
	node, err := l.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return l.newest(node), nil
}

// readPod returns the pod from the informer's store, or from the API server
// when the store does not have it: only the API server may say a lock's
// holder is gone (the scheduler's store leaves out finished pods and may lag
// a pod just created).
func (l *Locker) readPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if l.pods != nil {
		pod, err := l.pods.Pods(namespace).Get(name)
		if err == nil {
			return pod, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return l.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// newest returns node, or the copy this Locker's last write of the node's
// lock returned if that one is newer. Once node is as new, the kept copy is
// dropped.
func (l *Locker) newest(node *corev1.Node) *corev1.Node {
	l.patchedMu.Lock()
	defer l.patchedMu.Unlock()
	mine, ok := l.patched[node.Name]
	if !ok {
		return node
	}
	if resourceVersion(mine) > resourceVersion(node) {
		return mine
	}
	delete(l.patched, node.Name)
	return node
}

// wrote keeps the node a lock write returned until the informer has it.
func (l *Locker) wrote(node *corev1.Node) {
	if node == nil || l.nodes == nil {
		return
	}
	l.patchedMu.Lock()
	defer l.patchedMu.Unlock()
	l.patched[node.Name] = node
}

// resourceVersion reads the API server's resourceVersion as a number, 0 when
// it is not one (then the informer's copy wins).
func resourceVersion(node *corev1.Node) uint64 {
	v, err := strconv.ParseUint(node.ResourceVersion, 10, 64)
	if err != nil {
		return 0
	}
	return v
}
