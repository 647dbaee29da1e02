package simnode

import (
	"strings"
	"testing"
)

func TestParseSpecs(t *testing.T) {
	tests := []struct {
		in      string
		want    []Spec
		wantErr string
	}{
		{in: "4 nodes x 8 cards of NVIDIA A100 40 GiB, split 10",
			want: []Spec{{Nodes: 4, Cards: 8, Model: "NVIDIA A100", MemoryMiB: 40960, Split: 10, Cores: 100}}},
		{in: "1 node x 1 card of Tesla T4 15360 MiB",
			want: []Spec{{Nodes: 1, Cards: 1, Model: "Tesla T4", MemoryMiB: 15360, Split: DefaultSplit, Cores: 100}}},
		{in: "2 nodes × 4 cards of NVIDIA H100 80GB HBM3 80 GiB, split 4, cores 200; 1 node x 2 cards of Tesla P4 7.5 GiB",
			want: []Spec{
				{Nodes: 2, Cards: 4, Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, Split: 4, Cores: 200},
				{Nodes: 1, Cards: 2, Model: "Tesla P4", MemoryMiB: 7680, Split: DefaultSplit, Cores: 100},
			}},
		{in: "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, mig",
			want: []Spec{{Nodes: 1, Cards: 2, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, Split: 7, Cores: 100, MIG: true}}},
		{in: "1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB, split 3, mig",
			want: []Spec{{Nodes: 1, Cards: 2, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, Split: 7, Cores: 100, MIG: true}}},
		{in: "1 node x 1 card of Tesla T4 15 GiB, mig", wantErr: "no migProfileAllowlist entry"},
		{in: "1 node x 1 card of NVIDIA A100-SXM4-40GB 40 GiB, mig 2", wantErr: "takes no value"},
		{in: "", wantErr: "no node group"},
		{in: "four nodes", wantErr: "want \"<n> nodes"},
		{in: "0 nodes x 8 cards of A100 40 GiB", wantErr: "node count"},
		{in: "1 node x 999 cards of A100 40 GiB", wantErr: "card count"},
		{in: "1 node x 1 card of A100 0 GiB", wantErr: "memory"},
		{in: "1 node x 1 card of A100 99999999999 GiB", wantErr: "memory"},
		{in: "1 node x 1 card of A100 40 GiB, split 0", wantErr: "split"},
		{in: "1 node x 1 card of A100 40 GiB, split ten", wantErr: "split"},
		{in: "1 node x 1 card of A100 40 GiB, colour red", wantErr: "unknown setting"},
		{in: "99999999999999999999 nodes x 1 card of A100 40 GiB", wantErr: "node count"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSpecs(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSpecs(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSpecs(%q): %v", tt.in, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseSpecs(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("group %d = %+v, want %+v", i, got[i], tt.want[i])
				}
				// String renders what ParseSpec reads back.
				again, err := ParseSpec(got[i].String())
				if err != nil || again != got[i] {
					t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", got[i].String(), again, err, got[i])
				}
			}
		})
	}
}
