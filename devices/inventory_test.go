package devices

import (
	"reflect"
	"strings"
	"testing"
)

const (
	docJSONInventory   = `[{"id":"GPU-0a","index":0,"count":10,"devmem":15360,"devcore":100,"type":"NVIDIA-Tesla T4","numa":0,"mode":"hami-core","health":true}]`
	docLegacyInventory = `GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,10,7680,100,NVIDIA-Tesla P4,0,true,1,hami-core:`
)

func TestDecodeInventory(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Card
		wantErr []string // substrings the error must contain; nil: no error
	}{
		{
			name: "protocol JSON example",
			in:   docJSONInventory,
			want: []Card{{UUID: "GPU-0a", Split: 10, MemoryMiB: 15360, Cores: 100, Model: "NVIDIA-Tesla T4", Mode: "hami-core", Healthy: true}},
		},
		{
			name: "JSON omitempty: index and numa absent are 0",
			in:   `[{"id":"GPU-1","count":4,"devmem":81920,"devcore":100,"type":"NVIDIA-NVIDIA H20-3e","mode":"mps","health":true}]`,
			want: []Card{{UUID: "GPU-1", Split: 4, MemoryMiB: 81920, Cores: 100, Model: "NVIDIA-NVIDIA H20-3e", Mode: "mps", Healthy: true}},
		},
		{
			name: "JSON keys are case-insensitive",
			in:   `[{"ID":"GPU-2","Index":3,"Count":5,"DevMem":1000,"DEVCORE":500,"Type":"NVIDIA-A10","Numa":1,"Mode":"mig","Health":true}]`,
			want: []Card{{UUID: "GPU-2", Index: 3, Split: 5, MemoryMiB: 1000, Cores: 500, Model: "NVIDIA-A10", NUMA: 1, Mode: "mig", Healthy: true}},
		},
		{
			name: "health absent means unhealthy, mode absent means hami-core",
			in:   `[{"id":"GPU-3","count":10,"devmem":1000,"devcore":100,"type":"NVIDIA-T4"}]`,
			want: []Card{{UUID: "GPU-3", Split: 10, MemoryMiB: 1000, Cores: 100, Model: "NVIDIA-T4", Mode: DefaultMode}},
		},
		{
			name: "explicit health false",
			in:   `[{"id":"GPU-3","count":10,"health":false}]`,
			want: []Card{{UUID: "GPU-3", Split: 10, Mode: DefaultMode}},
		},
		{
			name: "unknown JSON fields are ignored",
			in:   `[{"id":"GPU-4","count":1,"health":true,"devicevendor":"NVIDIA","migtemplate":[{"name":"1g.5gb"}]}]`,
			want: []Card{{UUID: "GPU-4", Split: 1, Mode: DefaultMode, Healthy: true}},
		},
		{
			name: "mig cards keep their profiles in the order they are tried",
			in: `[{"id":"GPU-5","count":7,"devmem":40960,"devcore":100,"type":"NVIDIA A100-SXM4-40GB","mode":"mig","health":true,"migProfiles":[` +
				`{"name":"2g.10gb","memoryMB":9856,"core":29,"sliceCount":2,"placements":[{"start":0,"size":2},{"start":2,"size":2},{"start":4,"size":2}]},` +
				`{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"placements":[{"start":0,"size":1},{"start":1,"size":1}]}]}]`,
			want: []Card{{UUID: "GPU-5", Split: 7, MemoryMiB: 40960, Cores: 100, Model: "NVIDIA A100-SXM4-40GB", Mode: ModeMIG, Healthy: true, MIG: &MIGProfiles{List: []MIGProfile{
				{Name: "1g.5gb", MemoryMiB: 4864, Cores: 15, SliceCount: 1, Placements: []MIGPlacement{{1, 1}, {0, 1}}},
				{Name: "2g.10gb", MemoryMiB: 9856, Cores: 29, SliceCount: 2, Placements: []MIGPlacement{{0, 2}, {2, 2}, {4, 2}}},
			}}}},
		},
		{
			name: "surrounding whitespace is tolerated",
			in:   "  \n" + docJSONInventory + "\n",
			want: []Card{{UUID: "GPU-0a", Split: 10, MemoryMiB: 15360, Cores: 100, Model: "NVIDIA-Tesla T4", Mode: "hami-core", Healthy: true}},
		},
		{
			name: "two JSON cards keep their order",
			in:   `[{"id":"GPU-b","index":1,"count":2,"health":true},{"id":"GPU-a","count":2,"health":true}]`,
			want: []Card{
				{UUID: "GPU-b", Index: 1, Split: 2, Mode: DefaultMode, Healthy: true},
				{UUID: "GPU-a", Split: 2, Mode: DefaultMode, Healthy: true},
			},
		},
		{
			name: "legacy 9 fields, protocol example",
			in:   docLegacyInventory,
			want: []Card{{UUID: "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4", Index: 1, Split: 10, MemoryMiB: 7680, Cores: 100, Model: "NVIDIA-Tesla P4", Mode: "hami-core", Healthy: true}},
		},
		{
			name: "legacy 7 fields: index 0, mode hami-core",
			in:   `GPU-a,10,7680,100,NVIDIA-Tesla P4,1,false:`,
			want: []Card{{UUID: "GPU-a", Split: 10, MemoryMiB: 7680, Cores: 100, Model: "NVIDIA-Tesla P4", NUMA: 1, Mode: DefaultMode}},
		},
		{
			name: "legacy 9 fields with empty mode keeps hami-core",
			in:   `GPU-a,10,7680,100,NVIDIA-Tesla P4,0,true,2,:`,
			want: []Card{{UUID: "GPU-a", Index: 2, Split: 10, MemoryMiB: 7680, Cores: 100, Model: "NVIDIA-Tesla P4", Mode: DefaultMode, Healthy: true}},
		},
		{
			name: "multiple legacy cards, mixed 7 and 9 fields",
			in:   `GPU-a,10,7680,100,NVIDIA-Tesla P4,0,true:GPU-b,5,16384,100,NVIDIA-Tesla V100,1,true,1,mps:`,
			want: []Card{
				{UUID: "GPU-a", Split: 10, MemoryMiB: 7680, Cores: 100, Model: "NVIDIA-Tesla P4", Mode: DefaultMode, Healthy: true},
				{UUID: "GPU-b", Index: 1, Split: 5, MemoryMiB: 16384, Cores: 100, Model: "NVIDIA-Tesla V100", NUMA: 1, Mode: "mps", Healthy: true},
			},
		},
		{
			name: "legacy without the final separator",
			in:   `GPU-a,10,7680,100,NVIDIA-Tesla P4,0,true:GPU-b,10,7680,100,NVIDIA-Tesla P4,0,true`,
			want: []Card{
				{UUID: "GPU-a", Split: 10, MemoryMiB: 7680, Cores: 100, Model: "NVIDIA-Tesla P4", Mode: DefaultMode, Healthy: true},
				{UUID: "GPU-b", Split: 10, MemoryMiB: 7680, Cores: 100, Model: "NVIDIA-Tesla P4", Mode: DefaultMode, Healthy: true},
			},
		},
		{name: "empty", in: "", wantErr: []string{"empty"}},
		{name: "blank", in: " \t\n", wantErr: []string{"empty"}},
		{name: "garbage", in: "hello world", wantErr: []string{"neither a JSON array nor legacy"}},
		{name: "empty JSON array", in: "[]", wantErr: []string{"no card"}},
		{name: "legacy separator only", in: ":", wantErr: []string{"no card"}},
		{name: "broken JSON array", in: `[{"id":"GPU-0"`, wantErr: []string{"not a JSON array of cards"}},
		{name: "JSON array of strings", in: `["GPU-0"]`, wantErr: []string{"not a JSON array of cards"}},
		{name: "JSON with a string count", in: `[{"id":"GPU-0","count":"10"}]`, wantErr: []string{"not a JSON array of cards"}},
		{name: "JSON object, not an array", in: `{"id":"GPU-0","count":10,"health":true}`, wantErr: []string{"single JSON object", "JSON array"}},
		{name: "JSON null", in: `null`, wantErr: []string{"neither a JSON array nor legacy"}},
		{name: "JSON card without id", in: `[{"count":10,"health":true}]`, wantErr: []string{"card 0 has no id"}},
		// HAMi accepts these nodes (see normalizeInventory).
		{
			name: "duplicate ids: the first card is kept",
			in:   `[{"id":"GPU-0","count":1,"health":true},{"id":"GPU-1","count":1},{"id":"GPU-0","count":7,"health":true}]`,
			want: []Card{{UUID: "GPU-0", Split: 1, Mode: DefaultMode, Healthy: true}, {UUID: "GPU-1", Split: 1, Mode: DefaultMode}},
		},
		{
			name: "duplicate legacy ids: the first card is kept",
			in:   `GPU-a,10,7680,100,T4,0,true:GPU-a,5,7680,100,T4,0,true:`,
			want: []Card{{UUID: "GPU-a", Split: 10, MemoryMiB: 7680, Cores: 100, Model: "T4", Mode: DefaultMode, Healthy: true}},
		},
		{
			name: "negative JSON count: card kept unhealthy",
			in:   `[{"id":"GPU-0","count":-1,"health":true},{"id":"GPU-1","count":1,"health":true}]`,
			want: []Card{{UUID: "GPU-0", Split: -1, Mode: DefaultMode}, {UUID: "GPU-1", Split: 1, Mode: DefaultMode, Healthy: true}},
		},
		{
			name: "negative JSON devmem: card kept unhealthy",
			in:   `[{"id":"GPU-0","devmem":-1,"health":true}]`,
			want: []Card{{UUID: "GPU-0", MemoryMiB: -1, Mode: DefaultMode}},
		},
		{
			name: "negative JSON devcore: card kept unhealthy",
			in:   `[{"id":"GPU-0","devcore":-100,"health":true}]`,
			want: []Card{{UUID: "GPU-0", Cores: -100, Mode: DefaultMode}},
		},
		{
			name: "negative JSON numa is kept",
			in:   `[{"id":"GPU-0","numa":-1,"health":true}]`,
			want: []Card{{UUID: "GPU-0", NUMA: -1, Mode: DefaultMode, Healthy: true}},
		},
		{
			name: "negative legacy devmem: card kept unhealthy",
			in:   `GPU-a,10,-7680,100,T4,0,true:`,
			want: []Card{{UUID: "GPU-a", Split: 10, MemoryMiB: -7680, Cores: 100, Model: "T4", Mode: DefaultMode}},
		},
		{
			name: "negative legacy numa is kept",
			in:   `GPU-a,10,7680,100,T4,-1,true:`,
			want: []Card{{UUID: "GPU-a", Split: 10, MemoryMiB: 7680, Cores: 100, Model: "T4", NUMA: -1, Mode: DefaultMode, Healthy: true}},
		},
		// HAMi refuses a negative index (unsigned JSON field; legacy check).
		{name: "negative JSON index", in: `[{"id":"GPU-0","index":-1}]`, wantErr: []string{"GPU-0", "negative index -1"}},
		{name: "legacy count beyond 32 bits", in: `GPU-a,4294967296,7680,100,T4,0,true:`, wantErr: []string{`count "4294967296"`}},
		{name: "negative legacy index", in: `GPU-a,10,7680,100,T4,0,true,-1,hami-core:`, wantErr: []string{"index -1 is negative"}},
		{name: "legacy 6 fields", in: `GPU-a,10,7680,100,T4,0:`, wantErr: []string{"want 7 or 9 fields, got 6"}},
		{name: "legacy 8 fields", in: `GPU-a,10,7680,100,T4,0,true,1:`, wantErr: []string{"want 7 or 9 fields, got 8"}},
		{name: "legacy 10 fields", in: `GPU-a,10,7680,100,T4,0,true,1,hami-core,x:`, wantErr: []string{"want 7 or 9 fields, got 10"}},
		{name: "legacy non-integer count", in: `GPU-a,ten,7680,100,T4,0,true:`, wantErr: []string{`count "ten"`}},
		{name: "legacy non-integer numa", in: `GPU-a,10,7680,100,T4,zero,true:`, wantErr: []string{`numa "zero"`}},
		{name: "legacy bad health", in: `GPU-a,10,7680,100,T4,0,healthy:`, wantErr: []string{`health "healthy"`}},
		{name: "legacy empty id", in: `,10,7680,100,T4,0,true:`, wantErr: []string{"has no id"}},
		{name: "id with an assignment separator", in: `[{"id":"GPU;0","count":1}]`, wantErr: []string{"separator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeInventory(tt.in)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("DecodeInventory(%q) = %+v, want an error", tt.in, got)
				}
				for _, sub := range tt.wantErr {
					if !strings.Contains(err.Error(), sub) {
						t.Errorf("error %q does not contain %q", err, sub)
					}
				}
				if got != nil {
					t.Errorf("DecodeInventory(%q) returned cards %+v along with an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeInventory(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeInventory(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestApplyCordon(t *testing.T) {
	tests := []struct {
		name   string
		cordon string
		want   []bool // Cordoned per card GPU-0, GPU-1, GPU-2
	}{
		{name: "empty", cordon: "", want: []bool{false, false, false}},
		{name: "blank", cordon: "  ", want: []bool{false, false, false}},
		{name: "one card", cordon: "GPU-1", want: []bool{false, true, false}},
		{name: "two cards with spaces", cordon: "GPU-0, GPU-2", want: []bool{true, false, true}},
		{name: "unknown card ignored", cordon: "GPU-9", want: []bool{false, false, false}},
		{name: "empty items ignored", cordon: ",GPU-2,,", want: []bool{false, false, true}},
		{name: "exact match only", cordon: "GPU", want: []bool{false, false, false}},
		{name: "case-sensitive", cordon: "gpu-1", want: []bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cards := []Card{{UUID: "GPU-0"}, {UUID: "GPU-1"}, {UUID: "GPU-2"}}
			ApplyCordon(cards, tt.cordon)
			for i, c := range cards {
				if c.Cordoned != tt.want[i] {
					t.Errorf("card %s Cordoned = %v, want %v", c.UUID, c.Cordoned, tt.want[i])
				}
			}
		})
	}
}

func TestApplyCordonKeepsEarlierCordon(t *testing.T) {
	tests := []struct {
		name   string
		cordon string
	}{
		{name: "empty value", cordon: ""},
		{name: "other card", cordon: "GPU-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cards := []Card{{UUID: "GPU-0", Cordoned: true}, {UUID: "GPU-1"}}
			ApplyCordon(cards, tt.cordon)
			if !cards[0].Cordoned {
				t.Errorf("ApplyCordon(%q) uncordoned GPU-0", tt.cordon)
			}
		})
	}
}

func FuzzDecodeInventory(f *testing.F) {
	for _, seed := range []string{
		docJSONInventory,
		docLegacyInventory,
		`[{"ID":"GPU-2","Count":5,"health":true}]`,
		`[{"id":"GPU-3","count":10}]`,
		`GPU-a,10,7680,100,NVIDIA-Tesla P4,1,false:GPU-b,5,16384,100,V100,1,true,1,mps:`,
		"",
		"garbage",
		"[]",
		"[null]",
		`{"id":"x"}`,
		`[{"id":"GPU-0","count":-1}]`,
		`[{"id":"GPU-0"},{"id":"GPU-0"}]`,
		`GPU-a,10,7680,100,T4,0:`,
		":::",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cards, err := DecodeInventory(s)
		if err != nil {
			if cards != nil {
				t.Fatalf("DecodeInventory(%q) returned cards with error %v", s, err)
			}
			if err.Error() == "" {
				t.Fatalf("DecodeInventory(%q) returned an empty error", s)
			}
			return
		}
		if len(cards) == 0 {
			t.Fatalf("DecodeInventory(%q) succeeded without a card", s)
		}
		seen := map[string]bool{}
		for _, c := range cards {
			if c.UUID == "" {
				t.Fatalf("DecodeInventory(%q): card without UUID: %+v", s, c)
			}
			if strings.ContainsAny(c.UUID, ",:;") {
				t.Fatalf("DecodeInventory(%q): UUID %q would break the assignment encoding", s, c.UUID)
			}
			if seen[c.UUID] {
				t.Fatalf("DecodeInventory(%q): duplicate UUID %q", s, c.UUID)
			}
			seen[c.UUID] = true
			if c.Index < 0 || (c.Healthy && (c.Split < 0 || c.MemoryMiB < 0 || c.Cores < 0)) {
				t.Fatalf("DecodeInventory(%q): negative field in %+v", s, c)
			}
			if c.Mode == "" {
				t.Fatalf("DecodeInventory(%q): card %s has no mode", s, c.UUID)
			}
			if c.Cordoned {
				t.Fatalf("DecodeInventory(%q): card %s cordoned by decoding", s, c.UUID)
			}
		}
	})
}
