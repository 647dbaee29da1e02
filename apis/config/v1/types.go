package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HAMiArgs configure the HAMi plugin:
//
//	pluginConfig:
//	- name: HAMi
//	  args:
//	    nodeSchedulerPolicy: binpack
//	    gpuSchedulerPolicy: spread
//	    nodeLockExpiry: 5m
//	    nodeLockWait: 30s
//	    deviceConfigFile: /config/device-config.yaml
type HAMiArgs struct {
	metav1.TypeMeta `json:",inline"`

	// NodeSchedulerPolicy ranks nodes: binpack (default) fills the busiest
	// nodes first, spread the idlest. A pod may override it with the
	// hami.io/node-scheduler-policy annotation.
	NodeSchedulerPolicy *string `json:"nodeSchedulerPolicy,omitempty"`
	// GPUSchedulerPolicy orders the cards of a node: spread (default) or
	// binpack. A pod may override it with hami.io/gpu-scheduler-policy.
	GPUSchedulerPolicy *string `json:"gpuSchedulerPolicy,omitempty"`
	// NodeLockExpiry is the age after which another pod's node lock may be
	// taken over. Default: the HAMI_NODELOCK_EXPIRE environment variable
	// (a Go duration, as HAMi reads it) when set, else 5m.
	NodeLockExpiry *metav1.Duration `json:"nodeLockExpiry,omitempty"`
	// NodeLockWait bounds how long PreBind waits for a node locked by
	// another pod before it fails and the pod is retried (default 30s).
	NodeLockWait *metav1.Duration `json:"nodeLockWait,omitempty"`
	// NodeQueueLimit is the most of this scheduler's pods one node's
	// queue holds (pods handed over to the node, holding or waiting for
	// its node lock, until its device plugin has served them) before Score
	// prefers nodes with shorter queues: nodes are ranked first by their
	// queue's length divided by the limit, then by the node policy. HAMi's
	// node lock lets a node take one pod per device-plugin round trip
	// (about 1.6 s with HAMi's 5 QPS client). With NodeQueueWait set, it
	// caps what a burst may queue on one node, in pods (as BurstQueueWait
	// does in time); with NodeQueueWait 0 it is the bound at every time.
	// Default DefaultNodeQueueLimit: 0, no count limit (with
	// NodeQueueWait 0 too: HAMi's order).
	NodeQueueLimit *int32 `json:"nodeQueueLimit,omitempty"`
	// NodeQueueWait bounds a node's queue in time for pods that arrive
	// one after the other: once the pods of this scheduler in hand-over to
	// a node make an expected wait of at least this (the pods queued times
	// the node's measured hand-over time per pod, DefaultHandOverTime
	// until measured, the one being served counting half), Score prefers
	// nodes with a shorter wait, as
	// NodeQueueLimit does by count. A burst (pods waiting for the
	// scheduler together) may queue past it on the nodes it packs, up to
	// its own size (see BurstQueueWait). Default DefaultNodeQueueWait; 0:
	// NodeQueueLimit alone, at every time.
	NodeQueueWait *metav1.Duration `json:"nodeQueueWait,omitempty"`
	// BurstQueueWait trades cards for speed in bursts: it bounds, in
	// expected device-plugin work as NodeQueueWait does, how many of a
	// burst's pods one node's queue may hold. Default 0: no bound, a burst
	// queues on the nodes binpack packs it onto as long as their cards
	// hold it, so it uses the nodes and cards of HAMi's order and is
	// Running after its busiest node's pods x that node's hand-over time.
	// A duration opens more nodes as a node's queue reaches it: a burst is
	// Running after about that long, on more nodes and cards
	// (docs/configuration.md has the figures of both). Applies with
	// NodeQueueWait set; never below NodeQueueWait.
	BurstQueueWait *metav1.Duration `json:"burstQueueWait,omitempty"`
	// CandidateNodes bounds the nodes the other plugins filter and score
	// for a device pod on a large cluster: when more nodes have cards the
	// pod asks for, PreFilter offers the framework only this many, the
	// best by the node policy and the node queues among those whose cards
	// hold the pod (and whose taints, node affinity and cordon let it
	// in), as Score would rank them. A pod that fits none of them is
	// offered every node on its next attempt. Pods that may preempt
	// (priority above 0) or whose placement depends on other pods or
	// volumes (pod affinity, topology spread, host ports, claims) always
	// see every node. Default DefaultCandidateNodes; 0: every node.
	CandidateNodes *int32 `json:"candidateNodes,omitempty"`
	// SuccessEvents makes the plugin record HAMi's FilteringSucceed and
	// BindingSucceed events on every pod it places, as HAMi's extender
	// does. Default false: they cost two API writes per pod and say what
	// kube-scheduler's Scheduled event says; FilteringFailed and
	// BindingFailed are always recorded.
	SuccessEvents *bool `json:"successEvents,omitempty"`
	// DeviceConfigFile is HAMi's device-config.yaml (the device ConfigMap
	// of HAMi's chart). When set it defines the vendors and their settings,
	// and Vendors must be empty. Read once at start.
	DeviceConfigFile *string `json:"deviceConfigFile,omitempty"`
	// EnableAscend is HAMi's --enable-ascend: with it, each entry of the
	// device config file's vnpus.configs that names its resourceName
	// enables one Ascend chip; without it (default false) the vnpus
	// section is read and reported but no Ascend vendor is made.
	EnableAscend *bool `json:"enableAscend,omitempty"`
	// EnableIluvatar is HAMi's --enable-iluvatar: with it, each entry of
	// the device config file's iluvatars list that names its
	// resourceCountName enables one Iluvatar chip; without it (default
	// false) the entries are read and reported but no vendor is made.
	EnableIluvatar *bool `json:"enableIluvatar,omitempty"`
	// Vendors enables device vendors and sets their resource names and
	// defaults, for clusters that do not come from HAMi. Default (when
	// DeviceConfigFile is empty too): nvidia with HAMi's resource names.
	Vendors []VendorArgs `json:"vendors,omitempty"`
}

