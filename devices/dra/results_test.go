package dra

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// result is an allocation result on device of the driver in pool n1,
// shared (with a share ID) when capacity is given ("memory=3000Mi").
func result(driver, device string, shared bool, capacity ...string) resourceapi.DeviceRequestAllocationResult {
	r := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: driver, Pool: "n1", Device: device}
	if shared {
		r.ShareID = ptr.To(types.UID("share-" + device))
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{}
		for _, kv := range capacity {
			name, value, _ := strings.Cut(kv, "=")
			r.ConsumedCapacity[resourceapi.QualifiedName(name)] = resource.MustParse(value)
		}
	}
	return r
}

func TestAddResults(t *testing.T) {
	admin := result(HAMiCore.Name, "hami-gpu-0", false)
	admin.AdminAccess = ptr.To(true)
	key := func(driver, device string) DeviceKey { return DeviceKey{Driver: driver, Pool: "n1", Device: device} }
	tests := []struct {
		name    string
		results []resourceapi.DeviceRequestAllocationResult
		want    map[DeviceKey]Consumption
	}{
		{
			name: "shares add up their memory and cores",
			results: []resourceapi.DeviceRequestAllocationResult{
				result(HAMiCore.Name, "hami-gpu-0", true, "memory=3000Mi", "cores=30"),
				result(HAMiCore.Name, "hami-gpu-0", true, "memory=1Gi", "cores=10"),
			},
			want: map[DeviceKey]Consumption{key(HAMiCore.Name, "hami-gpu-0"): {Shares: 2, MemoryBytes: 4024 * MiB, Cores: 40}},
		},
		{
			name:    "a result without a share ID holds the device whole",
			results: []resourceapi.DeviceRequestAllocationResult{result(HAMiCore.Name, "hami-gpu-1", false)},
			want:    map[DeviceKey]Consumption{key(HAMiCore.Name, "hami-gpu-1"): {Whole: true}},
		},
		{
			name:    "NVIDIA's driver has no cores capacity: a cores entry is not its",
			results: []resourceapi.DeviceRequestAllocationResult{result(NVIDIAGPU.Name, "gpu-0", true, "memory=2Gi", "cores=50")},
			want:    map[DeviceKey]Consumption{key(NVIDIAGPU.Name, "gpu-0"): {Shares: 1, MemoryBytes: 2048 * MiB}},
		},
		{
			name:    "admin access and unknown drivers take nothing",
			results: []resourceapi.DeviceRequestAllocationResult{admin, result("example.com/nic", "nic-0", false)},
			want:    map[DeviceKey]Consumption{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[DeviceKey]Consumption{}
			AddResults(got, tt.results)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("consumption (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResultGrant(t *testing.T) {
	hami := Inventory([]*resourceapi.ResourceSlice{slice(HAMiCore.Name, "n1", 1, hamiDevice(0, "GPU-a", 40*gib))}, ten).Devices[0]
	t4 := Inventory([]*resourceapi.ResourceSlice{slice(NVIDIAGPU.Name, "n1", 1, nvidiaDevice(0, "GPU-t0", 15*gib, 0))}, ten).Devices[0]
	tests := []struct {
		name   string
		device Device
		result resourceapi.DeviceRequestAllocationResult
		want   devices.Grant
	}{
		{name: "a share: its memory rounded up to MiB, its cores", device: hami,
			result: result(HAMiCore.Name, "hami-gpu-0", true, "memory=3000Mi", "cores=30"),
			want:   devices.Grant{UUID: "GPU-a", Vendor: nvidia.VendorWord, MemoryMiB: 3000, Cores: 30}},
		{name: "a byte over a MiB is a MiB more", device: hami,
			result: result(HAMiCore.Name, "hami-gpu-0", true, "memory=1048577", "cores=0"),
			want:   devices.Grant{UUID: "GPU-a", Vendor: nvidia.VendorWord, MemoryMiB: 2}},
		{name: "whole: the card", device: hami,
			result: result(HAMiCore.Name, "hami-gpu-0", false),
			want:   devices.Grant{UUID: "GPU-a", Vendor: nvidia.VendorWord, MemoryMiB: 40960, Cores: 100}},
		{name: "memory only on NVIDIA's driver", device: t4,
			result: result(NVIDIAGPU.Name, "gpu-0", true, "memory=5Gi"),
			want:   devices.Grant{UUID: "GPU-t0", Vendor: nvidia.VendorWord, MemoryMiB: 5120}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ResultGrant(tt.device, &tt.result)); diff != "" {
				t.Errorf("grant (-want +got):\n%s", diff)
			}
		})
	}
}
