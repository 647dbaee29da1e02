package vendors

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
)

func TestKnown(t *testing.T) {
	known := Known()
	if !slices.IsSorted(known) {
		t.Errorf("Known() = %v is not sorted", known)
	}
	if !slices.Contains(known, "nvidia") || !slices.Contains(known, "hygon") {
		t.Errorf("Known() = %v lacks nvidia or hygon", known)
	}
	if slices.Contains(known, "ascend") {
		t.Errorf("Known() = %v lists ascend, which only the device config file configures", known)
	}
	if got := Default(); !reflect.DeepEqual(got, []devices.Config{{Name: "nvidia"}}) {
		t.Errorf("Default() = %+v, want nvidia alone", got)
	}
}

func TestNewRegistry(t *testing.T) {
	tests := []struct {
		name    string
		configs []devices.Config
		// wantVendors are the vendor words in order.
		wantVendors []string
		// wantCount is the first vendor's count resource.
		wantCount corev1.ResourceName
		wantErr   []string
	}{
		{name: "nil: default nvidia", configs: nil, wantVendors: []string{"NVIDIA"}, wantCount: "nvidia.com/gpu"},
		{name: "empty: default nvidia", configs: []devices.Config{}, wantVendors: []string{"NVIDIA"}, wantCount: "nvidia.com/gpu"},
		{name: "nvidia by name", configs: []devices.Config{{Name: "nvidia"}}, wantVendors: []string{"NVIDIA"}, wantCount: "nvidia.com/gpu"},
		{name: "name is case-insensitive", configs: []devices.Config{{Name: "NVIDIA"}}, wantVendors: []string{"NVIDIA"}, wantCount: "nvidia.com/gpu"},
		{
			name:        "config reaches the vendor",
			configs:     []devices.Config{{Name: "nvidia", ResourceCountName: "example.com/vgpu"}},
			wantVendors: []string{"NVIDIA"},
			wantCount:   "example.com/vgpu",
		},
		{
			name:        "hygon",
			configs:     []devices.Config{{Name: "hygon", ResourceCountName: "example.com/dcu"}},
			wantVendors: []string{"DCU"},
			wantCount:   "example.com/dcu",
		},
		{
			name: "every vendor, ascend chips from their payload",
			configs: []devices.Config{
				{Name: "nvidia"}, {Name: "hygon"},
				{Name: "ascend", Vendor: ascend.DefaultConfigs()[2]},
				{Name: "ascend", Vendor: ascend.DefaultConfigs()[5]},
			},
			wantVendors: []string{"NVIDIA", "DCU", "Ascend910B3", "Ascend310P"},
			wantCount:   "nvidia.com/gpu",
		},
		{
			name:    "ascend without its chip",
			configs: []devices.Config{{Name: "ascend"}},
			wantErr: []string{"vnpus.configs entry of the device config file"},
		},
		{
			name:    "ascend with shared settings",
			configs: []devices.Config{{Name: "ascend", ResourceCountName: "x.com/npu", Vendor: ascend.DefaultConfigs()[2]}},
			wantErr: []string{"set the chip's resources and defaults in its vnpus.configs entry"},
		},
		{
			name:    "ascend chip invalid",
			configs: []devices.Config{{Name: "ascend", Vendor: ascend.Config{CommonWord: "Ascend910B3"}}},
			wantErr: []string{"memoryAllocatable 0"},
		},
		{
			name:    "the same ascend chip twice",
			configs: []devices.Config{{Name: "ascend", Vendor: ascend.DefaultConfigs()[2]}, {Name: "ascend", Vendor: ascend.DefaultConfigs()[2]}},
			wantErr: []string{"vendor Ascend910B3 registered twice"},
		},
		{
			name:    "hygon with an NVIDIA-only setting",
			configs: []devices.Config{{Name: "hygon", OverwriteEnv: true}},
			wantErr: []string{"NVIDIA settings"},
		},
		{
			name:    "unknown vendor lists the known ones",
			configs: []devices.Config{{Name: "nvidia"}, {Name: "acme"}},
			wantErr: []string{`unknown vendor "acme"`, "known: " + strings.Join(Known(), ", ")},
		},
		{
			name:    "empty vendor name",
			configs: []devices.Config{{}},
			wantErr: []string{`unknown vendor ""`, "nvidia"},
		},
		{
			name:    "duplicate vendor",
			configs: []devices.Config{{Name: "nvidia"}, {Name: "Nvidia"}},
			wantErr: []string{"vendor NVIDIA registered twice"},
		},
		{
			name:    "negative default memory",
			configs: []devices.Config{{Name: "nvidia", DefaultMemoryMiB: -1}},
			wantErr: []string{"defaultMemoryMiB -1 is negative"},
		},
		{
			name:    "default cores above 100",
			configs: []devices.Config{{Name: "nvidia", DefaultCores: 150}},
			wantErr: []string{"defaultCores 150"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(tt.configs)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("NewRegistry() succeeded, want an error containing %q", tt.wantErr)
				}
				for _, sub := range tt.wantErr {
					if !strings.Contains(err.Error(), sub) {
						t.Errorf("error %q does not contain %q", err, sub)
					}
				}
				if r != nil {
					t.Errorf("NewRegistry() returned a registry along with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("NewRegistry(): %v", err)
			}
			var names []string
			for _, v := range r.Vendors() {
				names = append(names, v.Name())
			}
			if !reflect.DeepEqual(names, tt.wantVendors) {
				t.Errorf("vendors %v, want %v", names, tt.wantVendors)
			}
			if got := r.Vendors()[0].Resources().Count; got != tt.wantCount {
				t.Errorf("count resource %q, want %q", got, tt.wantCount)
			}
		})
	}
}

func TestRegistryParsePod(t *testing.T) {
	r, err := NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		wantAny bool
		wantErr string
	}{
		{
			name:    "GPU pod",
			pod:     &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: gpuLimits("1")}}}},
			wantAny: true,
		},
		{
			name: "CPU pod",
			pod:  &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}},
		},
		{
			// As in HAMi, an unreadable count asks for nothing.
			name: "fractional count asks nothing",
			pod:  &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: gpuLimits("0.5")}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs, anyReq, err := r.ParsePod(tt.pod)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePod() error = %v, want prefix %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if anyReq != tt.wantAny {
				t.Errorf("any = %v, want %v", anyReq, tt.wantAny)
			}
			if len(reqs) != len(r.Vendors()) {
				t.Errorf("%d requests for %d vendors", len(reqs), len(r.Vendors()))
			}
		})
	}
}

func gpuLimits(count string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(count)}}
}
