package main

import (
	"fmt"
	"go/build/constraint"
	"path"
	"slices"
	"strings"
)

// bandTags are the build tags of the Kubernetes bands
// (internal/kubeversion.Bands), newest first: kube-scheduler 1.37 builds
// with neither tag.
var bandTags = []string{"", "k8s1.33", "k8s1.30"}

// bandSet says which bands a file is compiled for, one bit per bandTags
// entry.
type bandSet uint8

const (
	band137 bandSet = 1 << iota
	band133
	band130
	allBands = band137 | band133 | band130
)

// bandSuffix is the file name suffix, before .go or _test.go, of a file
// compiled for some bands only, and the build line that says so.
type bandSuffix struct {
	Bands  bandSet
	Suffix string
	Build  string
}

// bandSuffixes are the suffixes, the longest first so that a name is
// matched by its whole suffix: kube-scheduler minors the file is compiled
// against.
var bandSuffixes = []bandSuffix{
	{band133, "_since1.31_until1.33", "k8s1.33"},
	{band137, "_since1.34", "!k8s1.33 && !k8s1.30"},
	{band133 | band130, "_until1.33", "k8s1.33 || k8s1.30"},
	{band137 | band133, "_since1.31", "!k8s1.30"},
	{band130, "_until1.30", "k8s1.30"},
}

// legacySuffixes are the band suffixes used before bandSuffixes, dropped
// from the name make layout proposes.
var legacySuffixes = []string{"_old", "_k8s1.33", "_k8s1.30"}

// bandsOf is the set of bands for which expr holds. Tags other than the
// bands' may take any value: a band is in the set if some choice of them
// builds the file there.
func bandsOf(expr constraint.Expr) bandSet {
	var others []string
	collectTags(expr, func(tag string) {
		if !slices.Contains(bandTags, tag) && !slices.Contains(others, tag) {
			others = append(others, tag)
		}
	})
	var set bandSet
	for i, bandTag := range bandTags {
		for choice := 0; choice < 1<<len(others); choice++ {
			ok := expr.Eval(func(tag string) bool {
				if j := slices.Index(others, tag); j >= 0 {
					return choice&(1<<j) != 0
				}
				return tag != "" && tag == bandTag
			})
			if ok {
				set |= 1 << i
				break
			}
		}
	}
	return set
}

// collectTags calls f with each tag expr names.
func collectTags(expr constraint.Expr, f func(string)) {
	switch e := expr.(type) {
	case *constraint.TagExpr:
		f(e.Tag)
	case *constraint.NotExpr:
		collectTags(e.X, f)
	case *constraint.AndExpr:
		collectTags(e.X, f)
		collectTags(e.Y, f)
	case *constraint.OrExpr:
		collectTags(e.X, f)
		collectTags(e.Y, f)
	}
}

// mentionsBand says whether expr names a band's tag.
func mentionsBand(expr constraint.Expr) bool {
	found := false
	collectTags(expr, func(tag string) { found = found || (tag != "" && slices.Contains(bandTags, tag)) })
	return found
}

// checkBandName returns what is wrong with the name of the Go file name (a
// slash-separated path from the repository root) whose //go:build line is
// build ("" without one), or "" when nothing is: a file whose build line
// names a band's tag carries the suffix of the bands it is compiled for,
// and a file with a band suffix carries the build line of its bands.
func checkBandName(name, build string) string {
	dir, stem, ext := splitName(name)
	var named *bandSuffix
	for i := range bandSuffixes {
		if strings.HasSuffix(stem, bandSuffixes[i].Suffix) {
			named = &bandSuffixes[i]
			break
		}
	}
	var expr constraint.Expr
	if build != "" {
		var err error
		if expr, err = constraint.Parse("//go:build " + build); err != nil {
			return fmt.Sprintf("%s: //go:build %s: %v", name, build, err)
		}
	}
	if expr == nil || !mentionsBand(expr) {
		if named == nil {
			return ""
		}
		return fmt.Sprintf("%s: named for %s but has no band tag: it needs //go:build %s", name, named.Suffix, named.Build)
	}
	bands := bandsOf(expr)
	if named != nil && named.Bands == bands {
		return ""
	}
	base := stem
	if named != nil {
		base = strings.TrimSuffix(stem, named.Suffix)
	}
	for _, old := range legacySuffixes {
		base = strings.TrimSuffix(base, old)
	}
	switch want := wantedSuffix(bands); {
	case want != nil:
		return fmt.Sprintf("%s: //go:build %s builds it for %s: name it %s%s%s%s", name, build, bands, dir, base, want.Suffix, ext)
	case bands == allBands && named == nil:
		return ""
	case bands == allBands:
		return fmt.Sprintf("%s: //go:build %s builds it for every band: name it %s%s%s", name, build, dir, base, ext)
	default:
		return fmt.Sprintf("%s: //go:build %s builds it for %s, which no suffix names: split the file", name, build, bands)
	}
}

// splitName splits the Go file's path into its directory (with its
// trailing slash), its stem and its ending (.go or _test.go).
func splitName(p string) (dir, stem, ext string) {
	dir, file := path.Split(p)
	ext = ".go"
	if strings.HasSuffix(file, "_test.go") {
		ext = "_test.go"
	}
	return dir, strings.TrimSuffix(file, ext), ext
}

// wantedSuffix is the suffix of a file compiled for bands, or nil.
func wantedSuffix(bands bandSet) *bandSuffix {
	for i := range bandSuffixes {
		if bandSuffixes[i].Bands == bands {
			return &bandSuffixes[i]
		}
	}
	return nil
}

// String names the bands by their tags ("newest" for the newest, which
// has none).
func (s bandSet) String() string {
	var names []string
	for i, tag := range bandTags {
		if s&(1<<i) != 0 {
			if tag == "" {
				tag = "newest"
			}
			names = append(names, tag)
		}
	}
	switch len(names) {
	case 0:
		return "no band"
	case 1:
		return "band " + names[0]
	}
	return "bands " + strings.Join(names, " and ")
}
