package perf

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// serviceTimes are, per node, its times per pod while pods queued on it:
// from one release of the node's lock to the next, when the pod served in
// between had been handed over (handed) before the first release. Each
// hand-over names the node's last release before its pod's Allocate, so
// consecutive hand-overs of a node hold consecutive releases.
func serviceTimes(all []simnode.HandOver, namespace string, handed map[string]time.Time) map[string][]time.Duration {
	byNode := map[string][]simnode.HandOver{}
	for _, h := range all {
		if h.Namespace == namespace {
			byNode[h.Node] = append(byNode[h.Node], h)
		}
	}
	out := map[string][]time.Duration{}
	for node, hs := range byNode {
		slices.SortFunc(hs, func(a, b simnode.HandOver) int { return a.AllocateStarted.Compare(b.AllocateStarted) })
		for i := 0; i+1 < len(hs); i++ {
			cur, next := hs[i], hs[i+1]
			at, ok := handed[cur.Name]
			if cur.Released.IsZero() || !next.Released.After(cur.Released) || !ok || !at.Before(cur.Released) {
				continue
			}
			out[node] = append(out[node], next.Released.Sub(cur.Released))
		}
	}
	return out
}

// perPodTimes are the median of every node's service times and the
// busiest node's own median (the first when that node measured fewer
// than 3).
func perPodTimes(byNode map[string][]time.Duration, busiest string) (all, onBusiest time.Duration) {
	var every []time.Duration
	for _, ds := range byNode {
		every = append(every, ds...)
	}
	all = quantile(every, 0.5)
	if own := byNode[busiest]; len(own) >= 3 {
		return all, quantile(own, 0.5)
	}
	return all, all
}

// HandOverBound is the time the phase's packing takes at the least: its
// busiest node's pods, one per hand-over, at that node's measured time
// per pod (0 when none was measured).
func (p Phase) HandOverBound() time.Duration {
	return time.Duration(p.Packing.BusiestNode) * p.BusiestPerPod
}

// Group is the repeats of one HAMi phase on one cluster size.
type Group struct {
	Nodes   int
	Setting Setting
	Arrival Arrival
	Rate    float64
	Phases  []Phase
}

// Name names the group in tables: the phase's name without its run.
func (g Group) Name() string {
	ph := g.Phases[0]
	ph.Run = 0
	return ph.Name()
}

// Groups gathers the HAMi phases of a run by setting, arrival and rate,
// in the order they ran.
func (r *Result) Groups() []Group {
	var groups []Group
	for _, p := range r.Phases[1:] {
		i := slices.IndexFunc(groups, func(g Group) bool {
			return g.Setting == p.Setting && g.Arrival == p.Arrival && g.Rate == p.Rate
		})
		if i < 0 {
			groups = append(groups, Group{Nodes: r.Nodes, Setting: p.Setting, Arrival: p.Arrival, Rate: p.Rate})
			i = len(groups) - 1
		}
		groups[i].Phases = append(groups[i].Phases, p)
	}
	return groups
}

// Find returns the group of a setting and arrival (the first rate).
func findGroup(groups []Group, setting Setting, arrival Arrival) (Group, bool) {
	i := slices.IndexFunc(groups, func(g Group) bool { return g.Setting == setting && g.Arrival == arrival })
	if i < 0 {
		return Group{}, false
	}
	return groups[i], true
}

// spread is the median and the extremes of a figure over a group's runs.
type spread[T cmp.Ordered] struct {
	median, least, most T
}

func spreadOf[T cmp.Ordered](g Group, f func(Phase) T) spread[T] {
	var vs []T
	for _, p := range g.Phases {
		vs = append(vs, f(p))
	}
	slices.Sort(vs)
	return spread[T]{median: vs[(len(vs)-1)/2], least: vs[0], most: vs[len(vs)-1]}
}

func (s spread[T]) String() string {
	if s.least == s.most {
		return fmt.Sprint(s.median)
	}
	return fmt.Sprintf("%v (%v-%v)", s.median, s.least, s.most)
}

func elapsed(p Phase) time.Duration { return p.Elapsed.Round(100 * time.Millisecond) }
func cardsUsed(p Phase) int         { return p.Packing.Cards }
func nodesUsed(p Phase) int         { return p.Packing.Nodes }
func freeNodes(p Phase) int         { return p.Packing.FreeNodes }
func busiestPods(p Phase) int       { return p.Packing.BusiestNode }
func perPod(p Phase) time.Duration  { return p.HandOverPerPod.Round(10 * time.Millisecond) }
func bound(p Phase) time.Duration   { return p.HandOverBound().Round(100 * time.Millisecond) }
func runP99(p Phase) time.Duration  { return p.RunP99.Round(10 * time.Millisecond) }

// PrintRepeats writes, per cluster size, each setting's runs side by
// side: time to all Running (median and slowest), nodes and cards used,
// whole nodes left free, the busiest node's pods and the bound they make
// (median, with the least and the most in brackets when they differ).
func PrintRepeats(w io.Writer, runs []*Result) {
	fmt.Fprintln(w, "Per setting, over its runs (median, least-most):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes x cards\tpods\tphase\truns\ttime to all Running\tslowest / median\tp99 to Running\tnodes used\tcards used\twhole nodes free\tbusiest node's pods\thand-over per pod\tbound: busiest x its hand-over\t")
	for _, r := range runs {
		for _, g := range r.Groups() {
			t := spreadOf(g, elapsed)
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s / %s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
				r.size(), g.Phases[0].Pods, g.Name(), len(g.Phases), t.median, t.most, ratioOf(t.most, t.median), spreadOf(g, runP99),
				spreadOf(g, nodesUsed), spreadOf(g, cardsUsed), spreadOf(g, freeNodes), spreadOf(g, busiestPods), spreadOf(g, perPod), spreadOf(g, bound))
		}
	}
	_ = tw.Flush()
}

// size is "20 x 4": the run's nodes and cards per node.
func (r *Result) size() string {
	if r.Cards == 0 {
		return fmt.Sprint(r.Nodes)
	}
	return fmt.Sprintf("%d x %d", r.Nodes, r.Cards)
}

func ratioOf(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}
