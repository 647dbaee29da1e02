package scheme_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedconfigv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/apis/config/scheme"
	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
)

// schedulerConfig is a KubeSchedulerConfiguration file with one profile
// that enables HAMi; args, when not empty, is the HAMi pluginConfig's args
// block, indented under "args:".
func schedulerConfig(args string) []byte {
	s := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: hami-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: HAMi
`
	if args != "" {
		s += "  pluginConfig:\n  - name: HAMi\n    args:\n"
		for line := range strings.SplitSeq(strings.TrimRight(args, "\n"), "\n") {
			s += "      " + line + "\n"
		}
	}
	return []byte(s)
}

// decode loads a configuration file as kube-scheduler does
// (cmd/kube-scheduler/app/options loadConfig).
func decode(data []byte) (*schedconfig.KubeSchedulerConfiguration, error) {
	obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	return obj.(*schedconfig.KubeSchedulerConfiguration), nil
}

// hamiArgs returns the HAMi args of the first profile.
func hamiArgs(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration) *config.HAMiArgs {
	t.Helper()
	var found *config.HAMiArgs
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name != "HAMi" {
			continue
		}
		if found != nil {
			t.Fatal("two HAMi pluginConfigs")
		}
		a, ok := pc.Args.(*config.HAMiArgs)
		if !ok {
			t.Fatalf("HAMi args decoded to %T, want *config.HAMiArgs", pc.Args)
		}
		found = a
	}
	if found == nil {
		t.Fatal("no HAMi pluginConfig")
	}
	return found
}

func defaults() *config.HAMiArgs {
	return &config.HAMiArgs{
		NodeSchedulerPolicy: "binpack",
		GPUSchedulerPolicy:  "spread",
		NodeLockExpiry:      metav1.Duration{Duration: 5 * time.Minute},
		NodeLockWait:        metav1.Duration{Duration: 30 * time.Second},
		NodeQueueLimit:      0,
		NodeQueueWait:       metav1.Duration{Duration: 2 * time.Second},
		BurstQueueWait:      metav1.Duration{},
		CandidateNodes:      100,
		DeviceConfigFile:    "",
		Vendors:             []config.VendorArgs{{Name: "nvidia", DefaultCount: ptr.To[int32](1)}},
	}
}

// TestDecodeStrict: the file decodes strictly, and a misspelt HAMi
// setting fails the decoding with its name.
func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name string
		args string
		want []string
	}{
		{"misspelt setting", "nodeSchedulerPolcy: spread\n", []string{`unknown field "nodeSchedulerPolcy"`, "decoding args for plugin HAMi"}},
		{"misspelt vendor setting", "vendors:\n- name: nvidia\n  defaultCore: 10\n", []string{`unknown field "vendors[0].defaultCore"`}},
		{"HAMi's own name for a setting", "vendors:\n- name: nvidia\n  resourceCoreName: nvidia.com/gpucores\n", []string{`unknown field "vendors[0].resourceCoreName"`}},
		{"every unknown field", "nodeLockExpiy: 1m\ngpuPolicy: binpack\n", []string{`unknown field "nodeLockExpiy"`, `unknown field "gpuPolicy"`}},
		{"duplicate setting", "nodeSchedulerPolicy: spread\nnodeSchedulerPolicy: binpack\n", []string{`key "nodeSchedulerPolicy" already set`}},
		{"wrong type", "nodeLockExpiry: soon\n", []string{"decoding args for plugin HAMi", "soon"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode(schedulerConfig(tt.args))
			if err == nil {
				t.Fatal("decoding succeeded, want an error")
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

// TestDecodeDefaults: the decoded args are internal and defaulted, what
// the file says kept.
func TestDecodeDefaults(t *testing.T) {
	tests := []struct {
		name string
		args string
		want func(a *config.HAMiArgs)
	}{
		{"HAMi enabled, no pluginConfig", "", func(*config.HAMiArgs) {}},
		{"empty args", "{}\n", func(*config.HAMiArgs) {}},
		{"every setting given", `nodeSchedulerPolicy: spread
gpuSchedulerPolicy: binpack
nodeLockExpiry: 90s
nodeLockWait: 0s
vendors:
- name: nvidia
  resourceCountName: example.com/gpu
  resourceMemoryName: example.com/gpumem
  resourceMemoryPercentageName: example.com/gpumem-percentage
  resourceCoresName: example.com/gpucores
  resourcePriorityName: example.com/priority
  defaultMemoryMiB: 2048
  defaultCores: 20
  defaultCount: 0
  memoryFactor: 2
`, func(a *config.HAMiArgs) {
			a.NodeSchedulerPolicy, a.GPUSchedulerPolicy = "spread", "binpack"
			a.NodeLockExpiry.Duration, a.NodeLockWait.Duration = 90*time.Second, 0
			a.Vendors = []config.VendorArgs{{
				Name:                         "nvidia",
				ResourceCountName:            "example.com/gpu",
				ResourceMemoryName:           "example.com/gpumem",
				ResourceMemoryPercentageName: "example.com/gpumem-percentage",
				ResourceCoresName:            "example.com/gpucores",
				ResourcePriorityName:         "example.com/priority",
				DefaultMemoryMiB:             2048,
				DefaultCores:                 20,
				DefaultCount:                 ptr.To[int32](0),
				MemoryFactor:                 2,
			}}
		}},
		{"a vendor's card count defaults to 1", "vendors:\n- name: nvidia\n  defaultCores: 30\n", func(a *config.HAMiArgs) {
			a.Vendors = []config.VendorArgs{{Name: "nvidia", DefaultCores: 30, DefaultCount: ptr.To[int32](1)}}
		}},
		{"deviceConfigFile replaces the default vendors", "deviceConfigFile: /config/device-config.yaml\n", func(a *config.HAMiArgs) {
			a.DeviceConfigFile, a.Vendors = "/config/device-config.yaml", nil
		}},
		{"enableAscend", "deviceConfigFile: /config/device-config.yaml\nenableAscend: true\n", func(a *config.HAMiArgs) {
			a.DeviceConfigFile, a.Vendors, a.EnableAscend = "/config/device-config.yaml", nil, true
		}},
		{"enableIluvatar", "deviceConfigFile: /config/device-config.yaml\nenableIluvatar: true\n", func(a *config.HAMiArgs) {
			a.DeviceConfigFile, a.Vendors, a.EnableIluvatar = "/config/device-config.yaml", nil, true
		}},
		{"values are not validated here", "nodeSchedulerPolicy: fastest\n", func(a *config.HAMiArgs) {
			a.NodeSchedulerPolicy = "fastest"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := decode(schedulerConfig(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(want)
			if diff := cmp.Diff(want, hamiArgs(t, cfg)); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNodeLockExpiryEnv: HAMI_NODELOCK_EXPIRE is the default of
// nodeLockExpiry, never an override.
func TestNodeLockExpiryEnv(t *testing.T) {
	tests := []struct {
		name string
		env  *string
		args string
		want time.Duration
	}{
		{"unset", nil, "", 5 * time.Minute},
		{"empty", ptr.To(""), "", 5 * time.Minute},
		{"set, no nodeLockExpiry", ptr.To("2m"), "", 2 * time.Minute},
		{"set, nodeLockExpiry given", ptr.To("2m"), "nodeLockExpiry: 7m\n", 7 * time.Minute},
		{"unparsable: left unset for validation to report", ptr.To("soon"), "", 0},
		{"unparsable but nodeLockExpiry given", ptr.To("soon"), "nodeLockExpiry: 7m\n", 7 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != nil {
				t.Setenv(configv1.NodeLockExpiryEnv, *tt.env)
			} else {
				t.Setenv(configv1.NodeLockExpiryEnv, "")
				// t.Setenv restores the variable; unset it for the test.
				unsetenv(t, configv1.NodeLockExpiryEnv)
			}
			cfg, err := decode(schedulerConfig(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if got := hamiArgs(t, cfg).NodeLockExpiry.Duration; got != tt.want {
				t.Errorf("nodeLockExpiry = %v, want %v", got, tt.want)
			}
		})
	}
}

// encode writes the configuration back as kube-scheduler's
// --write-config-to does (cmd/kube-scheduler/app/options encodeConfig).
func encode(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration) string {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(schedscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeYAML)
	if !ok {
		t.Fatal("no YAML serializer")
	}
	var buf bytes.Buffer
	if err := schedscheme.Codecs.EncoderForVersion(info.Serializer, schedconfigv1.SchemeGroupVersion).Encode(cfg, &buf); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return buf.String()
}

// TestWriteConfig: the written configuration shows the HAMi args with
// every default, and reads back to the same args.
func TestWriteConfig(t *testing.T) {
	tests := []struct {
		name string
		env  string
		args string
		want string
	}{{
		name: "defaults",
		want: `  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      burstQueueWait: 0s
      candidateNodes: 100
      deviceConfigFile: ""
      enableAscend: false
      enableIluvatar: false
      gpuSchedulerPolicy: spread
      kind: HAMiArgs
      nodeLockExpiry: 5m0s
      nodeLockWait: 30s
      nodeQueueLimit: 0
      nodeQueueWait: 2s
      nodeSchedulerPolicy: binpack
      successEvents: false
      vendors:
      - defaultCount: 1
        name: nvidia
    name: HAMi
`,
	}, {
		name: "settings and the env default",
		env:  "90s",
		args: "nodeSchedulerPolicy: spread\ndeviceConfigFile: /config/device-config.yaml\n",
		want: `  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      burstQueueWait: 0s
      candidateNodes: 100
      deviceConfigFile: /config/device-config.yaml
      enableAscend: false
      enableIluvatar: false
      gpuSchedulerPolicy: spread
      kind: HAMiArgs
      nodeLockExpiry: 1m30s
      nodeLockWait: 30s
      nodeQueueLimit: 0
      nodeQueueWait: 2s
      nodeSchedulerPolicy: spread
      successEvents: false
    name: HAMi
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(configv1.NodeLockExpiryEnv, tt.env)
			cfg, err := decode(schedulerConfig(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			want := hamiArgs(t, cfg).DeepCopy()
			out := encode(t, cfg)
			if !strings.Contains(out, tt.want) {
				t.Errorf("written config lacks\n%s\ngot:\n%s", tt.want, out)
			}
			// Read back without the variable: the file alone says it all.
			t.Setenv(configv1.NodeLockExpiryEnv, "")
			again, err := decode([]byte(out))
			if err != nil {
				t.Fatalf("written config does not decode: %v\n%s", err, out)
			}
			if diff := cmp.Diff(want, hamiArgs(t, again)); diff != "" {
				t.Errorf("args read back (-want +got):\n%s", diff)
			}
		})
	}
}

