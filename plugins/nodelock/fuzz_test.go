package nodelock

import (
	"strings"
	"testing"
)

// FuzzParse checks that any lock value is read without a panic, and that a
// value Parse accepts names a holder only in the three-part form.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"2026-11-29T12:00:00Z,default,p", "2026-11-29T12:00:00Z", "", ",,", "x,y,z", "2026-11-29T12:00:00+08:00,a,b,c",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		_, ns, name, err := Parse(value)
		if err != nil {
			return
		}
		if strings.Count(value, ",") == 0 && (ns != "" || name != "") {
			t.Errorf("legacy value %q gave holder %s/%s", value, ns, name)
		}
	})
}
