package doclinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository, relative to this package.
const repoRoot = "../.."

// pending are pages that README.md and docs/ link to and that other
// branches of the same change add; a link to one is not reported while it
// is missing. Drop an entry once its page is in the tree.
var pending = map[string]bool{}

// TestRepositoryLinks: every relative link of every Markdown file of the
// repository names a file that exists and, with a fragment, one of its
// headings.
func TestRepositoryLinks(t *testing.T) {
	files := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		files++
		broken, err := Check(path)
		if err != nil {
			return err
		}
		for _, b := range broken {
			if isPending(b) {
				t.Logf("%s (pending: added by another branch)", b)
				continue
			}
			t.Error(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("checked %d Markdown files; the walk missed the repository", files)
	}
}

func isPending(b Broken) bool {
	if b.Reason != "no such file" {
		return false
	}
	file, _, _ := strings.Cut(b.Target, "#")
	rel, err := filepath.Rel(repoRoot, filepath.Join(filepath.Dir(b.File), file))
	if err != nil || !pending[filepath.ToSlash(rel)] {
		return false
	}
	_, err = os.Stat(filepath.Join(repoRoot, rel))
	return err != nil
}

func TestSlug(t *testing.T) {
	for _, tt := range []struct{ title, want string }{
		{"Kubernetes versions", "kubernetes-versions"},
		{"kube-scheduler's own suite (scheduler_perf)", "kube-schedulers-own-suite-scheduler_perf"},
		{"Figures of 2026-12-02 (evening): the shipped binary as its own process, 200 / 1,000 / 2,000 nodes",
			"figures-of-2026-12-02-evening-the-shipped-binary-as-its-own-process-200--1000--2000-nodes"},
		{"The local cluster: `make run`", "the-local-cluster-make-run"},
		{"Opportunistic batching (1.35 and later)", "opportunistic-batching-135-and-later"},
	} {
		if got := Slug(tt.title); got != tt.want {
			t.Errorf("Slug(%q) = %q, want %q", tt.title, got, tt.want)
		}
	}
}

// TestCheck: a broken file, a broken heading and a link in code are told
// apart from good links.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("other.md", "# Other\n\n## A heading\n\n## A heading\n")
	path := write("page.md", "# Page\n\n[ok](other.md#a-heading) [dup](other.md#a-heading-1) [self](#page) [web](https://example.com/x#y)\n"+
		"[gone](missing.md) [bad](other.md#nothing) `[code](missing.md)`\n```\n[fenced](missing.md)\n```\n[self gone](#nowhere)\n")
	broken, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.Target)
	}
	want := []string{"missing.md", "other.md#nothing", "#nowhere"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("broken links %q, want %q", got, want)
	}
}
