package benchfigures

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sample() *File {
	return &File{
		Title:  "make bench-e2e, a test",
		Source: "written by a test",
		Phases: []Phase{
			{Nodes: 200, Pods: 1000, Name: "baseline backlog", Arrival: Backlog, PodsPerSecond: 380, RunP99Seconds: 2.6},
			{Nodes: 200, Pods: 1000, Name: "hami steady binpack", Setting: "binpack", Arrival: Steady, Rate: 30,
				PodsPerSecond: 27, WhileArriving: 29, RunP50Seconds: 1.2, RunP99Seconds: 3.8, CardsUsed: 329, NodesUsed: 48},
		},
	}
}

// TestRoundTrip: what Write writes, Read reads back unchanged.
func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "figures.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sample(), got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}

// TestValidate: every field that cannot be drawn is named by its path.
func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*File)
		want   []string
	}{
		{"valid", func(*File) {}, nil},
		{"no title or source", func(f *File) { f.Title, f.Source = "", "" }, []string{"title", "source"}},
		{"no phases", func(f *File) { f.Phases = nil }, []string{"phases"}},
		{"steady without a rate", func(f *File) { f.Phases[1].Rate = 0 }, []string{"phases[1].rate"}},
		{"unknown arrival", func(f *File) { f.Phases[0].Arrival = "burst" }, []string{"phases[0].arrival"}},
		{"sizes and figures", func(f *File) {
			f.Phases[0].Nodes, f.Phases[0].Pods, f.Phases[0].Name = 0, -1, ""
			f.Phases[1].PodsPerSecond, f.Phases[1].RunP99Seconds = -1, -2
		}, []string{"phases[0].nodes", "phases[0].pods", "phases[0].name", "phases[1].podsPerSecond", "phases[1].runP99Seconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := sample()
			tt.change(f)
			var got []string
			for _, e := range f.Validate() {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadRefuses: an unknown key or an invalid figure is refused with the
// file's name.
func TestReadRefuses(t *testing.T) {
	for _, tt := range []struct{ name, data, want string }{
		{"unknown key", `{"title": "t", "source": "s", "phases": [], "extra": 1}`, `unknown field "extra"`},
		{"invalid", `{"title": "t", "source": "s", "phases": [{"nodes": 1, "pods": 1, "name": "n", "arrival": "steady", "runP99Seconds": 1}]}`, "phases[0].rate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Read(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one naming %s and %q", err, path, tt.want)
			}
		})
	}
}
