package nodelock

import (
	"strings"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/cambricon"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// TestVendorLockTimeVersusExpiry: the 2-minute rule is HAMi's Cambricon
// one.
func TestVendorLockTimeVersusExpiry(t *testing.T) {
	if vendorLockExpiry != cambricon.LockExpiry {
		t.Errorf("vendorLockExpiry = %v, Cambricon's is %v", vendorLockExpiry, cambricon.LockExpiry)
	}
}

// TestVendorKeys: only vendors with a lock of their own, asked by a
// regular container, and each key once.
func TestVendorKeys(t *testing.T) {
	mluVendor, err := cambricon.New(devices.Config{Name: "cambricon"})
	if err != nil {
		t.Fatal(err)
	}
	gpuVendor, err := nvidia.New(devices.Config{Name: "nvidia"})
	if err != nil {
		t.Fatal(err)
	}
	asks := devices.PodRequest{Containers: []devices.Request{{Count: 1}}}
	initOnly := devices.PodRequest{Containers: []devices.Request{{Count: 1}, {}}, Inits: 1}
	tests := []struct {
		name     string
		vendors  []devices.Vendor
		requests []devices.PodRequest
		want     []string
	}{
		{"cambricon", []devices.Vendor{gpuVendor, mluVendor}, []devices.PodRequest{{}, asks}, []string{cambricon.LockAnnotation}},
		{"nvidia only", []devices.Vendor{gpuVendor, mluVendor}, []devices.PodRequest{asks, {}}, nil},
		{"init container only", []devices.Vendor{mluVendor}, []devices.PodRequest{initOnly}, nil},
		{"same key once", []devices.Vendor{mluVendor, mluVendor}, []devices.PodRequest{asks, asks}, []string{cambricon.LockAnnotation}},
		{"more requests than vendors", []devices.Vendor{gpuVendor}, []devices.PodRequest{asks, asks}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := VendorKeys(tt.vendors, tt.requests)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("VendorKeys = %v, want %v", got, tt.want)
			}
		})
	}
}