// VendorArgs enable one device vendor. Empty names take the vendor's
// defaults (nvidia: nvidia.com/gpu, nvidia.com/gpumem, ...).
type VendorArgs struct {
	// Name selects the vendor, e.g. nvidia.
	Name string `json:"name"`
	// ResourceCountName is the extended resource counting cards.
	ResourceCountName string `json:"resourceCountName,omitempty"`
	// ResourceMemoryName is the memory per card, in MiB.
	ResourceMemoryName string `json:"resourceMemoryName,omitempty"`
	// ResourceMemoryPercentageName is the memory per card in percent.
	ResourceMemoryPercentageName string `json:"resourceMemoryPercentageName,omitempty"`
	// ResourceCoresName is the core share per card in percent.
	ResourceCoresName string `json:"resourceCoresName,omitempty"`
	// ResourcePriorityName is the task priority.
	ResourcePriorityName string `json:"resourcePriorityName,omitempty"`
	// DefaultMemoryMiB is the memory per card of a container that names
	// none; 0 means the whole card.
	DefaultMemoryMiB int32 `json:"defaultMemoryMiB,omitempty"`
	// DefaultCores is the core share of a container that names none.
	DefaultCores int32 `json:"defaultCores,omitempty"`
	// DefaultCount is the card count the webhook adds to a container that
	// asks only for memory or cores (default 1; 0 adds none).
	DefaultCount *int32 `json:"defaultCount,omitempty"`
	// MemoryFactor multiplies the memory a container asks for (HAMi's
	// memoryFactor); 0 and 1 leave it unchanged.
	MemoryFactor int32 `json:"memoryFactor,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CoschedulingArgs configure the Coscheduling plugin, which places the pods
// of a scheduler-plugins PodGroup all together or not at all. The first
// three fields are those of scheduler-plugins' CoschedulingArgs, with the
// same names, meaning and defaults, so that its users' pluginConfig works
// unchanged:
//
//	pluginConfig:
//	- name: Coscheduling
//	  args:
//	    permitWaitingTimeSeconds: 60
//	    podGroupBackoffSeconds: 0
//	    podGroupRejectPercentage: 10
type CoschedulingArgs struct {
	metav1.TypeMeta `json:",inline"`

	// PermitWaitingTimeSeconds is how long placed members wait for the
	// rest of their group when the PodGroup sets no
	// scheduleTimeoutSeconds (default 60).
	PermitWaitingTimeSeconds *int64 `json:"permitWaitingTimeSeconds,omitempty"`
	// PodGroupBackoffSeconds is how long a group is not tried again after
	// one of its members fitted no node and the group was rejected
	// (default 0: no backoff beyond kube-scheduler's own per pod).
	PodGroupBackoffSeconds *int64 `json:"podGroupBackoffSeconds,omitempty"`
	// PodGroupRejectPercentage: when a member fits no node while at most
	// this percentage of minMember is still unplaced, the members already
	// placed keep waiting instead of the group being rejected (default 10).
	PodGroupRejectPercentage *int32 `json:"podGroupRejectPercentage,omitempty"`
	// UpdatePodGroupStatus keeps each PodGroup's status (phase, running,
	// succeeded, failed, occupiedBy) as scheduler-plugins' PodGroup
	// controller does (default true). Turn it off when that controller
	// runs in the cluster.
	UpdatePodGroupStatus *bool `json:"updatePodGroupStatus,omitempty"`
}
