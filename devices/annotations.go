package devices

// Pod and node annotation keys shared by every vendor
// (see docs/hami-protocol in the shared docs).
const (
	// AssignedNode names the node the pod was given; also a pod label.
	AssignedNode = "hami.io/vgpu-node"
	// AssignedTime is the unix time of the decision.
	AssignedTime = "hami.io/vgpu-time"
	// BindPhase is allocating at bind; the device plugin sets success or failed.
	BindPhase = "hami.io/bind-phase"
	// BindTime is the unix time of the bind.
	BindTime = "hami.io/bind-time"
	// NodeLock is the per-node lock the scheduler takes before binding.
	NodeLock = "hami.io/mutex.lock"
	// DeviceCordon lists card UUIDs that take no new work.
	DeviceCordon = "hami.io/device-cordon"
	// NodePolicyAnnotation overrides the node scheduling policy for a pod.
	NodePolicyAnnotation = "hami.io/node-scheduler-policy"
	// CardPolicyAnnotation overrides the card scheduling policy for a pod.
	CardPolicyAnnotation = "hami.io/gpu-scheduler-policy"
	// ScoringWeightsAnnotation weighs the card score, e.g.
	// "slot=1,core=1,memory=3" (see ParseScoringWeights).
	ScoringWeightsAnnotation = "hami.io/device-scoring-weights"
	// WebhookIgnoreLabel set to "ignore" keeps the webhook away.
	WebhookIgnoreLabel = "hami.io/webhook"
)

// Bind phases.
const (
	BindPhaseAllocating = "allocating"
	BindPhaseSuccess    = "success"
	BindPhaseFailed     = "failed"
)
