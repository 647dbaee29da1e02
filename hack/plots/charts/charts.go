// Package charts draws the end-to-end benchmark's figures
// (test/util/benchfigures) as SVG line charts: pods/s to Running against
// the cluster's nodes, p99 to Running against the arrival rate, and p99
// against the nodes at a fixed rate. make plots (hack/plots) writes them
// into docs/plots.
package charts

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/hami-scheduler/hami-scheduler/test/util/benchfigures"
)

// Chart is one plot of a figures file.
type Chart struct {
	// Name is the chart's kind, the suffix of its file name.
	Name string
	Plot *plot.Plot
}

// Chart kinds.
const (
	ThroughputByNodes = "pods-per-second-by-nodes"
	P99ByRate         = "p99-by-arrival-rate"
	P99ByNodes        = "p99-by-nodes"
)

// Axis labels.
const (
	nodesLabel      = "nodes"
	podsPerSecLabel = "pods/s to Running"
	rateLabel       = "arrival rate (pods/s)"
	p99Label        = "p99 time to Running (s, log scale)"
)

// Charts are the charts the file's figures support: pods/s against nodes
// when HAMi's backlogs ran on two sizes or more, p99 against the rate when a
// setting ran steady arrivals at two rates or more on one size, and p99
// against nodes when it ran one rate on two sizes or more.
func Charts(f *benchfigures.File) ([]Chart, error) {
	var charts []Chart
	for _, c := range []struct {
		name     string
		title    string
		x, y     string
		logY     bool
		selected func(benchfigures.Phase) bool
		series   func(p benchfigures.Phase) string
		point    func(p benchfigures.Phase) plotter.XY
	}{
		{ThroughputByNodes, "HAMi backlogs: pods/s to Running against the cluster's size", nodesLabel, podsPerSecLabel, false,
			isHAMiBacklog, settingLabel, func(p benchfigures.Phase) plotter.XY { return plotter.XY{X: float64(p.Nodes), Y: p.PodsPerSecond} }},
		{P99ByRate, "steady arrivals: p99 time to Running against the arrival rate", rateLabel, p99Label, true,
			isSteady, func(p benchfigures.Phase) string { return fmt.Sprintf("%s, %d nodes", settingLabel(p), p.Nodes) },
			func(p benchfigures.Phase) plotter.XY { return plotter.XY{X: p.Rate, Y: p.RunP99Seconds} }},
		{P99ByNodes, "steady arrivals: p99 time to Running against the cluster's size", nodesLabel, p99Label, true,
			isSteady, func(p benchfigures.Phase) string { return fmt.Sprintf("%s at %g pods/s", settingLabel(p), p.Rate) },
			func(p benchfigures.Phase) plotter.XY { return plotter.XY{X: float64(p.Nodes), Y: p.RunP99Seconds} }},
	} {
		series := collect(f.Phases, c.selected, c.series, c.point, c.logY)
		if !anyCurve(series) {
			continue
		}
		p, err := lineChart(f.Title+"\n"+c.title, c.x, c.y, c.logY, series)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		charts = append(charts, Chart{Name: c.name, Plot: p})
	}
	return charts, nil
}

// isHAMiBacklog leaves out the baseline, whole-card pods without HAMi's
// device plugin round, several times faster: on the same axis it would
// flatten HAMi's lines.
func isHAMiBacklog(p benchfigures.Phase) bool {
	return p.Arrival == benchfigures.Backlog && p.Setting != ""
}
func isSteady(p benchfigures.Phase) bool { return p.Arrival == benchfigures.Steady }

// settingLabel names a phase's setting in a legend.
func settingLabel(p benchfigures.Phase) string {
	switch p.Setting {
	case "":
		return "baseline: whole cards, default profile"
	case "binpack/q0", "spread/q0":
		return p.Setting + " (HAMi's order)"
	}
	return p.Setting
}

// series is a named line, its points in the order of X.
type series struct {
	label  string
	points plotter.XYs
}

// collect groups the selected phases' points by series, in the order the
// series first appear; a log scale leaves out points at 0.
func collect(phases []benchfigures.Phase, selected func(benchfigures.Phase) bool, label func(benchfigures.Phase) string,
	point func(benchfigures.Phase) plotter.XY, logY bool) []series {
	var out []series
	index := map[string]int{}
	for _, p := range phases {
		if !selected(p) {
			continue
		}
		xy := point(p)
		if logY && xy.Y <= 0 {
			continue
		}
		name := label(p)
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, series{label: name})
		}
		out[i].points = append(out[i].points, xy)
	}
	for _, s := range out {
		slices.SortStableFunc(s.points, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	}
	return out
}

// anyCurve reports whether a series has two distinct X values.
func anyCurve(all []series) bool {
	for _, s := range all {
		if len(s.points) > 1 && s.points[0].X != s.points[len(s.points)-1].X {
			return true
		}
	}
	return false
}

// lineChart draws each series as a line with its points marked, a tick
// at each X of the data, and room above the data for the legend.
func lineChart(title, x, y string, logY bool, all []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Legend.YOffs = -vg.Points(4)
	p.X.Tick.Marker = xTicks(all)
	p.Add(plotter.NewGrid())
	for i, s := range all {
		line, points, err := plotter.NewLinePoints(s.points)
		if err != nil {
			return nil, fmt.Errorf("series %s: %w", s.label, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(s.label, line, points)
	}
	// The data's range, then the legend's room at the top (a share of
	// the height per line) and a margin on either side.
	legend := 0.08 * float64(len(all)+1)
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min /= 2
		p.Y.Max = p.Y.Min * math.Pow(p.Y.Max/p.Y.Min, 1/(1-legend))
	} else {
		p.Y.Min, p.Y.Max = 0, p.Y.Max/(1-legend)
	}
	margin := 0.04 * (p.X.Max - p.X.Min)
	p.X.Min, p.X.Max = p.X.Min-margin, p.X.Max+margin
	return p, nil
}

// xTicks marks each X value of the series.
func xTicks(all []series) plot.ConstantTicks {
	var xs []float64
	for _, s := range all {
		for _, pt := range s.points {
			xs = append(xs, pt.X)
		}
	}
	slices.Sort(xs)
	var ticks plot.ConstantTicks
	for _, x := range slices.Compact(xs) {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
	}
	return ticks
}

// Size of the charts.
const (
	width  = 8 * vg.Inch
	height = 5 * vg.Inch
)

// WriteSVG renders the chart as SVG.
func WriteSVG(w io.Writer, c Chart) error {
	canvas, err := c.Plot.WriterTo(width, height, "svg")
	if err != nil {
		return err
	}
	_, err = canvas.WriteTo(w)
	return err
}
