//go:build k8s1.30

package fwcompat

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Activate does nothing in 1.30, whose framework cannot activate pods
// outside a scheduling cycle (Handle.Activate came in 1.31): a rejected
// pod is requeued by the cluster events the plugin registers, after its
// backoff.
func Activate(Handle, klog.Logger, map[string]*corev1.Pod) {}

// CanActivate is false: Activate does nothing.
const CanActivate = false
