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
	// QueueLimit is nodeQueueLimit when SetQueueLimit; otherwise the
	// phase runs the shipped default.
	QueueLimit    int32
	SetQueueLimit bool
}

// String is "binpack" (the shipped nodeQueueLimit), or "binpack/q2" with a
// queue limit of 2 ("binpack/q0": none).
func (s Setting) String() string {
	if !s.SetQueueLimit {
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
		if err != nil || n < 0 {
			return Setting{}, fmt.Errorf("setting %q: queue limit %q: want a number, 0 for none", s, limit)
		}
		out.QueueLimit, out.SetQueueLimit = int32(n), true
	}
	return out, nil
}

// args are the plugin args of the setting; everything else keeps the
// shipped defaults.
func (s Setting) args() *hamiv1.HAMiArgs {
	args := &hamiv1.HAMiArgs{
		NodeSchedulerPolicy: ptr.To(string(s.Policy)),
		GPUSchedulerPolicy:  ptr.To(string(s.Policy)),
	}
	if s.SetQueueLimit {
		args.NodeQueueLimit = ptr.To(s.QueueLimit)
	}
	return args
}
