package plugins

import (
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
)

// Args configure the plugin through the profile's pluginConfig:
//
//	pluginConfig:
//	- name: HAMi
//	  args:
//	    nodeSchedulerPolicy: binpack
//	    gpuSchedulerPolicy: spread
//	    nodeLockExpiry: 5m
//	    nodeLockWait: 30s
//	    vendors:
//	    - name: nvidia
//	      defaultMemoryMiB: 0
//	      defaultCores: 0
type Args struct {
	// NodeSchedulerPolicy ranks nodes: binpack (default) fills the busiest
	// nodes first, spread the idlest. A pod may override it with the
	// hami.io/node-scheduler-policy annotation.
	NodeSchedulerPolicy devices.NodePolicy `json:"nodeSchedulerPolicy,omitempty"`
	// GPUSchedulerPolicy orders the cards of a node: spread (default) or
	// binpack. A pod may override it with hami.io/gpu-scheduler-policy.
	GPUSchedulerPolicy devices.CardPolicy `json:"gpuSchedulerPolicy,omitempty"`
	// NodeLockExpiry is the age after which a node lock may be taken over
	// (default 5m, or the HAMI_NODELOCK_EXPIRE environment variable).
	NodeLockExpiry metav1.Duration `json:"nodeLockExpiry,omitempty"`
	// NodeLockWait bounds how long PreBind waits for a node locked by
	// another pod before it fails and the pod is retried (default 30s).
	NodeLockWait metav1.Duration `json:"nodeLockWait,omitempty"`
	// Vendors enables device vendors and sets their resource names and
	// defaults (default: nvidia with HAMi's resource names).
	Vendors []devices.Config `json:"vendors,omitempty"`
}

// Defaults for Args.
const (
	DefaultNodeLockExpiry = 5 * time.Minute
	DefaultNodeLockWait   = 30 * time.Second
	nodeLockExpiryEnv     = "HAMI_NODELOCK_EXPIRE"
)

// decodeArgs reads the plugin's args (nil means all defaults), applies the
// defaults and validates the result.
func decodeArgs(obj runtime.Object) (*Args, error) {
	args := &Args{}
	if err := frameworkruntime.DecodeInto(obj, args); err != nil {
		return nil, fmt.Errorf("decode %s args: %w", Name, err)
	}
	if err := args.setDefaults(); err != nil {
		return nil, err
	}
	if err := args.Validate(); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	return args, nil
}

func (a *Args) setDefaults() error {
	if a.NodeSchedulerPolicy == "" {
		a.NodeSchedulerPolicy = devices.NodeBinpack
	}
	if a.GPUSchedulerPolicy == "" {
		a.GPUSchedulerPolicy = devices.CardSpread
	}
	if a.NodeLockExpiry.Duration == 0 {
		a.NodeLockExpiry.Duration = DefaultNodeLockExpiry
		if env := os.Getenv(nodeLockExpiryEnv); env != "" {
			d, err := time.ParseDuration(env)
			if err != nil {
				return fmt.Errorf("%s=%q is not a duration: %w", nodeLockExpiryEnv, env, err)
			}
			a.NodeLockExpiry.Duration = d
		}
	}
	if a.NodeLockWait.Duration == 0 {
		a.NodeLockWait.Duration = DefaultNodeLockWait
	}
	if len(a.Vendors) == 0 {
		a.Vendors = vendors.Default()
	}
	return nil
}

// Validate reports the first setting that cannot work.
func (a *Args) Validate() error {
	switch a.NodeSchedulerPolicy {
	case devices.NodeBinpack, devices.NodeSpread:
	default:
		return fmt.Errorf("nodeSchedulerPolicy %q: want %s or %s", a.NodeSchedulerPolicy, devices.NodeBinpack, devices.NodeSpread)
	}
	switch a.GPUSchedulerPolicy {
	case devices.CardBinpack, devices.CardSpread:
	default:
		return fmt.Errorf("gpuSchedulerPolicy %q: want %s or %s", a.GPUSchedulerPolicy, devices.CardBinpack, devices.CardSpread)
	}
	if a.NodeLockExpiry.Duration <= 0 {
		return fmt.Errorf("nodeLockExpiry %s must be positive", a.NodeLockExpiry.Duration)
	}
	if a.NodeLockWait.Duration < 0 {
		return fmt.Errorf("nodeLockWait %s must not be negative", a.NodeLockWait.Duration)
	}
	for _, v := range a.Vendors {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	return nil
}
