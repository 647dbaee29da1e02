package perf

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// The settings the rules compare: binpack as shipped, and HAMi's order
// (binpack/q0: no queue bound).
var (
	shippedBinpack = Setting{Policy: devices.NodeBinpack}
	hamisOrder     = Setting{Policy: devices.NodeBinpack, SetQueueLimit: true}
)

// What binpack as shipped keeps to (docs/benchmarks/bursts.md): a
// burst on no more cards and nodes than HAMi's order uses plus
// packingMargin, Running within boundMargin of its busiest node's pods x
// that node's hand-over time, its slowest run within runsMargin of its
// median; steady arrivals at steadyGoalRate with p99 to Running within
// steadyP99, on no more nodes than packingMargin over what the rate needs
// (rate x hand-over time per pod).
const (
	packingMargin  = 1.10
	boundMargin    = 1.25
	runsMargin     = 1.20
	steadyGoalRate = 30
	steadyP99      = 5 * time.Second
	// fewestRuns is the fewest runs a spread of runs is judged on.
	fewestRuns = 3
)

// RuleCheck is one rule checked on a run's figures.
type RuleCheck struct {
	// Where names the cluster size and the phase.
	Where, Rule string
	// Measured and Bound are the figure and what the rule allows.
	Measured, Bound string
	Pass            bool
}

// Rules checks binpack as shipped against its rules, wherever the runs
// have the phases a rule needs: bursts (backlogs) against HAMi's order on
// the same cluster, their time against their own bound and their spread
// over runs, steady arrivals against their rate.
func Rules(runs []*Result) []RuleCheck {
	var out []RuleCheck
	for _, r := range runs {
		groups := r.Groups()
		if g, ok := findGroup(groups, shippedBinpack, Backlog); ok {
			hami, _ := findGroup(groups, hamisOrder, Backlog)
			out = append(out, burstRules(r, g, hami)...)
		}
		for _, g := range groups {
			if g.Setting == shippedBinpack && g.Arrival == Steady && g.Rate == steadyGoalRate {
				out = append(out, steadyRules(r, g)...)
			}
		}
	}
	return out
}

func burstRules(r *Result, g, hami Group) []RuleCheck {
	where := fmt.Sprintf("%s nodes x cards, a burst of %d, %s", r.size(), g.Phases[0].Pods, g.Setting)
	var out []RuleCheck
	if len(hami.Phases) > 0 {
		for _, f := range []struct {
			what string
			of   func(Phase) int
		}{{"cards", cardsUsed}, {"nodes", nodesUsed}} {
			// Typical run against typical run, and worst against worst:
			// HAMi's order varies from run to run too (the pods' order in
			// the queue).
			got, theirs := spreadOf(g, f.of), spreadOf(hami, f.of)
			median, most := packingMargin*float64(theirs.median), packingMargin*float64(theirs.most)
			out = append(out, RuleCheck{Where: where,
				Rule:     fmt.Sprintf("%s used <= HAMi's order's +%.0f%%, median and most", f.what, 100*(packingMargin-1)),
				Measured: fmt.Sprintf("median %d, most %d", got.median, got.most),
				Bound:    fmt.Sprintf("%.1f and %.1f (HAMi's order: median %d, most %d)", median, most, theirs.median, theirs.most),
				Pass:     float64(got.median) <= median && float64(got.most) <= most})
		}
	}
	worst, worstAt := 0.0, Phase{}
	for _, p := range g.Phases {
		if b := p.HandOverBound(); b > 0 {
			if ratio := ratioOf(p.Elapsed, b); ratio > worst {
				worst, worstAt = ratio, p
			}
		}
	}
	out = append(out, RuleCheck{Where: where,
		Rule:     fmt.Sprintf("time to all Running <= %.2f x busiest node's pods x its hand-over time, every run", boundMargin),
		Measured: fmt.Sprintf("worst %.2f x: %s against %d x %s", worst, elapsed(worstAt), worstAt.Packing.BusiestNode, worstAt.BusiestPerPod.Round(10*time.Millisecond)),
		Bound:    fmt.Sprintf("%.2f x", boundMargin),
		Pass:     worst > 0 && worst <= boundMargin})
	t := spreadOf(g, elapsed)
	check := RuleCheck{Where: where,
		Rule:     fmt.Sprintf("slowest run <= %.2f x median", runsMargin),
		Measured: fmt.Sprintf("%s / %s = %.2f", t.most, t.median, ratioOf(t.most, t.median)),
		Bound:    fmt.Sprintf("%.2f, over at least %d runs (-runs)", runsMargin, fewestRuns),
		Pass:     len(g.Phases) >= fewestRuns && ratioOf(t.most, t.median) <= runsMargin}
	return append(out, check)
}

func steadyRules(r *Result, g Group) []RuleCheck {
	where := fmt.Sprintf("%s nodes x cards, %g pods/s, %s", r.size(), g.Rate, g.Setting)
	p99, used, handOver := spreadOf(g, runP99), spreadOf(g, nodesUsed), spreadOf(g, perPod).median
	needed := math.Ceil(g.Rate * handOver.Seconds())
	allowed := packingMargin * needed
	return []RuleCheck{{Where: where, Rule: "p99 to Running <= " + steadyP99.String(),
		Measured: p99.most.String(), Bound: steadyP99.String(), Pass: p99.most <= steadyP99,
	}, {Where: where,
		Rule:     fmt.Sprintf("nodes used <= what the rate needs +%.0f%%", 100*(packingMargin-1)),
		Measured: fmt.Sprint(used.most),
		Bound:    fmt.Sprintf("%.1f (%g pods/s x %s)", allowed, g.Rate, handOver),
		Pass:     float64(used.most) <= allowed,
	}}
}

// PrintRules writes each check, PASS or FAIL, and reports whether all
// passed.
func PrintRules(w io.Writer, checks []RuleCheck) bool {
	if len(checks) == 0 {
		return true
	}
	fmt.Fprintln(w, "Binpack's rules (docs/benchmarks/bursts.md), on this run's own measured bounds:")
	all := true
	for _, c := range checks {
		verdict := "PASS"
		if !c.Pass {
			verdict, all = "FAIL", false
		}
		fmt.Fprintf(w, "  %s  %s: %s: %s (allowed: %s)\n", verdict, c.Where, c.Rule, c.Measured, c.Bound)
	}
	return all
}
