//go:build !k8s1.33 && !k8s1.30

package fwcompat

import (
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// The framework's types, as the plugin names them.
type (
	CycleState           = fwk.CycleState
	NodeInfo             = fwk.NodeInfo
	PodInfo              = fwk.PodInfo
	Status               = fwk.Status
	Code                 = fwk.Code
	QueueingHint         = fwk.QueueingHint
	NodeScoreList        = fwk.NodeScoreList
	NodeScore            = fwk.NodeScore
	Handle               = fwk.Handle
	StateData            = fwk.StateData
	StateKey             = fwk.StateKey
	Plugin               = fwk.Plugin
	FilterPlugin         = fwk.FilterPlugin
	PreFilterPlugin      = fwk.PreFilterPlugin
	PreFilterExtensions  = fwk.PreFilterExtensions
	PreFilterResult      = fwk.PreFilterResult
	PostFilterPlugin     = fwk.PostFilterPlugin
	PostFilterResult     = fwk.PostFilterResult
	PreScorePlugin       = fwk.PreScorePlugin
	ScorePlugin          = fwk.ScorePlugin
	ScoreExtensions      = fwk.ScoreExtensions
	ReservePlugin        = fwk.ReservePlugin
	PreBindPlugin        = fwk.PreBindPlugin
	PostBindPlugin       = fwk.PostBindPlugin
	EnqueueExtensions    = fwk.EnqueueExtensions
	PermitPlugin         = fwk.PermitPlugin
	QueueSortPlugin      = fwk.QueueSortPlugin
	WaitingPod           = fwk.WaitingPod
	ClusterEvent         = fwk.ClusterEvent
	ClusterEventWithHint = fwk.ClusterEventWithHint
	PodNominator         = fwk.PodNominator
	NominatingInfo       = fwk.NominatingInfo
	NodeToStatusReader   = fwk.NodeToStatusReader
)

// The framework's constants, as the plugin names them.
const (
	Success                      = fwk.Success
	Error                        = fwk.Error
	Unschedulable                = fwk.Unschedulable
	UnschedulableAndUnresolvable = fwk.UnschedulableAndUnresolvable
	Skip                         = fwk.Skip
	Queue                        = fwk.Queue
	QueueSkip                    = fwk.QueueSkip
	MaxNodeScore                 = fwk.MaxNodeScore
	MinNodeScore                 = fwk.MinNodeScore
	Node                         = fwk.Node
	Add                          = fwk.Add
	Delete                       = fwk.Delete
	UpdateNodeAnnotation         = fwk.UpdateNodeAnnotation
	UpdateNodeAllocatable        = fwk.UpdateNodeAllocatable
	UpdateNodeLabel              = fwk.UpdateNodeLabel
	UpdateNodeTaint              = fwk.UpdateNodeTaint
	Update                       = fwk.Update
	Wait                         = fwk.Wait
	Pod                          = fwk.Pod
)

// The framework's functions and values, as the plugin names them.
var (
	NewStatus   = fwk.NewStatus
	AsStatus    = fwk.AsStatus
	ErrNotFound = fwk.ErrNotFound
)

// AssignedPod is the event resource of pods bound to a node.
const AssignedPod = fwk.AssignedPod

// PodOf is the pod a PodInfo describes.
func PodOf(pi PodInfo) *corev1.Pod { return pi.GetPod() }

// IsPodGroupCycle reports whether state is a cycle of the pod-group
// scheduling that Kubernetes' GenericWorkload gate turns on (1.35 and
// later): every member is reserved, all are unreserved, and the members of
// a group that fits are reserved again before Permit; a workload-aware
// preemption simulates its victims away in the snapshot before PreFilter.
func IsPodGroupCycle(state CycleState) bool { return state.IsPodGroupSchedulingCycle() }
