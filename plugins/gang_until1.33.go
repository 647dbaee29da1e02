//go:build k8s1.33 || k8s1.30

package plugins

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// inTreeGroupName is "": pods have no spec.schedulingGroup before 1.36.
func inTreeGroupName(*corev1.Pod) string { return "" }

// inTreeGangObject is nil: no in-tree pod groups before 1.36.
func (p *Plugin) inTreeGangObject(*corev1.Pod) runtime.Object { return nil }
