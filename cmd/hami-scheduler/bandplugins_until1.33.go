//go:build k8s1.33 || k8s1.30

package main

import "k8s.io/kubernetes/cmd/kube-scheduler/app"

// bandPlugins registers the plugins of this Kubernetes band's profile
// beside HAMi and Coscheduling: none before 1.34.
func bandPlugins() []app.Option { return nil }
