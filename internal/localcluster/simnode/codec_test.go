package simnode

import (
	"strings"
	"testing"
	"time"
)

func TestEraseNext(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantRest string
		// wantServed lists the served cards' uuids; nil means none left.
		wantServed []string
		wantErr    string
	}{
		{name: "one container: the trailing terminator becomes an entry",
			in: "GPU-a,NVIDIA,2000,30:;", wantRest: ";;", wantServed: []string{"GPU-a"}},
		{name: "container without cards first",
			in: ";GPU-a,NVIDIA,2000,30:GPU-b,NVIDIA,2000,30:;", wantRest: ";;;", wantServed: []string{"GPU-a", "GPU-b"}},
		{name: "second of two containers still pending",
			in: ";;GPU-a,NVIDIA,1000,20:;;", wantRest: ";;;;;", wantServed: []string{"GPU-a"}},
		{name: "first of two containers served",
			in: "GPU-a,NVIDIA,2000,30:;GPU-b,NVIDIA,1000,0:;", wantRest: ";GPU-b,NVIDIA,1000,0:;;", wantServed: []string{"GPU-a"}},
		{name: "nothing left", in: ";;", wantRest: ";;"},
		{name: "empty", in: "", wantRest: ""},
		{name: "extra fields are ignored as HAMi does",
			in: "GPU-a,NVIDIA,2000,30,x:;", wantRest: ";;", wantServed: []string{"GPU-a"}},
		{name: "too few fields", in: "GPU-a,NVIDIA,2000:;", wantErr: "want uuid,type,memory,cores"},
		{name: "bad memory", in: "GPU-a,NVIDIA,lots,30:;", wantErr: "invalid memory"},
		{name: "bad cores", in: "GPU-a,NVIDIA,1,99999999999:;", wantErr: "invalid core"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest, served, err := eraseNext(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("eraseNext(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("eraseNext(%q): %v", tt.in, err)
			}
			if rest != tt.wantRest {
				t.Errorf("eraseNext(%q) rest = %q, want %q", tt.in, rest, tt.wantRest)
			}
			var ids []string
			for _, d := range served {
				ids = append(ids, d.UUID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.wantServed, ",") || (served == nil) != (tt.wantServed == nil) {
				t.Errorf("eraseNext(%q) served %v, want %v", tt.in, ids, tt.wantServed)
			}
		})
	}
}

func TestParseLock(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in            string
		wantNamespace string
		wantName      string
		wantErr       bool
	}{
		{in: "2026-01-02T03:04:05Z,team-a,train-0", wantNamespace: "team-a", wantName: "train-0"},
		{in: "2026-01-02T03:04:05Z"},
		{in: "2026-01-02T03:04:05Z,team-a", wantErr: true},
		{in: "yesterday,team-a,train-0", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		taken, ns, name, err := parseLock(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("parseLock(%q) = %v, %q, %q; want an error", tt.in, taken, ns, name)
			}
			continue
		}
		if err != nil || !taken.Equal(at) || ns != tt.wantNamespace || name != tt.wantName {
			t.Errorf("parseLock(%q) = %v, %q, %q, %v", tt.in, taken, ns, name, err)
		}
	}
}

func TestLockHeldBy(t *testing.T) {
	tests := []struct {
		value, namespace, name string
		want                   bool
	}{
		{"2026-01-02T03:04:05Z,team-a,train-0", "team-a", "train-0", true},
		{"2026-01-02T03:04:05Z,team-a,train-0", "team-a", "train-1", false},
		{"2026-01-02T03:04:05Z,team-b,train-0", "team-a", "train-0", false},
		// Legacy locks name nobody; the device plugin releases them.
		{"2026-01-02T03:04:05Z", "team-a", "train-0", true},
	}
	for _, tt := range tests {
		if got := lockHeldBy(tt.value, tt.namespace, tt.name); got != tt.want {
			t.Errorf("lockHeldBy(%q, %q, %q) = %v, want %v", tt.value, tt.namespace, tt.name, got, tt.want)
		}
	}
}
