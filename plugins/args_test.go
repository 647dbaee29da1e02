package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
)

// rawArgs encodes versioned args as the framework hands raw pluginConfig.
func rawArgs(t testing.TB, args *configv1.HAMiArgs) runtime.Object {
	t.Helper()
	if args == nil {
		return nil
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

func TestPluginArgs(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		env     string
		check   func(t *testing.T, expiry, wait time.Duration, node, gpu string, vendors int)
		wantErr string
	}{
		{name: "defaults", check: func(t *testing.T, expiry, wait time.Duration, node, gpu string, vendors int) {
			if expiry != 5*time.Minute || wait != 30*time.Second || node != "binpack" || gpu != "spread" || vendors != 1 {
				t.Errorf("defaults: expiry %s wait %s node %s gpu %s vendors %d", expiry, wait, node, gpu, vendors)
			}
		}},
		{name: "explicit values", raw: `{"nodeSchedulerPolicy":"spread","gpuSchedulerPolicy":"binpack","nodeLockExpiry":"2m","nodeLockWait":"0s"}`,
			check: func(t *testing.T, expiry, wait time.Duration, node, gpu string, _ int) {
				if expiry != 2*time.Minute || wait != 0 || node != "spread" || gpu != "binpack" {
					t.Errorf("got expiry %s wait %s node %s gpu %s", expiry, wait, node, gpu)
				}
			}},
		{name: "expiry from HAMI_NODELOCK_EXPIRE", env: "90s", check: func(t *testing.T, expiry, _ time.Duration, _, _ string, _ int) {
			if expiry != 90*time.Second {
				t.Errorf("expiry %s, want 90s from the environment", expiry)
			}
		}},
		{name: "explicit expiry beats HAMI_NODELOCK_EXPIRE", env: "90s", raw: `{"nodeLockExpiry":"3m"}`,
			check: func(t *testing.T, expiry, _ time.Duration, _, _ string, _ int) {
				if expiry != 3*time.Minute {
					t.Errorf("expiry %s, want the explicit 3m", expiry)
				}
			}},
		{name: "bad HAMI_NODELOCK_EXPIRE", env: "soon", wantErr: `nodeLockExpiry: Invalid value: "soon"`},
		{name: "typo is an error", raw: `{"nodeLockExpirey":"1m"}`, wantErr: `unknown field "nodeLockExpirey"`},
		{name: "bad node policy", raw: `{"nodeSchedulerPolicy":"fastest"}`, wantErr: `nodeSchedulerPolicy: Unsupported value: "fastest": supported values: "binpack", "spread"`},
		{name: "bad gpu policy", raw: `{"gpuSchedulerPolicy":"random"}`, wantErr: "gpuSchedulerPolicy: Unsupported value"},
		{name: "negative wait", raw: `{"nodeLockWait":"-1s"}`, wantErr: "nodeLockWait: Invalid value"},
		{name: "bad vendor default", raw: `{"vendors":[{"name":"nvidia","defaultCores":150}]}`, wantErr: "vendors[0].defaultCores: Invalid value: 150"},
		{name: "unknown vendor", raw: `{"vendors":[{"name":"acme"}]}`, wantErr: `vendors[0].name: Unsupported value: "acme"`},
		{name: "both vendor sources", raw: `{"deviceConfigFile":"/x.yaml","vendors":[{"name":"nvidia"}]}`, wantErr: "vendors: Forbidden"},
		{name: "not json", raw: `{`, wantErr: "decode HAMiArgs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv(configv1.NodeLockExpiryEnv, tt.env)
			} else {
				unsetEnv(t, configv1.NodeLockExpiryEnv)
			}
			var obj runtime.Object
			if tt.raw != "" {
				obj = &runtime.Unknown{Raw: []byte(tt.raw), ContentType: runtime.ContentTypeJSON}
			}
			args, err := pluginArgs(obj)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, args.NodeLockExpiry.Duration, args.NodeLockWait.Duration, args.NodeSchedulerPolicy, args.GPUSchedulerPolicy, len(args.Vendors))
		})
	}
}

// unsetEnv removes a variable for the test and restores it afterwards.
func unsetEnv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

func TestNewReadsDeviceConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device-config.yaml")
	config := "nvidia:\n  resourceCountName: example.com/gpu\n  resourceMemoryName: example.com/gpumem\n" +
		"hygon:\n  resourceCountName: example.com/dcu\n" +
		"vnpus:\n  configs:\n  - {commonWord: Ascend910B3, resourceName: huawei.com/Ascend910B3, memoryAllocatable: 65536, memoryCapacity: 65536}\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &configv1.HAMiArgs{DeviceConfigFile: &path})
	vs := h.plugin.registry.Vendors()
	if len(vs) != 2 || vs[0].Name() != "NVIDIA" || vs[1].Name() != "DCU" {
		t.Fatalf("%d vendors enabled, want NVIDIA and Hygon (Ascend needs enableAscend)", len(vs))
	}
	if names := vs[0].Resources(); names.Count != "example.com/gpu" || names.Memory != "example.com/gpumem" {
		t.Errorf("resource names %+v, want the device config's", names)
	}
	if names := vs[1].Resources(); names.Count != "example.com/dcu" {
		t.Errorf("Hygon resource names %+v, want the device config's", names)
	}

	h = newHarness(t, &configv1.HAMiArgs{DeviceConfigFile: &path, EnableAscend: ptr.To(true)})
	vs = h.plugin.registry.Vendors()
	if len(vs) != 3 || vs[2].Name() != "Ascend910B3" {
		t.Fatalf("%d vendors enabled with enableAscend, want NVIDIA, Hygon and Ascend910B3", len(vs))
	}
}

func TestNewRejectsBadDeviceConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device-config.yaml")
	if err := os.WriteFile(path, []byte("nvidia:\n  resourceCountName: nvidia.com/gpu\n  defaultCores: 101\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(t.Context(), rawArgs(t, &configv1.HAMiArgs{DeviceConfigFile: &path}), &fakeHandle{})
	if err == nil || !strings.Contains(err.Error(), "nvidia.defaultCores: Invalid value: 101") {
		t.Fatalf("New: %v, want the device config's field path", err)
	}
}
