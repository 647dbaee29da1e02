package devices

import (
	"reflect"
	"strings"
	"testing"
)

func nv(uuid string, mem, cores int32) Grant {
	return Grant{UUID: uuid, Vendor: "NVIDIA", MemoryMiB: mem, Cores: cores}
}

func TestEncodeAssignment(t *testing.T) {
	tests := []struct {
		name string
		in   Assignment
		want string
	}{
		{
			name: "protocol example: first container without GPU, second sharing two cards",
			in:   Assignment{nil, {nv("GPU-0a", 2000, 30), nv("GPU-0b", 2000, 30)}},
			want: ";GPU-0a,NVIDIA,2000,30:GPU-0b,NVIDIA,2000,30:;",
		},
		{
			name: "single container, one card",
			in:   Assignment{{nv("GPU-c53c0221-f097-5b48-427f-1a4f0f0ab91d", 15360, 100)}},
			want: "GPU-c53c0221-f097-5b48-427f-1a4f0f0ab91d,NVIDIA,15360,100:;",
		},
		{
			name: "all containers empty: one entry each",
			in:   Assignment{nil, {}},
			want: ";;",
		},
		{
			name: "init container first, then an empty sidecar, then the main container",
			in:   Assignment{{nv("GPU-init", 1000, 0)}, nil, {nv("GPU-main", 3000, 50)}},
			want: "GPU-init,NVIDIA,1000,0:;;GPU-main,NVIDIA,3000,50:;",
		},
		{
			name: "zero memory and cores are written as 0",
			in:   Assignment{{nv("GPU-0", 0, 0)}},
			want: "GPU-0,NVIDIA,0,0:;",
		},
		{
			name: "no container at all",
			in:   Assignment{},
			want: "",
		},
		{
			name: "vendor word is written as given",
			in:   Assignment{{{UUID: "DCU-1", Vendor: "DCU", MemoryMiB: 1, Cores: 2}}},
			want: "DCU-1,DCU,1,2:;",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EncodeAssignment(tt.in); got != tt.want {
				t.Errorf("EncodeAssignment() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecodeAssignment(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Assignment
		wantErr []string // substrings the error must contain; nil: no error
	}{
		{
			name: "protocol example keeps the empty first container",
			in:   ";GPU-0a,NVIDIA,2000,30:GPU-0b,NVIDIA,2000,30:;",
			want: Assignment{nil, {nv("GPU-0a", 2000, 30), nv("GPU-0b", 2000, 30)}},
		},
		{
			name: "empty entry before a card: two containers",
			in:   ";X,NVIDIA,1,2:;",
			want: Assignment{nil, {nv("X", 1, 2)}},
		},
		{
			name: "all empty",
			in:   ";;",
			want: Assignment{nil, nil},
		},
		{
			name: "one empty container",
			in:   ";",
			want: Assignment{nil},
		},
		{
			name: "empty string is no container",
			in:   "",
			want: Assignment{},
		},
		{
			name: "missing final container separator",
			in:   "GPU-0,NVIDIA,100,10:",
			want: Assignment{{nv("GPU-0", 100, 10)}},
		},
		{
			name: "missing final card separator",
			in:   "GPU-0,NVIDIA,100,10;",
			want: Assignment{{nv("GPU-0", 100, 10)}},
		},
		{
			name: "trailing empty container kept",
			in:   "GPU-0,NVIDIA,100,10:;;",
			want: Assignment{{nv("GPU-0", 100, 10)}, nil},
		},
		{
			name:    "three fields",
			in:      "GPU-0,NVIDIA,2000:;",
			wantErr: []string{"container 0", `"GPU-0,NVIDIA,2000"`, "want 4 comma-separated fields", "got 3"},
		},
		{
			name:    "five fields",
			in:      "GPU-0,NVIDIA,2000,30,1:;",
			wantErr: []string{"want 4 comma-separated fields", "got 5"},
		},
		{
			name:    "non-integer memory",
			in:      "GPU-0,NVIDIA,2G,30:;",
			wantErr: []string{`memory "2G" is not a 32-bit integer`},
		},
		{
			name:    "memory beyond 32 bits",
			in:      "GPU-0,NVIDIA,4294967296,30:;",
			wantErr: []string{"memory", "not a 32-bit integer"},
		},
		{
			name:    "negative cores in the second container",
			in:      ";GPU-0,NVIDIA,2000,-30:;",
			wantErr: []string{"container 1", "cores -30 is negative"},
		},
		{
			name:    "non-integer cores",
			in:      "GPU-0,NVIDIA,2000,3.5:;",
			wantErr: []string{`cores "3.5" is not a 32-bit integer`},
		},
		{
			name:    "empty uuid",
			in:      ",NVIDIA,2000,30:;",
			wantErr: []string{"empty uuid"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeAssignment(tt.in)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("DecodeAssignment(%q) = %v, want an error", tt.in, got)
				}
				for _, sub := range tt.wantErr {
					if !strings.Contains(err.Error(), sub) {
						t.Errorf("error %q does not contain %q", err, sub)
					}
				}
				if got != nil {
					t.Errorf("DecodeAssignment(%q) returned %v along with an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeAssignment(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeAssignment(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if len(got) != len(tt.want) {
				t.Errorf("got %d containers, want %d", len(got), len(tt.want))
			}
		})
	}
}

func TestAssignmentRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{name: "protocol example", in: ";GPU-0a,NVIDIA,2000,30:GPU-0b,NVIDIA,2000,30:;"},
		{name: "single", in: "GPU-0,NVIDIA,15360,100:;"},
		{name: "all empty", in: ";;"},
		{name: "one empty", in: ";"},
		{name: "empty string", in: ""},
		{name: "init, sidecar, main", in: "GPU-1,NVIDIA,1000,0:;;GPU-2,NVIDIA,3000,50:GPU-3,NVIDIA,3000,50:;"},
		{name: "max int32", in: "GPU-0,NVIDIA,2147483647,2147483647:;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := DecodeAssignment(tt.in)
			if err != nil {
				t.Fatalf("DecodeAssignment(%q): %v", tt.in, err)
			}
			if got := EncodeAssignment(a); got != tt.in {
				t.Errorf("EncodeAssignment(DecodeAssignment(%q)) = %q", tt.in, got)
			}
		})
	}
}

