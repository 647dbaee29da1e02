// Package doclinks checks the relative links of the repository's Markdown
// files: that each names a file that exists and, with a #fragment, a
// heading of that file, as GitHub renders them.
package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Broken is a link whose target or heading is missing.
type Broken struct {
	// File is the Markdown file holding the link, Line its line (from 1).
	File string
	Line int
	// Target is the link as written.
	Target string
	// Reason says what is missing.
	Reason string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Reason)
}

var (
	linkPattern    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan       = regexp.MustCompile("`[^`]*`")
	headingPattern = regexp.MustCompile(`^#{1,6} +(.+?) *#* *$`)
)

// Check reads the Markdown file at path and returns its broken relative
// links. Links to other sites (a scheme) are not followed; links inside
// code (fenced blocks, code spans) are not links.
func Check(path string) ([]Broken, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var broken []Broken
	for i, line := range textLines(string(data)) {
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			if reason := checkTarget(path, m[1]); reason != "" {
				broken = append(broken, Broken{File: path, Line: i + 1, Target: m[1], Reason: reason})
			}
		}
	}
	return broken, nil
}

// textLines are the file's lines with those of fenced code blocks blanked.
func textLines(data string) []string {
	lines := strings.Split(data, "\n")
	fenced := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// checkTarget returns why the link target, written in the file at from,
// does not resolve, or "".
func checkTarget(from, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, fragment, _ := strings.Cut(target, "#")
	path := from
	if file != "" {
		path = filepath.Join(filepath.Dir(from), file)
		info, err := os.Stat(path)
		if err != nil {
			return "no such file"
		}
		if info.IsDir() || fragment == "" || !strings.HasSuffix(path, ".md") {
			return ""
		}
	}
	if fragment == "" {
		return ""
	}
	anchors, err := Anchors(path)
	if err != nil {
		return err.Error()
	}
	if !anchors[fragment] {
		return "no heading #" + fragment + " in " + path
	}
	return ""
}

// Anchors returns the fragments GitHub gives the headings of the Markdown
// file at path.
func Anchors(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range textLines(string(data)) {
		m := headingPattern.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors, nil
}

// Slug is GitHub's fragment for a heading: lower case, spaces as hyphens,
// every character but letters, digits, hyphens and underscores dropped.
func Slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
