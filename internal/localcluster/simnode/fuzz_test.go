package simnode

import (
	"testing"
)

// Any node group either is refused with an error or builds nodes whose
// cards every vendor's package decodes without error, and renders back to
// itself.
func FuzzParseSpec(f *testing.F) {
	for _, seed := range []string{
		"1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, mig",
		"1 node x 4 cards of Ascend910B4 32 GiB, hami-core",
		"1 node x 4 cards of Cambricon MLU370 24 GiB",
		"1 node x 2 cards of Enflame DRS S60 40 GiB, split 3",
		"1 node x 2 cards of AWS Neuron Inferentia 32 GiB, split 1",
		"1 node x 1 card of    5 GiB",
		"1 node x 3 cards of Moore Threads MTT S4000 1536 MiB",
	} {
		f.Add(seed)
	}
	registry := chartRegistry(f)
	f.Fuzz(func(t *testing.T, in string) {
		spec, err := ParseSpec(in)
		if err != nil {
			return
		}
		if again, err := ParseSpec(spec.String()); err != nil || again != spec {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", spec.String(), again, err, spec)
		}
		if spec.Nodes > 2 {
			spec.Nodes = 2
		}
		for _, node := range spec.Build("n", 0) {
			for _, v := range registry.Vendors() {
				if _, err := v.Inventory(node); err != nil {
					t.Errorf("%q: %s.Inventory: %v", in, v.Name(), err)
				}
			}
		}
	})
}
