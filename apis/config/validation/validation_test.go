package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
)

var known = []string{"nvidia"}

// valid is defaulted args with every vendor setting given.
func valid() *config.HAMiArgs {
	return &config.HAMiArgs{
		NodeSchedulerPolicy: config.PolicyBinpack,
		GPUSchedulerPolicy:  config.PolicySpread,
		NodeLockExpiry:      metav1.Duration{Duration: 5 * time.Minute},
		NodeLockWait:        metav1.Duration{Duration: 30 * time.Second},
		Vendors: []config.VendorArgs{{
			Name:                         "nvidia",
			ResourceCountName:            "nvidia.com/gpu",
			ResourceMemoryName:           "nvidia.com/gpumem",
			ResourceMemoryPercentageName: "nvidia.com/gpumem-percentage",
			ResourceCoresName:            "nvidia.com/gpucores",
			ResourcePriorityName:         "nvidia.com/priority",
			DefaultMemoryMiB:             1024,
			DefaultCores:                 10,
			DefaultCount:                 ptr.To[int32](1),
			MemoryFactor:                 1,
		}},
	}
}

// TestValidateHAMiArgs changes one setting per row and wants exactly the
// listed errors ("<type> <field path>").
func TestValidateHAMiArgs(t *testing.T) {
	const badName = "not a name!"
	tests := []struct {
		name   string
		mutate func(a *config.HAMiArgs)
		want   []string
	}{
		{"valid", func(*config.HAMiArgs) {}, nil},
		{"spread nodes, binpack cards", func(a *config.HAMiArgs) {
			a.NodeSchedulerPolicy, a.GPUSchedulerPolicy = config.PolicySpread, config.PolicyBinpack
		}, nil},
		{"nodeSchedulerPolicy", func(a *config.HAMiArgs) { a.NodeSchedulerPolicy = "fastest" }, []string{"FieldValueNotSupported nodeSchedulerPolicy"}},
		{"nodeSchedulerPolicy is case-sensitive", func(a *config.HAMiArgs) { a.NodeSchedulerPolicy = "Binpack" }, []string{"FieldValueNotSupported nodeSchedulerPolicy"}},
		{"gpuSchedulerPolicy", func(a *config.HAMiArgs) { a.GPUSchedulerPolicy = "" }, []string{"FieldValueNotSupported gpuSchedulerPolicy"}},
		{"nodeLockExpiry zero", func(a *config.HAMiArgs) { a.NodeLockExpiry.Duration = 0 }, []string{"FieldValueInvalid nodeLockExpiry"}},
		{"nodeLockExpiry negative", func(a *config.HAMiArgs) { a.NodeLockExpiry.Duration = -time.Second }, []string{"FieldValueInvalid nodeLockExpiry"}},
		{"nodeLockWait negative", func(a *config.HAMiArgs) { a.NodeLockWait.Duration = -time.Second }, []string{"FieldValueInvalid nodeLockWait"}},
		{"nodeLockWait zero (fail at once)", func(a *config.HAMiArgs) { a.NodeLockWait.Duration = 0 }, nil},
		{"nodeQueueLimit negative", func(a *config.HAMiArgs) { a.NodeQueueLimit = -1 }, []string{"FieldValueInvalid nodeQueueLimit"}},
		{"nodeQueueLimit 1", func(a *config.HAMiArgs) { a.NodeQueueLimit = 1 }, nil},
		{"candidateNodes negative", func(a *config.HAMiArgs) { a.CandidateNodes = -1 }, []string{"FieldValueInvalid candidateNodes"}},
		{"nodeQueueWait negative", func(a *config.HAMiArgs) { a.NodeQueueWait.Duration = -time.Second }, []string{"FieldValueInvalid nodeQueueWait"}},
		{"nodeQueueWait zero (the count alone)", func(a *config.HAMiArgs) { a.NodeQueueWait.Duration = 0 }, nil},
		{"burstQueueWait negative", func(a *config.HAMiArgs) { a.BurstQueueWait.Duration = -time.Second }, []string{"FieldValueInvalid burstQueueWait"}},
		{"burstQueueWait 10s", func(a *config.HAMiArgs) { a.BurstQueueWait.Duration = 10 * time.Second }, nil},
		{"deviceConfigFile alone", func(a *config.HAMiArgs) { a.DeviceConfigFile, a.Vendors = "/config/device-config.yaml", nil }, nil},
		{"deviceConfigFile with vendors", func(a *config.HAMiArgs) { a.DeviceConfigFile = "/config/device-config.yaml" }, []string{"FieldValueForbidden vendors"}},
		{"enableAscend with deviceConfigFile", func(a *config.HAMiArgs) {
			a.DeviceConfigFile, a.Vendors, a.EnableAscend = "/config/device-config.yaml", nil, true
		}, nil},
		{"enableAscend without deviceConfigFile", func(a *config.HAMiArgs) { a.EnableAscend = true }, []string{"FieldValueForbidden enableAscend"}},
		{"enableIluvatar without deviceConfigFile", func(a *config.HAMiArgs) { a.EnableIluvatar = true }, []string{"FieldValueForbidden enableIluvatar"}},
		{"no vendors at all (left to the vendor resolution)", func(a *config.HAMiArgs) { a.Vendors = nil }, nil},
		{"vendors[].name required", func(a *config.HAMiArgs) { a.Vendors[0].Name = "" }, []string{"FieldValueRequired vendors[0].name"}},
		{"vendors[].name unknown", func(a *config.HAMiArgs) { a.Vendors[0].Name = "hygon" }, []string{"FieldValueNotSupported vendors[0].name"}},
		{"vendors[].name case-insensitive", func(a *config.HAMiArgs) { a.Vendors[0].Name = "NVIDIA" }, nil},
		{"vendors[].name duplicate", func(a *config.HAMiArgs) {
			a.Vendors = append(a.Vendors, config.VendorArgs{Name: "Nvidia"})
		}, []string{"FieldValueDuplicate vendors[1].name"}},
		{"vendors[].resourceCountName", func(a *config.HAMiArgs) { a.Vendors[0].ResourceCountName = badName }, []string{"FieldValueInvalid vendors[0].resourceCountName"}},
		{"vendors[].resourceMemoryName", func(a *config.HAMiArgs) { a.Vendors[0].ResourceMemoryName = badName }, []string{"FieldValueInvalid vendors[0].resourceMemoryName"}},
		{"vendors[].resourceMemoryPercentageName", func(a *config.HAMiArgs) { a.Vendors[0].ResourceMemoryPercentageName = badName }, []string{"FieldValueInvalid vendors[0].resourceMemoryPercentageName"}},
		{"vendors[].resourceCoresName", func(a *config.HAMiArgs) { a.Vendors[0].ResourceCoresName = badName }, []string{"FieldValueInvalid vendors[0].resourceCoresName"}},
		{"vendors[].resourcePriorityName", func(a *config.HAMiArgs) { a.Vendors[0].ResourcePriorityName = badName }, []string{"FieldValueInvalid vendors[0].resourcePriorityName"}},
		{"empty resource names take the vendor's", func(a *config.HAMiArgs) { a.Vendors[0] = config.VendorArgs{Name: "nvidia"} }, nil},
		{"vendors[].defaultMemoryMiB", func(a *config.HAMiArgs) { a.Vendors[0].DefaultMemoryMiB = -1 }, []string{"FieldValueInvalid vendors[0].defaultMemoryMiB"}},
		{"vendors[].defaultCores below 0", func(a *config.HAMiArgs) { a.Vendors[0].DefaultCores = -1 }, []string{"FieldValueInvalid vendors[0].defaultCores"}},
		{"vendors[].defaultCores above 100", func(a *config.HAMiArgs) { a.Vendors[0].DefaultCores = 101 }, []string{"FieldValueInvalid vendors[0].defaultCores"}},
		{"vendors[].defaultCores 100", func(a *config.HAMiArgs) { a.Vendors[0].DefaultCores = 100 }, nil},
		{"vendors[].defaultCount", func(a *config.HAMiArgs) { a.Vendors[0].DefaultCount = ptr.To[int32](-1) }, []string{"FieldValueInvalid vendors[0].defaultCount"}},
		{"vendors[].defaultCount 0 (add none)", func(a *config.HAMiArgs) { a.Vendors[0].DefaultCount = ptr.To[int32](0) }, nil},
		{"vendors[].memoryFactor", func(a *config.HAMiArgs) { a.Vendors[0].MemoryFactor = -1 }, []string{"FieldValueInvalid vendors[0].memoryFactor"}},
		{"every error is reported", func(a *config.HAMiArgs) {
			a.NodeSchedulerPolicy = "fastest"
			a.NodeLockWait.Duration = -time.Second
			a.Vendors = append(a.Vendors, config.VendorArgs{Name: "nvidia", DefaultCores: 200})
		}, []string{
			"FieldValueNotSupported nodeSchedulerPolicy",
			"FieldValueInvalid nodeLockWait",
			"FieldValueDuplicate vendors[1].name",
			"FieldValueInvalid vendors[1].defaultCores",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := valid()
			tt.mutate(a)
			var got []string
			for _, e := range ValidateHAMiArgs(nil, a, known) {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ValidateHAMiArgs() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateHAMiArgsPath: errors sit under the path the args have in the
// configuration, and read as kube-scheduler's own do.
func TestValidateHAMiArgsPath(t *testing.T) {
	a := valid()
	a.NodeSchedulerPolicy = "fastest"
	a.Vendors[0].DefaultCores = 101
	path := field.NewPath("profiles").Index(0).Child("pluginConfig").Index(1).Child("args")
	var got []string
	for _, e := range ValidateHAMiArgs(path, a, known) {
		got = append(got, e.Error())
	}
	want := []string{
		`profiles[0].pluginConfig[1].args.nodeSchedulerPolicy: Unsupported value: "fastest": supported values: "binpack", "spread"`,
		`profiles[0].pluginConfig[1].args.vendors[0].defaultCores: Invalid value: 101: must be between 0 and 100`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestValidateNodeLockExpiryEnv: a bad HAMI_NODELOCK_EXPIRE leaves the
// expiry unset (see the defaults), and the error names the variable.
func TestValidateNodeLockExpiryEnv(t *testing.T) {
	tests := []struct {
		name     string
		env      string
		expiry   time.Duration
		wantErr  bool
		wantText []string
	}{
		{"env unparsable, expiry unset", "soon", 0, true, []string{`Invalid value: "soon"`, configv1.NodeLockExpiryEnv}},
		{"env set, explicit negative expiry", "2m", -time.Minute, true, []string{`Invalid value: "-1m0s"`, "must be positive"}},
		{"env set, expiry given", "soon", time.Minute, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(configv1.NodeLockExpiryEnv, tt.env)
			a := valid()
			a.NodeLockExpiry.Duration = tt.expiry
			errs := ValidateHAMiArgs(nil, a, known)
			if !tt.wantErr {
				if len(errs) != 0 {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != "nodeLockExpiry" {
				t.Fatalf("errors %v, want one on nodeLockExpiry", errs)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(errs[0].Error(), s) {
					t.Errorf("error %q does not contain %q", errs[0].Error(), s)
				}
			}
		})
	}
}

// TestValidateCoschedulingArgs changes one setting per row of defaulted
// args and wants exactly the listed errors ("<type> <field path>").
func TestValidateCoschedulingArgs(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(a *config.CoschedulingArgs)
		want   []string
	}{
		{"defaults", func(*config.CoschedulingArgs) {}, nil},
		{"no wait", func(a *config.CoschedulingArgs) { a.PermitWaitingTimeSeconds = 0 }, nil},
		{"negative wait", func(a *config.CoschedulingArgs) { a.PermitWaitingTimeSeconds = -1 }, []string{"FieldValueInvalid args.permitWaitingTimeSeconds"}},
		{"negative backoff", func(a *config.CoschedulingArgs) { a.PodGroupBackoffSeconds = -5 }, []string{"FieldValueInvalid args.podGroupBackoffSeconds"}},
		{"percentage 0", func(a *config.CoschedulingArgs) { a.PodGroupRejectPercentage = 0 }, nil},
		{"percentage 100", func(a *config.CoschedulingArgs) { a.PodGroupRejectPercentage = 100 }, nil},
		{"percentage 101", func(a *config.CoschedulingArgs) { a.PodGroupRejectPercentage = 101 }, []string{"FieldValueInvalid args.podGroupRejectPercentage"}},
		{"percentage -1", func(a *config.CoschedulingArgs) { a.PodGroupRejectPercentage = -1 }, []string{"FieldValueInvalid args.podGroupRejectPercentage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &configv1.CoschedulingArgs{}
			configv1.SetDefaults_CoschedulingArgs(v)
			a := &config.CoschedulingArgs{
				PermitWaitingTimeSeconds: *v.PermitWaitingTimeSeconds,
				PodGroupBackoffSeconds:   *v.PodGroupBackoffSeconds,
				PodGroupRejectPercentage: *v.PodGroupRejectPercentage,
				UpdatePodGroupStatus:     *v.UpdatePodGroupStatus,
			}
			tt.mutate(a)
			var got []string
			for _, err := range ValidateCoschedulingArgs(field.NewPath("args"), a) {
				got = append(got, string(err.Type)+" "+err.Field)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
