//go:build k8s1.33 || k8s1.30

package profile

import frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

// bandPlugins are the out-of-tree plugins of this Kubernetes band's
// profile beside HAMi and Coscheduling: none before 1.34.
func bandPlugins() frameworkruntime.Registry { return nil }

// countCheckedByHAMi: before 1.34 NodeResourcesFit checks every count a
// device plugin advertises.
func countCheckedByHAMi(devices.Vendor) bool { return false }