func TestAssignmentEmpty(t *testing.T) {
	tests := []struct {
		name string
		in   Assignment
		want bool
	}{
		{name: "nil", in: nil, want: true},
		{name: "no container", in: Assignment{}, want: true},
		{name: "only empty containers", in: Assignment{nil, {}, nil}, want: true},
		{name: "one card in the last container", in: Assignment{nil, nil, {nv("GPU-0", 1, 1)}}, want: false},
		{name: "one card in the first container", in: Assignment{{nv("GPU-0", 1, 1)}, nil}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Empty(); got != tt.want {
				t.Errorf("Empty() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAssignmentGrants(t *testing.T) {
	tests := []struct {
		name string
		in   Assignment
		want []string
	}{
		{name: "empty", in: Assignment{nil, nil}, want: nil},
		{
			name: "container order then card order",
			in:   Assignment{{nv("A", 1, 1)}, nil, {nv("B", 1, 1), nv("C", 1, 1)}},
			want: []string{"A", "B", "C"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			tt.in.Grants(func(g Grant) { got = append(got, g.UUID) })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Grants visited %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzDecodeAssignment(f *testing.F) {
	for _, seed := range []string{
		"",
		";",
		";;",
		";GPU-0a,NVIDIA,2000,30:GPU-0b,NVIDIA,2000,30:;",
		";X,NVIDIA,1,2:;",
		"GPU-0,NVIDIA,100,10:",
		"GPU-0,NVIDIA,2000:;",
		"GPU-0,NVIDIA,2G,30:;",
		"GPU-0,NVIDIA,2000,-30:;",
		",NVIDIA,2000,30:;",
		"GPU-0,NVIDIA,+7,-0:;",
		"::;;::",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := DecodeAssignment(s)
		if err != nil {
			return
		}
		a.Grants(func(g Grant) {
			if g.UUID == "" || g.MemoryMiB < 0 || g.Cores < 0 {
				t.Fatalf("DecodeAssignment(%q) accepted grant %+v", s, g)
			}
		})
		encoded := EncodeAssignment(a)
		again, err := DecodeAssignment(encoded)
		if err != nil {
			t.Fatalf("DecodeAssignment(%q) -> %v; its encoding %q does not decode: %v", s, a, encoded, err)
		}
		if !reflect.DeepEqual(again, a) {
			t.Fatalf("DecodeAssignment(%q) = %#v, but its encoding %q decodes to %#v", s, a, encoded, again)
		}
		if re := EncodeAssignment(again); re != encoded {
			t.Fatalf("encoding is not stable: %q then %q", encoded, re)
		}
	})
}
