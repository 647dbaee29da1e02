//go:build upstream

package upstream

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"

	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"

	"github.com/hami-scheduler/hami-scheduler/plugins"
	"github.com/hami-scheduler/hami-scheduler/plugins/coscheduling"
)

// registry is what hami-scheduler compiles into kube-scheduler.
func registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{plugins.Name: plugins.New, coscheduling.Name: coscheduling.New}
}

// BenchmarkUpstream runs each of upstream's topics (-topics) with each
// variant (-variants), in that order, then prints the figures side by
// side. Which workloads run is upstream's label filter
// (-perf-scheduling-label-filter: performance by default,
// integration-test for the integration cases) and -bench's pattern, e.g.
// 'BenchmarkUpstream/misc/.*/SchedulingBasic/5000Nodes_10000Pods$'.
func BenchmarkUpstream(b *testing.B) {
	dir := schedulerPerfDir(b)
	out := b.TempDir()
	for _, topic := range strings.Split(*topics, ",") {
		b.Run(topic, func(b *testing.B) {
			for _, v := range strings.Split(*variants, ",") {
				b.Run(v, func(b *testing.B) {
					cases, err := writeCases(filepath.Join(dir, topic), out, variant(v))
					if err != nil {
						b.Fatal(err)
					}
					perf.RunBenchmarkPerfScheduling(b, cases, topic+"-"+v, registry())
				})
			}
		})
	}
	printFigures(b)
}

// schedulerPerfDir is -upstream-dir, else scheduler_perf in the module
// go.mod pins.
func schedulerPerfDir(b *testing.B) string {
	if *upstreamDir != "" {
		return *upstreamDir
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		b.Fatalf("find k8s.io/kubernetes in the module cache (or pass -upstream-dir): %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "test", "integration", "scheduler_perf")
}

// figures are one workload's results in one variant.
type figures struct {
	podsPerSecond, attemptP99 float64
}

// printFigures reads the data items scheduler_perf wrote (-data-items-dir)
// and prints, per workload, pods/s (SchedulingThroughput's average) and
// the scheduling attempt's p99 of each variant, and HAMi's pods/s as a
// share of plain's.
func printFigures(b *testing.B) {
	dir := flagValue("data-items-dir")
	if dir == "" {
		b.Log("no -data-items-dir: no side-by-side table")
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "BenchmarkUpstream_*.json"))
	results := map[string]map[variant]figures{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var items perf.DataItems
		if err := json.Unmarshal(data, &items); err != nil {
			b.Fatalf("%s: %v", f, err)
		}
		for _, item := range items.DataItems {
			name, v := workloadOf(item.Labels["Name"])
			if results[name] == nil {
				results[name] = map[variant]figures{}
			}
			fig := results[name][v]
			switch {
			case item.Labels["Metric"] == "SchedulingThroughput":
				fig.podsPerSecond = item.Data["Average"]
			case item.Labels["Metric"] == "scheduler_scheduling_attempt_duration_seconds" && item.Labels["result"] == "scheduled":
				fig.attemptP99 = item.Data["Perc99"]
			default:
				continue
			}
			results[name][v] = fig
		}
	}
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "workload\tpods/s HAMi\tpods/s plain\tHAMi/plain\tattempt p99 HAMi (ms)\tattempt p99 plain (ms)\t")
	for _, n := range names {
		h, p := results[n][withHAMi], results[n][withoutHAMi]
		ratio := "-"
		if p.podsPerSecond > 0 && h.podsPerSecond > 0 {
			ratio = fmt.Sprintf("%.1f%%", 100*h.podsPerSecond/p.podsPerSecond)
		}
		fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t\n", n, h.podsPerSecond, p.podsPerSecond, ratio, h.attemptP99, p.attemptP99)
	}
	w.Flush()
	fmt.Print("\n" + sb.String())
}

// workloadOf splits a data item's name,
// BenchmarkUpstream/<topic>/<variant>/<case>/<workload>[/<namespace>], into
// <topic>/<case>/<workload> and the variant.
func workloadOf(name string) (string, variant) {
	parts := strings.Split(name, "/")
	if len(parts) < 5 {
		return name, ""
	}
	return strings.Join([]string{parts[1], parts[3], parts[4]}, "/"), variant(parts[2])
}
