package clustervendors

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

func TestVendors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	twoVendors := write("two.yaml", "nvidia:\n  resourceCountName: nvidia.com/gpu\nhygon:\n  resourceCountName: hygon.com/dcunum\n")
	empty := write("empty.yaml", "{}\n")
	tests := []struct {
		name    string
		read    func() ([]devices.Vendor, error)
		want    []string // vendor names that must be there
		wantLen int      // exact count; 0: at least want
		wantErr string
	}{
		{name: "chart: every vendor", read: Chart, want: []string{nvidia.VendorWord, hygon.VendorWord, "Ascend910B4"}},
		{name: "a device config file", read: func() ([]devices.Vendor, error) { return FromFile(twoVendors) },
			want: []string{nvidia.VendorWord, hygon.VendorWord}, wantLen: 2},
		{name: "no path: the chart's vendors", read: func() ([]devices.Vendor, error) { return FromFileOrChart("") },
			want: []string{nvidia.VendorWord, hygon.VendorWord, "Ascend910B4"}},
		{name: "a path: that file's vendors", read: func() ([]devices.Vendor, error) { return FromFileOrChart(twoVendors) },
			want: []string{nvidia.VendorWord, hygon.VendorWord}, wantLen: 2},
		{name: "a missing file", read: func() ([]devices.Vendor, error) { return FromFile(filepath.Join(dir, "missing.yaml")) },
			wantErr: "read device config"},
		{name: "a file that enables nothing", read: func() ([]devices.Vendor, error) { return FromFile(empty) },
			wantErr: "every section is empty"},
		{name: "no settings: NVIDIA", read: func() ([]devices.Vendor, error) { return FromConfigs(nil) },
			want: []string{nvidia.VendorWord}, wantLen: 1},
		{name: "an unknown vendor", read: func() ([]devices.Vendor, error) { return FromConfigs([]devices.Config{{Name: "nope"}}) },
			wantErr: `unknown vendor "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.read()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, v := range got {
				names = append(names, v.Name())
			}
			for _, w := range tt.want {
				if !slices.Contains(names, w) {
					t.Errorf("vendors %v lack %s", names, w)
				}
			}
			if tt.wantLen > 0 && len(names) != tt.wantLen {
				t.Errorf("vendors %v, want %d", names, tt.wantLen)
			}
		})
	}
}

// The split count of a vendor's DRA cards is its deviceSplitCount, as the
// scheduler counts it; the chart's default when the file sets none.
func TestWithSplitCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "split.yaml")
	if err := os.WriteFile(path, []byte("nvidia:\n  resourceCountName: nvidia.com/gpu\n  deviceSplitCount: 4\nhygon:\n  resourceCountName: hygon.com/dcunum\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, vendor string
		want               int32
	}{
		{name: "the file's deviceSplitCount", path: path, vendor: nvidia.VendorWord, want: 4},
		{name: "none in the file: HAMi's default", path: path, vendor: hygon.VendorWord, want: devices.DefaultSplitCount},
		{name: "the chart's", vendor: nvidia.VendorWord, want: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vendors, split, err := WithSplitCounts(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(vendors) == 0 {
				t.Fatal("no vendors")
			}
			if got := split(tt.vendor); got != tt.want {
				t.Errorf("split(%s) = %d, want %d", tt.vendor, got, tt.want)
			}
		})
	}
}
