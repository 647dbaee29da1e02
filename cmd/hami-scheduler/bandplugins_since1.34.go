//go:build !k8s1.33 && !k8s1.30

package main

import (
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/hami-scheduler/hami-scheduler/plugins/dynamicresources"
)

// bandPlugins registers the plugins of this Kubernetes band's profile
// beside HAMi and Coscheduling: from 1.34, HAMiDynamicResources, which
// the shipped profile runs in place of the in-tree DynamicResources.
func bandPlugins() []app.Option {
	return []app.Option{app.WithPlugin(dynamicresources.Name, dynamicresources.New)}
}
