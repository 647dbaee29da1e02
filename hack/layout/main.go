// Command layout checks the module's layout (make layout, part of make
// lint):
//   - shipped code (plugins/, devices/, webhook/, apis/, cardfit/,
//     scheduler/ and the binaries cmd/hami-scheduler, cmd/hami-webhook and
//     cmd/kubectl-hami) depends on no test code (test/, fixtures such as
//     devices/devicestest), tool code (hack/) or local-cluster code
//     (internal/localcluster);
//   - no binary of cmd/ (hami-local included) depends on test or tool
//     code, nor on Helm (only hack/ and the tests render the chart);
//   - a file built for some Kubernetes bands only (its //go:build line
//     names k8s1.33 or k8s1.30) has the suffix that says which
//     (bandSuffixes), and a file with such a suffix has that build line.
//
// It prints every violation and exits 1 if there is one. Run it from the
// module: go run ./hack/layout.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

func main() {
	problems, err := run()
	for _, p := range problems {
		fmt.Println(p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(2)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "layout: %d problem(s) above\n", len(problems))
		os.Exit(1)
	}
}

// run checks the module the working directory is in.
func run() ([]string, error) {
	out, err := goCmd("", "list", "-m", "-f", "{{.Path}}\n{{.Dir}}")
	if err != nil {
		return nil, err
	}
	module, root, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	var patterns []string
	for _, rule := range depRules {
		patterns = append(patterns, rule.Roots...)
	}
	listed, imports, err := listDeps(root, patterns)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, rule := range depRules {
		roots := slices.DeleteFunc(slices.Clone(listed), func(p string) bool {
			return !slices.ContainsFunc(rule.Roots, func(pattern string) bool { return matches(module, pattern, p) })
		})
		for _, v := range checkDeps(module, rule, roots, imports) {
			problems = append(problems, v.String(module))
		}
	}
	bandProblems, err := checkBandNames(root)
	return append(problems, bandProblems...), err
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(dir string, args ...string) ([]byte, error) {
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	cmd := exec.Command(goTool, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// listDeps lists the packages patterns match and every package they
// depend on with its direct imports, as built with no build tags (the
// newest band).
func listDeps(dir string, patterns []string) (matched []string, imports map[string][]string, err error) {
	out, err := goCmd(dir, append([]string{"list", "-deps", "-json=ImportPath,Imports,DepOnly"}, patterns...)...)
	if err != nil {
		return nil, nil, err
	}
	imports = map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			DepOnly    bool
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, err
		}
		imports[p.ImportPath] = p.Imports
		if !p.DepOnly {
			matched = append(matched, p.ImportPath)
		}
	}
	return matched, imports, nil
}

// generated is the comment that marks a generated Go file.
var generated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// checkBandNames checks the name of every non-generated Go file under
// root against its //go:build line (checkBandName). Directories named
// testdata, or starting with "." or "_", and bin/ are skipped.
func checkBandNames(root string) ([]string, error) {
	var problems []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "bin" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		build, gen, err := readHeader(path)
		if err != nil || gen {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if p := checkBandName(filepath.ToSlash(rel), build); p != "" {
			problems = append(problems, p)
		}
		return nil
	})
	slices.Sort(problems)
	return problems, err
}

// readHeader reads the Go file's lines before its package clause: its
// //go:build expression ("" without one) and whether it is generated.
func readHeader(path string) (build string, gen bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "package ") {
			break
		}
		if expr, ok := strings.CutPrefix(line, "//go:build "); ok {
			build = strings.TrimSpace(expr)
		}
		gen = gen || generated.MatchString(line)
	}
	return build, gen, sc.Err()
}
