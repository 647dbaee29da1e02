// Package fwcompat names the scheduler-framework API the HAMi plugin uses,
// from wherever the Kubernetes release this binary is built from keeps it:
// k8s.io/kube-scheduler/framework from 1.35 (the default build), and
// k8s.io/kubernetes/pkg/scheduler/framework, where CycleState, NodeInfo and
// PodInfo are pointer structs, in 1.33 and 1.30 (build tags k8s1.33 and
// k8s1.30, with the go.mod that hack/band-module.sh writes for each). The
// plugin imports it as fwk and writes the same code for every band; what
// differs in signature (PreFilter, PreBindPreFlight, and in 1.30 Score and
// EventsToRegister) lives in the plugin's own tagged files.
package fwcompat
