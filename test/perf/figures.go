package perf

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hami-scheduler/hami-scheduler/test/util/benchfigures"
)

// Figures is the runs' figures in the form make plots draws
// (test/util/benchfigures): one phase per phase of each run.
func Figures(runs []*Result, title, command, date string) *benchfigures.File {
	f := &benchfigures.File{
		Title:   title,
		Source:  "written by test/perf BenchmarkThroughput at the end of the run",
		Command: command,
		Date:    date,
	}
	for _, r := range runs {
		if f.NodeSide == "" {
			f.NodeSide = r.NodeSide
		}
		for _, p := range r.Phases {
			f.Phases = append(f.Phases, phaseFigures(r.Nodes, p))
		}
	}
	return f
}

func phaseFigures(nodes int, p Phase) benchfigures.Phase {
	out := benchfigures.Phase{
		Nodes:         nodes,
		Pods:          p.Pods,
		Name:          p.Name(),
		Arrival:       string(p.Arrival),
		PodsPerSecond: p.PodsPerSecond(),
		RunP50Seconds: p.RunP50.Seconds(),
		RunP99Seconds: p.RunP99.Seconds(),
		CardsUsed:     p.Packing.Cards,
		NodesUsed:     p.Packing.Nodes,
	}
	if !p.IsBaseline() {
		out.Setting = p.Setting.String()
	}
	if p.Arrival == Steady {
		out.Rate, out.WhileArriving = p.Rate, p.Served
	}
	return out
}

// WriteFigures writes the figures as JSON to path, creating its directory.
func WriteFigures(path string, f *benchfigures.File) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if err := benchfigures.Write(out, f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
