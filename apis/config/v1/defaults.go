package v1

import (
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Defaults of HAMiArgs.
const (
	DefaultNodeSchedulerPolicy = "binpack"
	DefaultGPUSchedulerPolicy  = "spread"
	DefaultNodeLockExpiry      = 5 * time.Minute
	DefaultNodeLockWait        = 30 * time.Second
	DefaultVendor              = "nvidia"
	// DefaultNodeQueueLimit puts no count limit on a node's queue: a
	// burst queues on a node as long as its cards hold the burst's pods,
	// as in HAMi's order (docs/configuration.md).
	DefaultNodeQueueLimit int32 = 0
	// DefaultNodeQueueWait lets one pod wait on a node behind the one its
	// device plugin serves (1.25 pods of 1.6 s): a steady stream keeps
	// every node it uses busy, with the fewest waiting; a longer wait
	// uses the same nodes with longer queues (docs/benchmarks.md).
	DefaultNodeQueueWait = 2 * time.Second
	// DefaultBurstQueueWait puts no time bound on a burst's queue on a
	// node: bursts pack as in HAMi's order (docs/configuration.md).
	DefaultBurstQueueWait = 0
	// DefaultCandidateNodes is kube-scheduler's own floor of nodes to
	// find feasible (minFeasibleNodesToFind).
	DefaultCandidateNodes int32 = 100
	// NodeLockExpiryEnv is HAMi's variable for the lock expiry; here it is
	// only the default of nodeLockExpiry, which an explicit value overrides.
	NodeLockExpiryEnv = "HAMI_NODELOCK_EXPIRE"
)

// Defaults of CoschedulingArgs, scheduler-plugins' own.
const (
	DefaultPermitWaitingTimeSeconds int64 = 60
	DefaultPodGroupBackoffSeconds   int64 = 0
	DefaultPodGroupRejectPercentage int32 = 10
)

// SetDefaults_CoschedulingArgs fills every unset field.
func SetDefaults_CoschedulingArgs(obj *CoschedulingArgs) {
	if obj.PermitWaitingTimeSeconds == nil {
		obj.PermitWaitingTimeSeconds = ptr.To(DefaultPermitWaitingTimeSeconds)
	}
	if obj.PodGroupBackoffSeconds == nil {
		obj.PodGroupBackoffSeconds = ptr.To(DefaultPodGroupBackoffSeconds)
	}
	if obj.PodGroupRejectPercentage == nil {
		obj.PodGroupRejectPercentage = ptr.To(DefaultPodGroupRejectPercentage)
	}
	if obj.UpdatePodGroupStatus == nil {
		obj.UpdatePodGroupStatus = ptr.To(true)
	}
}

// SetDefaults_HAMiArgs fills every unset field. An unparsable
// HAMI_NODELOCK_EXPIRE leaves nodeLockExpiry unset so that validation
// reports it.
func SetDefaults_HAMiArgs(obj *HAMiArgs) {
	if obj.NodeSchedulerPolicy == nil {
		obj.NodeSchedulerPolicy = ptr.To(DefaultNodeSchedulerPolicy)
	}
	if obj.GPUSchedulerPolicy == nil {
		obj.GPUSchedulerPolicy = ptr.To(DefaultGPUSchedulerPolicy)
	}
	if obj.NodeLockExpiry == nil {
		obj.NodeLockExpiry = defaultNodeLockExpiry()
	}
	if obj.NodeLockWait == nil {
		obj.NodeLockWait = &metav1.Duration{Duration: DefaultNodeLockWait}
	}
	if obj.NodeQueueLimit == nil {
		obj.NodeQueueLimit = ptr.To(DefaultNodeQueueLimit)
	}
	if obj.NodeQueueWait == nil {
		obj.NodeQueueWait = &metav1.Duration{Duration: DefaultNodeQueueWait}
	}
	if obj.BurstQueueWait == nil {
		obj.BurstQueueWait = &metav1.Duration{Duration: DefaultBurstQueueWait}
	}
	if obj.CandidateNodes == nil {
		obj.CandidateNodes = ptr.To(DefaultCandidateNodes)
	}
	if obj.SuccessEvents == nil {
		obj.SuccessEvents = ptr.To(false)
	}
	if obj.DeviceConfigFile == nil {
		obj.DeviceConfigFile = ptr.To("")
	}
	if obj.EnableAscend == nil {
		obj.EnableAscend = ptr.To(false)
	}
	if obj.EnableIluvatar == nil {
		obj.EnableIluvatar = ptr.To(false)
	}
	if len(obj.Vendors) == 0 && *obj.DeviceConfigFile == "" {
		obj.Vendors = []VendorArgs{{Name: DefaultVendor}}
	}
}

// SetDefaults_VendorArgs gives the card count its default.
func SetDefaults_VendorArgs(obj *VendorArgs) {
	if obj.DefaultCount == nil {
		obj.DefaultCount = ptr.To[int32](1)
	}
}

func defaultNodeLockExpiry() *metav1.Duration {
	env, ok := os.LookupEnv(NodeLockExpiryEnv)
	if !ok || env == "" {
		return &metav1.Duration{Duration: DefaultNodeLockExpiry}
	}
	d, err := time.ParseDuration(env)
	if err != nil {
		return nil
	}
	return &metav1.Duration{Duration: d}
}
