package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hami-scheduler/hami-scheduler/hack/plots/charts"
	"github.com/hami-scheduler/hami-scheduler/test/util/benchfigures"
)

// The committed figures and charts, relative to this package.
const (
	dataDir   = "../../docs/plots/data"
	chartsDir = "../../docs/plots"
	// repoRoot is where a figures file's source names its Markdown from.
	repoRoot = "../.."
)

// TestCommittedChartsAreCurrent: docs/plots holds exactly the charts make
// plots draws from docs/plots/data, byte for byte.
func TestCommittedChartsAreCurrent(t *testing.T) {
	out := t.TempDir()
	written, err := render(dataDir, out)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, path := range written {
		name := filepath.Base(path)
		want = append(want, name)
		fresh, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join(chartsDir, name))
		if err != nil {
			t.Errorf("%s: not committed (run make plots): %v", name, err)
			continue
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("docs/plots/%s is stale: run make plots", name)
		}
	}
	committed, err := filepath.Glob(filepath.Join(chartsDir, "*.svg"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, path := range committed {
		got = append(got, filepath.Base(path))
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("charts in docs/plots (-drawn from the data +committed):\n%s", diff)
	}
}

// TestCommittedChartsRender: each committed chart is an SVG document with
// its title, both axes' labels and a legend entry for each setting of
// its figures.
func TestCommittedChartsRender(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(dataDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no figures in %s: %v", dataDir, err)
	}
	for _, file := range files {
		f, err := benchfigures.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		drawn, err := charts.Charts(f)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(file), ".json")
		for _, c := range drawn {
			path := filepath.Join(chartsDir, base+"-"+c.Name+".svg")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := charts.Inspect(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			texts := []string{f.Title, c.Plot.X.Label.Text, c.Plot.Y.Label.Text}
			for _, p := range f.Phases {
				if p.Setting != "" {
					texts = append(texts, p.Setting)
				}
			}
			for _, s := range texts {
				if !got.HasText(s) {
					t.Errorf("%s: no text %q", path, s)
				}
			}
		}
	}
}

// TestTranscribedFigures: a figures file transcribed from a table of a
// dated run under docs/benchmarks/ (its source names the page and the
// table's heading) holds that table's figures, row for row.
func TestTranscribedFigures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(dataDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`^transcribed from (docs/[^,]+\.md), the table of "([^"]+)"`)
	transcribed := 0
	for _, file := range files {
		f, err := benchfigures.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		m := heading.FindStringSubmatch(f.Source)
		if m == nil {
			continue
		}
		transcribed++
		doc, err := os.ReadFile(filepath.Join(repoRoot, m[1]))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		rows, err := tableRows(string(doc), m[2])
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(rows) != len(f.Phases) {
			t.Fatalf("%s: %d phases, the table has %d rows", file, len(f.Phases), len(rows))
		}
		for i, row := range rows {
			if diff := cmp.Diff(rowFigures(t, row), transcribedFigures(f.Phases[i])); diff != "" {
				t.Errorf("%s: phase %d differs from the table's row (-table +file):\n%s", file, i, diff)
			}
		}
	}
	if transcribed == 0 {
		t.Skip("no transcribed figures in docs/plots/data")
	}
}

// tableRow is a row of figures: its first cell is a number.
var tableRow = regexp.MustCompile(`^\| \d`)

// tableRows are the rows of the table under heading, of any level (the
// cells of each row that starts with a number).
func tableRows(doc, heading string) ([][]string, error) {
	at := regexp.MustCompile(`(?m)^#{1,6} ` + regexp.QuoteMeta(heading) + `\n`).FindStringIndex(doc)
	if at == nil {
		return nil, os.ErrNotExist
	}
	section, _, _ := strings.Cut(doc[at[1]:], "\n#")
	var rows [][]string
	for line := range strings.SplitSeq(section, "\n") {
		if !tableRow.MatchString(line) {
			continue
		}
		var cells []string
		for c := range strings.SplitSeq(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return rows, nil
}

// figures are what a row of the scale table and a phase share: nodes,
// pods, phase, pods/s, while arriving, p99 to Running, cards, nodes used.
type figures struct {
	Nodes, Pods             int
	Name                    string
	PodsPerSecond, WhileArr float64
	P99                     time.Duration
	CardsUsed, NodesUsed    int
}

func rowFigures(t *testing.T, cells []string) figures {
	t.Helper()
	number := func(i int) float64 {
		s, _, _ := strings.Cut(cells[i], " ")
		if s == "-" {
			return 0
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("cell %d %q: %v", i, cells[i], err)
		}
		return v
	}
	p99, err := time.ParseDuration(cells[5])
	if err != nil {
		t.Fatal(err)
	}
	return figures{Nodes: int(number(0)), Pods: int(number(1)), Name: cells[2], PodsPerSecond: number(3), WhileArr: number(4),
		P99: p99, CardsUsed: int(number(12)), NodesUsed: int(number(13))}
}

func transcribedFigures(p benchfigures.Phase) figures {
	return figures{Nodes: p.Nodes, Pods: p.Pods, Name: p.Name, PodsPerSecond: p.PodsPerSecond, WhileArr: p.WhileArriving,
		P99: time.Duration(p.RunP99Seconds * float64(time.Second)).Round(time.Millisecond), CardsUsed: p.CardsUsed, NodesUsed: p.NodesUsed}
}
