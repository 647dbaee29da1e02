// Command render-manifests writes the kustomize tree manifests/ from the Helm
// chart manifests/charts/hami-scheduler (see hack/manifestgen). Run it
// from the repository root: make manifests.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
)

func main() {
	root := manifestgen.RepoRoot()
	files, err := manifestgen.KustomizeFiles(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(root, "manifests", name)
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("wrote", filepath.Join("manifests", name))
	}
}
