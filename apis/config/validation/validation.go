// Package validation checks the HAMi plugin's args once defaults are
// applied, returning every problem with its field path.
package validation

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
)

var policies = []string{config.PolicyBinpack, config.PolicySpread}

// ValidateHAMiArgs reports every setting the plugin cannot work with.
// knownVendors are the vendor names this build implements. path is where
// the args sit in the configuration (nil for the args alone).
func ValidateHAMiArgs(path *field.Path, args *config.HAMiArgs, knownVendors []string) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(policies, args.NodeSchedulerPolicy) {
		errs = append(errs, field.NotSupported(path.Child("nodeSchedulerPolicy"), args.NodeSchedulerPolicy, policies))
	}
	if !slices.Contains(policies, args.GPUSchedulerPolicy) {
		errs = append(errs, field.NotSupported(path.Child("gpuSchedulerPolicy"), args.GPUSchedulerPolicy, policies))
	}
	errs = append(errs, validateNodeLockExpiry(path.Child("nodeLockExpiry"), args)...)
	if args.NodeLockWait.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("nodeLockWait"), args.NodeLockWait.Duration.String(), "must not be negative"))
	}
	if args.NodeQueueLimit < 0 {
		errs = append(errs, field.Invalid(path.Child("nodeQueueLimit"), args.NodeQueueLimit, "must not be negative (0: no limit)"))
	}
	if args.NodeQueueWait.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("nodeQueueWait"), args.NodeQueueWait.Duration.String(), "must not be negative (0: the count limit alone)"))
	}
	if args.BurstQueueWait.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("burstQueueWait"), args.BurstQueueWait.Duration.String(), "must not be negative (0: no bound, bursts pack as in HAMi's order)"))
	}
	if args.CandidateNodes < 0 {
		errs = append(errs, field.Invalid(path.Child("candidateNodes"), args.CandidateNodes, "must not be negative (0: every node)"))
	}
	if args.DeviceConfigFile != "" && len(args.Vendors) > 0 {
		errs = append(errs, field.Forbidden(path.Child("vendors"), "must be empty when deviceConfigFile is set: the device config file defines the vendors"))
	}
	if args.EnableAscend && args.DeviceConfigFile == "" {
		errs = append(errs, field.Forbidden(path.Child("enableAscend"), "needs deviceConfigFile: Ascend chips are configured by its vnpus.configs"))
	}
	if args.EnableIluvatar && args.DeviceConfigFile == "" {
		errs = append(errs, field.Forbidden(path.Child("enableIluvatar"), "needs deviceConfigFile: Iluvatar chips are configured by its iluvatars list"))
	}
	seen := map[string]bool{}
	for i := range args.Vendors {
		errs = append(errs, validateVendor(path.Child("vendors").Index(i), &args.Vendors[i], knownVendors, seen)...)
	}
	return errs
}

func validateNodeLockExpiry(path *field.Path, args *config.HAMiArgs) field.ErrorList {
	if args.NodeLockExpiry.Duration > 0 {
		return nil
	}
	if env, ok := os.LookupEnv(configv1.NodeLockExpiryEnv); ok && args.NodeLockExpiry.Duration == 0 {
		return field.ErrorList{field.Invalid(path, env,
			fmt.Sprintf("unset, and its default from %s is not a positive Go duration such as 5m", configv1.NodeLockExpiryEnv))}
	}
	return field.ErrorList{field.Invalid(path, args.NodeLockExpiry.Duration.String(), "must be positive")}
}

func validateVendor(path *field.Path, v *config.VendorArgs, known []string, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	name := strings.ToLower(v.Name)
	switch {
	case v.Name == "":
		errs = append(errs, field.Required(path.Child("name"), "the vendor to enable, one of: "+strings.Join(known, ", ")))
	case !slices.Contains(known, name):
		errs = append(errs, field.NotSupported(path.Child("name"), v.Name, known))
	case seen[name]:
		errs = append(errs, field.Duplicate(path.Child("name"), v.Name))
	}
	seen[name] = true
	for _, r := range []struct {
		field, value string
	}{
		{"resourceCountName", v.ResourceCountName},
		{"resourceMemoryName", v.ResourceMemoryName},
		{"resourceMemoryPercentageName", v.ResourceMemoryPercentageName},
		{"resourceCoresName", v.ResourceCoresName},
		{"resourcePriorityName", v.ResourcePriorityName},
	} {
		if r.value == "" {
			continue
		}
		for _, msg := range validation.IsQualifiedName(r.value) {
			errs = append(errs, field.Invalid(path.Child(r.field), r.value, msg))
		}
	}
	if v.DefaultMemoryMiB < 0 {
		errs = append(errs, field.Invalid(path.Child("defaultMemoryMiB"), v.DefaultMemoryMiB, "must not be negative"))
	}
	if v.DefaultCores < 0 || v.DefaultCores > 100 {
		errs = append(errs, field.Invalid(path.Child("defaultCores"), v.DefaultCores, "must be between 0 and 100"))
	}
	if v.DefaultCount != nil && *v.DefaultCount < 0 {
		errs = append(errs, field.Invalid(path.Child("defaultCount"), *v.DefaultCount, "must not be negative"))
	}
	if v.MemoryFactor < 0 {
		errs = append(errs, field.Invalid(path.Child("memoryFactor"), v.MemoryFactor, "must not be negative"))
	}
	return errs
}

// ValidateCoschedulingArgs reports every setting the Coscheduling plugin
// cannot work with, as scheduler-plugins' validation does: no negative
// time, a percentage between 0 and 100.
func ValidateCoschedulingArgs(path *field.Path, args *config.CoschedulingArgs) field.ErrorList {
	var errs field.ErrorList
	if args.PermitWaitingTimeSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("permitWaitingTimeSeconds"), args.PermitWaitingTimeSeconds, "must not be negative"))
	}
	if args.PodGroupBackoffSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("podGroupBackoffSeconds"), args.PodGroupBackoffSeconds, "must not be negative (0: no backoff)"))
	}
	if args.PodGroupRejectPercentage < 0 || args.PodGroupRejectPercentage > 100 {
		errs = append(errs, field.Invalid(path.Child("podGroupRejectPercentage"), args.PodGroupRejectPercentage, "must be between 0 and 100"))
	}
	return errs
}
