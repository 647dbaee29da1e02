//go:build k8s1.33

package fwcompat

import fwk "k8s.io/kubernetes/pkg/scheduler/framework"

// NodeToStatusReader is what PostFilter is given: the filter status of
// every node.
type NodeToStatusReader = fwk.NodeToStatusReader