// TestArgsFrom covers what the framework may hand the plugin's factory.
func TestArgsFrom(t *testing.T) {
	internal := defaults()
	internal.NodeSchedulerPolicy = "spread"
	tests := []struct {
		name    string
		obj     runtime.Object
		want    func(a *config.HAMiArgs)
		wantErr string
	}{
		{"nil", nil, func(*config.HAMiArgs) {}, ""},
		{"nil internal", (*config.HAMiArgs)(nil), func(*config.HAMiArgs) {}, ""},
		{"nil v1", (*configv1.HAMiArgs)(nil), func(*config.HAMiArgs) {}, ""},
		{"internal, as is", internal, func(a *config.HAMiArgs) { a.NodeSchedulerPolicy = "spread" }, ""},
		{"v1, defaulted", &configv1.HAMiArgs{GPUSchedulerPolicy: ptr.To("binpack"), Vendors: []configv1.VendorArgs{{Name: "nvidia", DefaultCores: 5}}}, func(a *config.HAMiArgs) {
			a.GPUSchedulerPolicy = "binpack"
			a.Vendors = []config.VendorArgs{{Name: "nvidia", DefaultCores: 5, DefaultCount: ptr.To[int32](1)}}
		}, ""},
		{"raw JSON", &runtime.Unknown{Raw: []byte(`{"nodeLockWait":"5s"}`)}, func(a *config.HAMiArgs) { a.NodeLockWait.Duration = 5 * time.Second }, ""},
		{"raw JSON with its kind", &runtime.Unknown{Raw: []byte(`{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"HAMiArgs","nodeLockWait":"5s"}`)}, func(a *config.HAMiArgs) { a.NodeLockWait.Duration = 5 * time.Second }, ""},
		{"empty raw", &runtime.Unknown{}, func(*config.HAMiArgs) {}, ""},
		{"raw JSON, misspelt", &runtime.Unknown{Raw: []byte(`{"nodeLockWiat":"5s"}`)}, nil, `unknown field "nodeLockWiat"`},
		{"another plugin's args", &schedconfig.NodeResourcesFitArgs{}, nil, "args of type *config.NodeResourcesFitArgs, want HAMiArgs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(configv1.NodeLockExpiryEnv, "")
			got, err := scheme.ArgsFrom(tt.obj)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ArgsFrom() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ArgsFrom(): %v", err)
			}
			want := defaults()
			tt.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ArgsFrom() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestArgsFromLeavesV1Alone: defaulting works on a copy.
func TestArgsFromLeavesV1Alone(t *testing.T) {
	in := &configv1.HAMiArgs{}
	if _, err := scheme.ArgsFrom(in); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&configv1.HAMiArgs{}, in); diff != "" {
		t.Errorf("ArgsFrom changed its argument (-before +after):\n%s", diff)
	}
}

// unsetenv removes a variable for the rest of the test; call t.Setenv on
// it first, so that it is restored afterwards.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

// HAMiDynamicResources takes kube-scheduler's DynamicResourcesArgs: nil
// or empty is its defaults, raw JSON decodes strictly, typed args pass.
func TestDynamicResourcesArgsFrom(t *testing.T) {
	tenSeconds, tenMinutes := &metav1.Duration{Duration: 10 * time.Second}, &metav1.Duration{Duration: 10 * time.Minute}
	tests := []struct {
		name    string
		obj     runtime.Object
		want    *schedconfig.DynamicResourcesArgs
		wantErr string
	}{
		{name: "nil: defaults", want: &schedconfig.DynamicResourcesArgs{FilterTimeout: tenSeconds, BindingTimeout: tenMinutes}},
		{name: "empty raw: defaults", obj: &runtime.Unknown{}, want: &schedconfig.DynamicResourcesArgs{FilterTimeout: tenSeconds, BindingTimeout: tenMinutes}},
		{name: "raw", obj: &runtime.Unknown{Raw: []byte(`{"filterTimeout":"3s"}`)},
			want: &schedconfig.DynamicResourcesArgs{FilterTimeout: &metav1.Duration{Duration: 3 * time.Second}, BindingTimeout: tenMinutes}},
		{name: "typed", obj: &schedconfig.DynamicResourcesArgs{FilterTimeout: &metav1.Duration{}},
			want: &schedconfig.DynamicResourcesArgs{FilterTimeout: &metav1.Duration{}}},
		{name: "unknown field", obj: &runtime.Unknown{Raw: []byte(`{"filterTimout":"3s"}`)}, wantErr: `unknown field "filterTimout"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := scheme.DynamicResourcesArgsFrom(tt.obj)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}
