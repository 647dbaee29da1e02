package deviceconfig

import (
	"os"
	"testing"
)

// FuzzParse reads arbitrary device-config.yaml contents: decoding,
// validation and the vendor mapping never panic, and a file that decodes
// and validates maps onto vendor settings.
func FuzzParse(f *testing.F) {
	if chart, err := os.ReadFile("../../test/testdata/device-config.yaml"); err == nil {
		f.Add(chart)
	}
	f.Add([]byte("nvidia:\n  resourceCountName: nvidia.com/gpu\n  defaultCores: 101\n"))
	f.Add([]byte("vnpus:\n  configs:\n  - commonWord: Ascend910B3\n    templates: [{name: a, memory: -1}]\n"))
	f.Add([]byte("iluvatars: {}\n"))
	f.Add([]byte(":::"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := Parse(data)
		if err != nil {
			return
		}
		if errs := cfg.Validate(); len(errs) > 0 {
			return
		}
		_, _ = cfg.Vendors(Options{EnableAscend: true})
	})
}
