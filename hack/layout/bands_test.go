package main

import (
	"fmt"
	"go/build/constraint"
	"strings"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/internal/kubeversion"
)

// TestCheckBandName: a case's want is a part of the problem reported for
// the file at path with the build line build, "" for none.
func TestCheckBandName(t *testing.T) {
	tests := []struct{ path, build, want string }{
		// Each suffix of the table, right and wrong.
		{"plugins/countfit_since1.34.go", "!k8s1.33 && !k8s1.30", ""},
		{"plugins/countfit.go", "!k8s1.33 && !k8s1.30", "name it plugins/countfit_since1.34.go"},
		{"plugins/countfit_until1.33.go", "k8s1.33 || k8s1.30", ""},
		{"plugins/countfit_old.go", "k8s1.33 || k8s1.30", "name it plugins/countfit_until1.33.go"},
		{"plugins/enqueue_entry_since1.31.go", "!k8s1.30", ""},
		{"plugins/enqueue_entry.go", "!k8s1.30", "name it plugins/enqueue_entry_since1.31.go"},
		{"plugins/enqueue_entry_until1.30.go", "k8s1.30", ""},
		{"plugins/enqueue_entry_k8s1.30.go", "k8s1.30", "name it plugins/enqueue_entry_until1.30.go"},
		{"internal/fwcompat/statusreader_since1.31_until1.33.go", "k8s1.33", ""},
		{"internal/fwcompat/statusreader_k8s1.33.go", "k8s1.33", "name it internal/fwcompat/statusreader_since1.31_until1.33.go"},
		// Tests keep _test.go last.
		{"plugins/sign_since1.34_test.go", "!k8s1.33 && !k8s1.30", ""},
		{"plugins/sign_test.go", "!k8s1.33 && !k8s1.30", "name it plugins/sign_since1.34_test.go"},
		// A suffix that does not match the build line.
		{"x_until1.30.go", "k8s1.33", "name it x_since1.31_until1.33.go"},
		{"x_since1.31_until1.33.go", "k8s1.30", "name it x_until1.30.go"},
		// A suffix without a band's build line.
		{"x_until1.30.go", "", "needs //go:build k8s1.30"},
		{"x_since1.34_test.go", "linux", "needs //go:build !k8s1.33 && !k8s1.30"},
		// No band tag, no suffix.
		{"x.go", "", ""},
		{"x.go", "upstream", ""},
		// Other tags beside the bands'; the expression, not its spelling.
		{"x.go", "upstream && !k8s1.33 && !k8s1.30", "name it x_since1.34.go"},
		{"x_since1.34.go", "upstream && !k8s1.33 && !k8s1.30", ""},
		{"x_until1.33.go", "!(!k8s1.33 && !k8s1.30)", ""},
		// Every band: no suffix.
		{"x.go", "k8s1.30 || !k8s1.30", ""},
		{"x_since1.34.go", "k8s1.30 || !k8s1.30", "every band: name it x.go"},
		// Bands no suffix names.
		{"x.go", "!k8s1.33", "bands newest and k8s1.30, which no suffix names"},
		{"x.go", "k8s1.30 &&", "//go:build k8s1.30 &&:"},
	}
	for _, tt := range tests {
		got := checkBandName(tt.path, tt.build)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("checkBandName(%s, %q) = %q, want %q", tt.path, tt.build, got, tt.want)
		}
	}
}

// TestBandTags: bandTags are the build tags of kubeversion.Bands, and
// each suffix's build line builds the file for its bands.
func TestBandTags(t *testing.T) {
	if len(bandTags) != len(kubeversion.Bands) {
		t.Fatalf("bandTags %v, kubeversion.Bands %v", bandTags, kubeversion.Bands)
	}
	for i, b := range kubeversion.Bands[1:] {
		if want := fmt.Sprintf("k8s1.%d", b.Minor); bandTags[i+1] != want {
			t.Errorf("bandTags[%d] = %q, want %q", i+1, bandTags[i+1], want)
		}
	}
	for _, s := range bandSuffixes {
		expr, err := constraint.Parse("//go:build " + s.Build)
		if err != nil {
			t.Fatal(err)
		}
		if got := bandsOf(expr); got != s.Bands {
			t.Errorf("%s: //go:build %s builds for %s, want %s", s.Suffix, s.Build, got, s.Bands)
		}
	}
}
