package perf

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Setting is the HAMi configuration a phase runs: a policy, which sets
// both nodeSchedulerPolicy and gpuSchedulerPolicy, and nodeQueueLimit.
type Setting struct {
	Policy devices.NodePolicy
	// QueueLimit is nodeQueueLimit; 0: none.
	QueueLimit int32
}

// String is "binpack", or "binpack/q2" with a queue limit of 2.
func (s Setting) String() string {
	if s.QueueLimit == 0 {
		return string(s.Policy)
	}
	return fmt.Sprintf("%s/q%d", s.Policy, s.QueueLimit)
}

// ParseSetting reads a Setting as String writes it.
func ParseSetting(s string) (Setting, error) {
	policy, limit, queued := strings.Cut(strings.TrimSpace(s), "/q")
	out := Setting{Policy: devices.NodePolicy(policy)}
	if out.Policy != devices.NodeBinpack && out.Policy != devices.NodeSpread {
		return Setting{}, fmt.Errorf("setting %q: policy %q: want binpack or spread", s, policy)
	}
	if queued {
		n, err := strconv.ParseInt(limit, 10, 32)
		if err != nil || n <= 0 {
			return Setting{}, fmt.Errorf("setting %q: queue limit %q: want a positive number", s, limit)
		}
		out.QueueLimit = int32(n)
	}
	return out, nil
}

// args are the plugin args of the setting; everything else keeps the
// shipped defaults.
func (s Setting) args() *hamiv1.HAMiArgs {
	return &hamiv1.HAMiArgs{
		NodeSchedulerPolicy: ptr.To(string(s.Policy)),
		GPUSchedulerPolicy:  ptr.To(string(s.Policy)),
		NodeQueueLimit:      ptr.To(s.QueueLimit),
	}
}
