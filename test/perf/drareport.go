package perf

import (
	"fmt"
	"io"
	"time"
)

// printDRA writes the run's comparisons of the node kinds and routes:
// each phase on DRA nodes against the same phase on device-plugin nodes
// alone (docs/benchmarks/dra.md's goal: pods/s within 10%), and each phase
// taking HAMi-DRA's route against this scheduler's on the same nodes
// (pods/s, and the cards and nodes the same pods take).
func printDRA(w io.Writer, r *Result) {
	for _, p := range r.Phases {
		if p.IsBaseline() || p.Setting.DRAPercent == 0 {
			continue
		}
		ref := p.Setting
		if p.Setting.HAMiDRA {
			ref.HAMiDRA = false
		} else {
			ref.DRAPercent = 0
		}
		q, ok := r.counterpart(p, ref)
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%s against %s: pods/s %.1f / %.1f (ratio %s); p99 to Running %s / %s; cards used %d / %d; nodes used %d / %d; whole nodes left free %d / %d\n",
			p.Name(), q.Name(), p.PodsPerSecond(), q.PodsPerSecond(), ratio(p.PodsPerSecond(), q.PodsPerSecond()),
			p.RunP99.Round(10*time.Millisecond), q.RunP99.Round(10*time.Millisecond), p.Packing.Cards, q.Packing.Cards, p.Packing.Nodes, q.Packing.Nodes,
			p.Packing.FreeNodes, q.Packing.FreeNodes)
	}
}

// counterpart is the phase of the setting that matches p in everything
// else: arrival, rate and run.
func (r *Result) counterpart(p Phase, setting Setting) (Phase, bool) {
	for _, q := range r.Phases {
		if !q.IsBaseline() && q.Setting == setting && q.Arrival == p.Arrival && q.Rate == p.Rate && q.Run == p.Run {
			return q, true
		}
	}
	return Phase{}, false
}
