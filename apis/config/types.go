package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HAMiArgs configure the HAMi plugin (see the v1 type for the meaning of
// each field). Every field is set once defaults have been applied.
type HAMiArgs struct {
	metav1.TypeMeta

	NodeSchedulerPolicy string
	GPUSchedulerPolicy  string
	NodeLockExpiry      metav1.Duration
	NodeLockWait        metav1.Duration
	NodeQueueLimit      int32
	NodeQueueWait       metav1.Duration
	BurstQueueWait      metav1.Duration
	CandidateNodes      int32
	SuccessEvents       bool
	DeviceConfigFile    string
	EnableAscend        bool
	EnableIluvatar      bool
	Vendors             []VendorArgs
}

// VendorArgs enable one device vendor and set its resource names and
// admission defaults.
type VendorArgs struct {
	Name                         string
	ResourceCountName            string
	ResourceMemoryName           string
	ResourceMemoryPercentageName string
	ResourceCoresName            string
	ResourcePriorityName         string
	DefaultMemoryMiB             int32
	DefaultCores                 int32
	DefaultCount                 *int32
	MemoryFactor                 int32
}

// Node and card policies.
const (
	PolicyBinpack = "binpack"
	PolicySpread  = "spread"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CoschedulingArgs configure the Coscheduling plugin (see the v1 type for
// the meaning of each field). Every field is set once defaults have been
// applied.
type CoschedulingArgs struct {
	metav1.TypeMeta

	PermitWaitingTimeSeconds int64
	PodGroupBackoffSeconds   int64
	PodGroupRejectPercentage int32
	UpdatePodGroupStatus     bool
}
