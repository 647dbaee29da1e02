// Command plots draws the end-to-end benchmark's figures files (JSON,
// test/util/benchfigures: what make bench-e2e writes, or a transcription
// of a published table) as SVG charts: for each DATA/NAME.json, the
// charts its figures support as OUT/NAME-KIND.svg. make plots runs it on
// docs/plots/data.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hami-scheduler/hami-scheduler/hack/plots/charts"
	"github.com/hami-scheduler/hami-scheduler/test/util/benchfigures"
)

func main() {
	data := flag.String("data", "docs/plots/data", "directory of figures files (*.json)")
	out := flag.String("out", "docs/plots", "directory to write the charts (*.svg) into")
	flag.Parse()
	written, err := render(*data, *out)
	for _, path := range written {
		fmt.Println(path)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plots:", err)
		os.Exit(1)
	}
}

// render draws every figures file of dataDir into outDir and returns the
// files it wrote.
func render(dataDir, outDir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dataDir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no figures file (*.json) in %s", dataDir)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, file := range files {
		paths, err := renderFile(file, outDir)
		written = append(written, paths...)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// renderFile writes the charts of one figures file.
func renderFile(file, outDir string) ([]string, error) {
	f, err := benchfigures.Read(file)
	if err != nil {
		return nil, err
	}
	drawn, err := charts.Charts(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(drawn) == 0 {
		return nil, fmt.Errorf("%s: no chart: the figures have one cluster size and one arrival rate per setting", file)
	}
	base := strings.TrimSuffix(filepath.Base(file), ".json")
	var written []string
	for _, c := range drawn {
		var buf bytes.Buffer
		if err := charts.WriteSVG(&buf, c); err != nil {
			return written, fmt.Errorf("%s: %s: %w", file, c.Name, err)
		}
		path := filepath.Join(outDir, base+"-"+c.Name+".svg")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}
