package main

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// kind names a class of packages a rule keeps out of its roots'
// dependencies.
type kind string

const (
	testCode     kind = "test code"
	toolCode     kind = "tool code (hack/)"
	localCluster kind = "local-cluster code"
	helm         kind = "Helm"
)

// depRule is one direction the module's imports must keep: no root may
// depend, directly or through other packages, on a package of a
// forbidden kind.
type depRule struct {
	// Name says which code the rule guards.
	Name string
	// Roots are the rule's package patterns, as go list takes them: ./dir
	// or ./dir/... .
	Roots []string
	// Forbidden are the kinds of package the roots must not depend on.
	Forbidden []kind
}

// depRules are the directions make layout enforces.
var depRules = []depRule{{
	Name: "shipped code",
	Roots: []string{"./plugins/...", "./devices/...", "./webhook/...", "./apis/...", "./cardfit/...", "./scheduler/...",
		"./cmd/hami-scheduler", "./cmd/hami-webhook", "./cmd/kubectl-hami"},
	Forbidden: []kind{testCode, toolCode, localCluster},
}, {
	Name:      "binaries",
	Roots:     []string{"./cmd/..."},
	Forbidden: []kind{testCode, toolCode, helm},
}}

// kindOf is the kind of the package pkg of module, or "" when no
// rule cares about it. Test code is test/ and any package of the module
// whose name ends in "test" (fixtures such as devices/devicestest).
func kindOf(module, pkg string) kind {
	rel, inModule := strings.CutPrefix(pkg, module+"/")
	switch {
	case inModule && (under(rel, "test") || strings.HasSuffix(path.Base(rel), "test")):
		return testCode
	case inModule && under(rel, "hack"):
		return toolCode
	case inModule && under(rel, "internal/localcluster"):
		return localCluster
	case under(pkg, "helm.sh"):
		return helm
	}
	return ""
}

// under says whether p is dir or below it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// matches says whether the package pkg of module is one the go list
// pattern (./dir or ./dir/...) names.
func matches(module, pattern, pkg string) bool {
	rel := strings.TrimPrefix(pattern, "./")
	if rel == "..." {
		return under(pkg, module)
	}
	if dir, ok := strings.CutSuffix(rel, "/..."); ok {
		return under(pkg, module+"/"+dir)
	}
	return pkg == module+"/"+rel
}

// depViolation is an import that breaks a rule: Importer imports
// Imported, of a forbidden Kind, and Root reaches Importer through Path.
type depViolation struct {
	Rule     string
	Importer string
	Imported string
	Kind     kind
	// Root is the root nearest Importer (the first in import path order
	// of those as near); Path runs from it to Importer; Roots counts
	// every root that reaches the import.
	Root  string
	Path  []string
	Roots int
}

func (v depViolation) String(module string) string {
	short := func(p string) string { return strings.TrimPrefix(p, module+"/") }
	chain := make([]string, len(v.Path))
	for i, p := range v.Path {
		chain[i] = short(p)
	}
	others := ""
	switch {
	case v.Roots == 2:
		others = " (and 1 other root)"
	case v.Roots > 2:
		others = fmt.Sprintf(" (and %d other roots)", v.Roots-1)
	}
	return fmt.Sprintf("%s: %s imports %s (%s), reached from %s%s: %s",
		v.Rule, short(v.Importer), short(v.Imported), v.Kind, short(v.Root), others, strings.Join(chain, " -> "))
}

// checkDeps returns the imports that break rule in module, given the
// packages the go list command matched for the rule's patterns (roots)
// and every package's direct imports. A root that is itself of a
// forbidden kind (devices/devicestest under ./devices/...) is not
// checked. Packages of a forbidden kind are not followed further: the
// import to fix is the first one into them.
func checkDeps(module string, rule depRule, roots []string, imports map[string][]string) []depViolation {
	forbidden := func(p string) kind {
		if k := kindOf(module, p); slices.Contains(rule.Forbidden, k) {
			return k
		}
		return ""
	}
	found := map[[2]string]*depViolation{}
	var order [][2]string
	sorted := slices.Sorted(slices.Values(roots))
	for _, root := range sorted {
		if forbidden(root) != "" {
			continue
		}
		for _, e := range forbiddenEdges(root, imports, forbidden) {
			key := [2]string{e.from, e.to}
			if v, ok := found[key]; ok {
				v.Roots++
				if len(e.path) < len(v.Path) {
					v.Root, v.Path = root, e.path
				}
				continue
			}
			found[key] = &depViolation{Rule: rule.Name, Importer: e.from, Imported: e.to, Kind: forbidden(e.to),
				Root: root, Path: e.path, Roots: 1}
			order = append(order, key)
		}
	}
	var out []depViolation
	for _, key := range order {
		out = append(out, *found[key])
	}
	return out
}

// edge is an import from a package root reaches (through path, root
// first) into a forbidden package.
type edge struct {
	from, to string
	path     []string
}

// forbiddenEdges walks root's imports breadth first, so that each path
// is a shortest one, and returns every import into a forbidden package.
func forbiddenEdges(root string, imports map[string][]string, forbidden func(string) kind) []edge {
	parent := map[string]string{root: ""}
	queue := []string{root}
	var edges []edge
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range imports[p] {
			if forbidden(q) != "" {
				edges = append(edges, edge{from: p, to: q, path: pathTo(p, parent)})
				continue
			}
			if _, seen := parent[q]; !seen {
				parent[q] = p
				queue = append(queue, q)
			}
		}
	}
	return edges
}

// pathTo is the import path from the walk's root to p.
func pathTo(p string, parent map[string]string) []string {
	var chain []string
	for ; p != ""; p = parent[p] {
		chain = append(chain, p)
	}
	slices.Reverse(chain)
	return chain
}
