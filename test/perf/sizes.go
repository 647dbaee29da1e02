package perf

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Size is one cluster size of a run: its nodes, and its cards per node
// (0: the run's -cards).
type Size struct {
	Nodes, Cards int
}

// ParseSizes reads the cluster sizes of a run: comma-separated node counts,
// each optionally with its cards per node ("20x4"), and pod counts, the
// pods either one count for every size or one per size.
func ParseSizes(nodes, pods string) (sizes []Size, podCounts []int, err error) {
	read := func(what, list string) ([]int, error) {
		var out []int
		for f := range strings.SplitSeq(list, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%s %q: want positive numbers separated by commas", what, list)
			}
			out = append(out, n)
		}
		return out, nil
	}
	for f := range strings.SplitSeq(nodes, ",") {
		count, cards, withCards := strings.Cut(strings.TrimSpace(f), "x")
		n, err := strconv.Atoi(count)
		c := 0
		if withCards {
			c, err = strconv.Atoi(cards)
			if err == nil && c <= 0 {
				err = fmt.Errorf("no cards")
			}
		}
		if err != nil || n <= 0 {
			return nil, nil, fmt.Errorf("nodes %q: want positive node counts, each optionally with its cards per node (200x8), separated by commas", nodes)
		}
		sizes = append(sizes, Size{Nodes: n, Cards: c})
	}
	if podCounts, err = read("pods", pods); err != nil {
		return nil, nil, err
	}
	switch len(podCounts) {
	case len(sizes):
	case 1:
		for len(podCounts) < len(sizes) {
			podCounts = append(podCounts, podCounts[0])
		}
	default:
		return nil, nil, fmt.Errorf("pods %q: want one count, or one per node count (%d)", pods, len(sizes))
	}
	return sizes, podCounts, nil
}

// ParseRates reads steady arrival rates in pods/s, separated by commas;
// 0 is the default rate (half the same setting's backlog pods/s).
func ParseRates(list string) ([]float64, error) {
	var rates []float64
	for f := range strings.SplitSeq(list, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r < 0 {
			return nil, fmt.Errorf("rate %q: want pods/s (0 or more) separated by commas", list)
		}
		rates = append(rates, r)
	}
	return rates, nil
}

// PrintSizes writes the runs of several cluster sizes side by side: one
// line per size and phase, the figures that change with the size.
func PrintSizes(w io.Writer, runs []*Result) {
	fmt.Fprintln(w, "By cluster size (each size a run of its own, one after the other):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes\tpods\tphase\tpods/s\twhile arriving\tp99 to Running\talgorithm/pod\tPreFilter/pod all / HAMi\tFilter/node all / HAMi\tScore/node all / HAMi\tsched. writes/pod\tCPU/pod sched. / cluster\tcards (lb)\tnodes (lb)\tsched. heap MiB\tfailed attempts\t")
	for _, r := range runs {
		for _, p := range r.Phases {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d (%d)\t%d (%d)\t%s\t%.0f\t\n",
				r.Nodes, p.Pods, p.Name(), p.PodsPerSecond(), served(p), p.RunP99.Round(10*time.Millisecond), p.AlgorithmPerPod().Round(10*time.Microsecond),
				perNode(p.PreFilter), perNode(p.Filter), perNode(p.Score), ratio(float64(p.Scheduler.total(true)), float64(p.Bound)), p.cpuPerPod(),
				p.Packing.Cards, p.Packing.MinCards, p.Packing.Nodes, p.Packing.MinNodes, mib(p.SchedulerHeap), p.Unschedulable+p.Errors)
		}
	}
	_ = tw.Flush()
}

func served(p Phase) string {
	if p.Arrival != Steady {
		return "-"
	}
	return strconv.FormatFloat(p.Served, 'f', 1, 64)
}
