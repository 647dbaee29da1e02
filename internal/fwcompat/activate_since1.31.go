//go:build !k8s1.30

package fwcompat

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Activate moves the pods, where they wait in the scheduling queue, to its
// active queue.
func Activate(h Handle, logger klog.Logger, pods map[string]*corev1.Pod) {
	h.Activate(logger, pods)
}

// CanActivate is true: Activate moves the pods.
const CanActivate = true
