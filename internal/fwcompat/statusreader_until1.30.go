//go:build k8s1.30

package fwcompat

import fwk "k8s.io/kubernetes/pkg/scheduler/framework"

// NodeToStatusReader is what PostFilter is given: in 1.30, the map of
// every node's filter status.
type NodeToStatusReader = fwk.NodeToStatusMap
