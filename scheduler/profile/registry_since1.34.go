//go:build !k8s1.33 && !k8s1.30

package profile

import (
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	"github.com/hami-scheduler/hami-scheduler/plugins/dynamicresources"
)

// bandPlugins are the out-of-tree plugins of this Kubernetes band's
// profile beside HAMi and Coscheduling: from 1.34, HAMiDynamicResources in
// place of the in-tree DynamicResources.
func bandPlugins() frameworkruntime.Registry {
	return frameworkruntime.Registry{dynamicresources.Name: dynamicresources.New}
}

// countCheckedByHAMi reports whether NodeResourcesFit leaves the vendor's
// card count to the HAMi plugin: a vendor with DRA drivers, whose DRA
// nodes advertise no count (the plugin checks it where a node does).
func countCheckedByHAMi(v devices.Vendor) bool {
	for _, d := range dra.Drivers {
		if d.Vendor == v.Name() {
			return true
		}
	}
	return false
}
