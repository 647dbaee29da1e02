package devices

import "testing"

// namedVendor is a vendor with a name and nothing else.
type namedVendor struct {
	Vendor
	name string
}

func (v namedVendor) Name() string { return v.name }

func TestSplitCounts(t *testing.T) {
	vendors := []Vendor{namedVendor{name: "NVIDIA"}, namedVendor{name: "DCU"}}
	tests := []struct {
		name    string
		configs []Config
		vendor  string
		want    int32
	}{
		{name: "the config's deviceSplitCount", configs: []Config{{NodeDefaults: NodeDefaults{SplitCount: 4}}}, vendor: "NVIDIA", want: 4},
		{name: "the second vendor's config", configs: []Config{{}, {NodeDefaults: NodeDefaults{SplitCount: 6}}}, vendor: "DCU", want: 6},
		{name: "none set: HAMi's default", configs: []Config{{}}, vendor: "NVIDIA", want: DefaultSplitCount},
		{name: "no config", vendor: "DCU", want: DefaultSplitCount},
		{name: "a vendor not read", configs: []Config{{NodeDefaults: NodeDefaults{SplitCount: 4}}}, vendor: "MLU", want: DefaultSplitCount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SplitCounts(vendors, tt.configs)(tt.vendor); got != tt.want {
				t.Errorf("split of %s = %d, want %d", tt.vendor, got, tt.want)
			}
		})
	}
}
