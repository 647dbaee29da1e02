package main

import (
	"strings"
	"testing"
)

// TestCardFitFlagsInHelp: the admission check's flags are listed in
// --help, below the other HAMi flags.
func TestCardFitFlagsInHelp(t *testing.T) {
	cmd := newCommand()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	hami := strings.Index(help, "HAMi flags:")
	for _, f := range []string{cardFitFlag, cardFitPromiseFlag, cardFitRetryFlag} {
		if i := strings.Index(help, "--"+f+" "); i < 0 || hami < 0 || i < hami {
			t.Errorf("--help does not list --%s under HAMi flags", f)
		}
	}
}
