package perf

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Setting is the HAMi configuration a phase runs: a policy, which sets
// both nodeSchedulerPolicy and gpuSchedulerPolicy, and the node queue's
// bounds, nodeQueueLimit, nodeQueueWait and burstQueueWait.
type Setting struct {
	Policy devices.NodePolicy
	// QueueLimit is nodeQueueLimit when SetQueueLimit; otherwise the
	// phase runs the shipped default. Setting it alone also sets
	// nodeQueueWait 0: the count limit as the only bound.
	QueueLimit    int32
	SetQueueLimit bool
	// QueueWait is nodeQueueWait when SetQueueWait.
	QueueWait    time.Duration
	SetQueueWait bool
	// BurstWait is burstQueueWait when SetBurstWait.
	BurstWait    time.Duration
	SetBurstWait bool
	// Sets, when positive, draws one request for each Sets consecutive
	// pods; with Gang they form a gang (a PodGroup of minMember Sets each),
	// without it they are the same pods placed one by one.
	Sets int
	Gang bool
	// DRAPercent is the share of the nodes, in percent, that run HAMi's
	// DRA driver instead of HAMi's device plugin during the phase
	// (setNodeKinds); 0: every node a device-plugin node.
	DRAPercent int
	// HAMiDRA sends the pods through the model of HAMi-DRA's webhook
	// (internal/localcluster/hamidra): each container's nvidia.com/gpu,
	// gpumem and gpucores become a ResourceClaim at admission, and
	// kube-scheduler's default profile in the same scheduler process
	// allocates it with its own DynamicResources. Without it the pods are
	// HAMi's as its webhook writes them, placed by hami-scheduler's
	// profile.
	HAMiDRA bool
}

// String is "binpack" (the shipped queue bounds), "binpack/q2" with
// nodeQueueLimit 2 and no nodeQueueWait ("binpack/q0": no bound, HAMi's
// order), "binpack/w4s" with nodeQueueWait 4s, or both ("binpack/q10/w4s"),
// "binpack/b10s" with burstQueueWait 10s;
// "/g4" makes the pods gangs of 4 (a scheduler-plugins PodGroup each, its
// members asking the same), "/s4" the same pods without gangs; "/dra50"
// runs half the nodes as DRA nodes, "/dra100/hami-dra" all of them, the
// pods taking HAMi-DRA's route.
func (s Setting) String() string {
	out := string(s.Policy)
	if s.SetQueueLimit {
		out += fmt.Sprintf("/q%d", s.QueueLimit)
	}
	if s.SetQueueWait {
		out += "/w" + s.QueueWait.String()
	}
	if s.SetBurstWait {
		out += "/b" + s.BurstWait.String()
	}
	if s.Sets > 0 {
		kind := "s"
		if s.Gang {
			kind = "g"
		}
		out += fmt.Sprintf("/%s%d", kind, s.Sets)
	}
	if s.DRAPercent > 0 {
		out += fmt.Sprintf("/dra%d", s.DRAPercent)
	}
	if s.HAMiDRA {
		out += "/" + hamiDRARoute
	}
	return out
}

// ParseSetting reads a Setting as String writes it.
func ParseSetting(s string) (Setting, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	out := Setting{Policy: devices.NodePolicy(parts[0])}
	if out.Policy != devices.NodeBinpack && out.Policy != devices.NodeSpread {
		return Setting{}, fmt.Errorf("setting %q: policy %q: want binpack or spread", s, parts[0])
	}
	for _, part := range parts[1:] {
		switch {
		case strings.HasPrefix(part, "q") && !out.SetQueueLimit:
			n, err := strconv.ParseInt(part[1:], 10, 32)
			if err != nil || n < 0 {
				return Setting{}, fmt.Errorf("setting %q: queue limit %q: want a number, 0 for none", s, part[1:])
			}
			out.QueueLimit, out.SetQueueLimit = int32(n), true
		case strings.HasPrefix(part, "w") && !out.SetQueueWait:
			d, err := time.ParseDuration(part[1:])
			if err != nil || d < 0 {
				return Setting{}, fmt.Errorf("setting %q: queue wait %q: want a duration, 0s for none", s, part[1:])
			}
			out.QueueWait, out.SetQueueWait = d, true
		case strings.HasPrefix(part, "b") && !out.SetBurstWait:
			d, err := time.ParseDuration(part[1:])
			if err != nil || d < 0 {
				return Setting{}, fmt.Errorf("setting %q: burst queue wait %q: want a duration, 0s for none", s, part[1:])
			}
			out.BurstWait, out.SetBurstWait = d, true
		case (strings.HasPrefix(part, "g") || strings.HasPrefix(part, "s")) && out.Sets == 0:
			n, err := strconv.Atoi(part[1:])
			if err != nil || n < 1 {
				return Setting{}, fmt.Errorf("setting %q: %q: want a group size of at least 1", s, part)
			}
			out.Sets, out.Gang = n, part[0] == 'g'
		case strings.HasPrefix(part, "dra") && out.DRAPercent == 0:
			n, err := strconv.Atoi(part[3:])
			if err != nil || n < 1 || n > 100 {
				return Setting{}, fmt.Errorf("setting %q: %q: want the DRA nodes' share in percent, 1 to 100", s, part)
			}
			out.DRAPercent = n
		case part == hamiDRARoute && !out.HAMiDRA:
			out.HAMiDRA = true
		default:
			return Setting{}, fmt.Errorf("setting %q: %q: want /qN (nodeQueueLimit), /wD (nodeQueueWait), /bD (burstQueueWait), /gN or /sN (gangs, or sets, of N), /draN (N%% DRA nodes), /%s (HAMi-DRA's route), each at most once", s, part, hamiDRARoute)
		}
	}
	if out.HAMiDRA && (out.DRAPercent == 0 || out.Sets > 0) {
		return Setting{}, fmt.Errorf("setting %q: HAMi-DRA's route needs DRA nodes (/draN) and takes no gangs or sets", s)
	}
	return out, nil
}

// hamiDRARoute is the setting's word for HAMi-DRA's route.
const hamiDRARoute = "hami-dra"

// args are the plugin args of the setting; everything else keeps the
// shipped defaults.
func (s Setting) args() *hamiv1.HAMiArgs {
	args := &hamiv1.HAMiArgs{
		NodeSchedulerPolicy: ptr.To(string(s.Policy)),
		GPUSchedulerPolicy:  ptr.To(string(s.Policy)),
	}
	if s.SetQueueLimit {
		args.NodeQueueLimit = ptr.To(s.QueueLimit)
		args.NodeQueueWait = &metav1.Duration{}
	}
	if s.SetQueueWait {
		args.NodeQueueWait = &metav1.Duration{Duration: s.QueueWait}
	}
	if s.SetBurstWait {
		args.BurstQueueWait = &metav1.Duration{Duration: s.BurstWait}
	}
	return args
}
